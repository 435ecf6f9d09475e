package fleetsim

import (
	"context"
	"github.com/kcltool/kcltool/internal/clock"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/leasecore"
)

// kcl2Worker is a port of KCL 2.x's lease schedule and rules at their
// defaults (amazon-kinesis-client v2.7.3; docs/kcl-compat.md, Timings and
// defaults, and Taking and stealing), written from the facts, not from the
// Java code:
//
//   - DynamoDBLeaseCoordinator: the renewer at a fixed rate of
//     failover/3 - epsilon (3,308 ms), starting at once; the taker with a
//     fixed delay of 2 × (failover + epsilon) (20,050 ms) between the end of
//     one run and the start of the next, starting at once.
//   - DynamoDBLeaseRenewer: at start it lists the table and renews the
//     leases it owns even if expired; each round renews every held lease
//     (UpdateItem conditional on the counter), two tries on throttling and no
//     wait between them; a lease not renewed within the failover time is
//     dropped; a condition failure is followed by a GetItem (eventually
//     consistent, KCL's consistentReads default false) to recognise its own
//     write.
//   - DynamoDBLeaseTaker: one scan per run (SCAN_RETRIES 1: a throttled
//     scan ends the run); counters seen changed are "renewed at scan time",
//     leases expire failover after that on the scanner's clock; target,
//     very old leases first, available leases up to the need, otherwise one
//     steal from the most loaded worker (maxLeasesToStealAtOneTime 1); each
//     take tried up to three times on throttling, one after the other.
//   - With Fleet.ShardSync, DeterministicShuffleShardSyncLeaderDecider and
//     PeriodicShardSyncManager:
//     every worker lists the table to elect the shard-sync leader when its
//     periodic shard sync first asks (after INITIAL_DELAY, 60 s) and then
//     every 5 minutes (fixed delay, first after 60 s); the leader lists the
//     table again for its hash-range audit every 2 minutes
//     (leasesRecoveryAuditorExecutionFrequencyMillis). The leader here is the
//     smallest worker id (KCL shuffles the sorted ids with a fixed seed: one
//     worker either way).
//
// The writes use the same condition expressions as leasecore (KCL sends the
// legacy Expected/AttributeUpdates form of the same conditions), so the
// model bills them identically.
type kcl2Worker struct {
	id     string
	api    api
	table  string
	clock  clock.Clock
	rng    *rand.Rand
	cancel context.CancelFunc
	done   sync.WaitGroup

	failover, renewEvery, takerEvery time.Duration

	mu   sync.Mutex
	held map[string]*kcl2Held // ownedLeases

	// taker state: taker goroutine only
	all      map[string]*kcl2Seen
	order    []*kcl2Seen // all, in key order (the scan's)
	scanTime time.Time

	isLeader func(id string) bool
	moves    atomic.Int64
	lost     atomic.Int64
	// throttled counts throttled calls, as KCL's metrics would show them
	// (its ProvisionedThroughputException logs and failed operations).
	throttled atomic.Int64
}

type api interface {
	leasecore.CoordinatorAPI
}

type kcl2Held struct {
	mu      sync.Mutex
	lease   leasecore.Lease
	renewed time.Time // lastCounterIncrementNanos
}

type kcl2Seen struct {
	lease  leasecore.Lease
	change time.Time // zero: never
}

const (
	kclEpsilon          = 25 * time.Millisecond
	kclElectionInterval = 5 * time.Minute
	kclElectionDelay    = time.Minute
	kclAuditInterval    = 2 * time.Minute
	kclAuditDelay       = time.Minute
)

// startKCL2 starts a worker; with shardSync also its leader election and,
// on the leader, the audit (Fleet.ShardSync).
func startKCL2(ctx context.Context, a api, table, id string, clk clock.Clock, seed uint64, shardSync bool, isLeader func(string) bool) *kcl2Worker {
	failover := leasecore.DefaultFailoverTime
	w := &kcl2Worker{id: id, table: table, clock: clk, rng: rand.New(rand.NewPCG(seed, 17)),
		failover: failover, renewEvery: failover/3 - kclEpsilon, takerEvery: 2 * (failover + kclEpsilon),
		held: map[string]*kcl2Held{}, all: map[string]*kcl2Seen{}, isLeader: isLeader}
	w.api = countThrottles{a, &w.throttled}
	ctx, w.cancel = context.WithCancel(ctx)
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		w.initialize(ctx)
		w.done.Add(1)
		go func() { defer w.done.Done(); w.renewLoop(ctx) }()
		w.takerLoop(ctx)
	}()
	if shardSync {
		w.done.Add(2)
		go func() { defer w.done.Done(); w.electionLoop(ctx) }()
		go func() { defer w.done.Done(); w.auditLoop(ctx) }()
	}
	return w
}

func (w *kcl2Worker) crash()           { w.cancel(); w.done.Wait() }
func (w *kcl2Worker) Moves() int64     { return w.moves.Load() }
func (w *kcl2Worker) Lost() int64      { return w.lost.Load() }
func (w *kcl2Worker) Throttled() int64 { return w.throttled.Load() }

func (w *kcl2Worker) Held() int {
	now := w.clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, h := range w.held {
		h.mu.Lock()
		if now.Sub(h.renewed) <= w.failover {
			n++
		}
		h.mu.Unlock()
	}
	return n
}

func (w *kcl2Worker) sleep(ctx context.Context, d time.Duration) bool {
	return clock.Sleep(ctx, w.clock, d) == nil
}

// listLeases is KCL's listLeases: a paginated eventually consistent scan,
// failing as a whole on the first error.
func (w *kcl2Worker) listLeases(ctx context.Context) ([]leasecore.Lease, error) {
	res, err := leasecore.ScanTable(ctx, w.api, w.table, leasecore.ScanOptions{MaxRetries: -1,
		Sleep: func(ctx context.Context, d time.Duration) error { return clock.Sleep(ctx, w.clock, d) }})
	return res.Leases, err
}

func (w *kcl2Worker) initialize(ctx context.Context) {
	leases, err := w.listLeases(ctx)
	if err != nil {
		return
	}
	for _, l := range leases {
		if l.LeaseOwner == w.id {
			h := &kcl2Held{lease: l}
			if w.renew(ctx, h, true) {
				w.mu.Lock()
				w.held[l.LeaseKey] = h
				w.mu.Unlock()
			}
		}
	}
}

// renewLoop: scheduleAtFixedRate(renewer, 0, renewEvery).
func (w *kcl2Worker) renewLoop(ctx context.Context) {
	next := w.clock.Now()
	for ctx.Err() == nil {
		w.renewAll(ctx)
		next = next.Add(w.renewEvery)
		if d := next.Sub(w.clock.Now()); d > 0 {
			if !w.sleep(ctx, d) {
				return
			}
		} else {
			next = w.clock.Now()
		}
	}
}

func (w *kcl2Worker) renewAll(ctx context.Context) {
	w.mu.Lock()
	hs := make([]*kcl2Held, 0, len(w.held))
	for _, h := range w.held {
		hs = append(hs, h)
	}
	w.mu.Unlock()
	// KCL's renewal pool has 20 threads; the order does not matter here.
	sem := make(chan struct{}, 20)
	var wg sync.WaitGroup
	for _, h := range hs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if !w.renew(ctx, h, false) && ctx.Err() == nil {
				w.mu.Lock()
				if w.held[h.lease.LeaseKey] == h {
					delete(w.held, h.lease.LeaseKey)
					w.lost.Add(1)
				}
				w.mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// renew is DynamoDBLeaseRenewer.renewLease: two tries on throttling.
func (w *kcl2Worker) renew(ctx context.Context, h *kcl2Held, evenIfExpired bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for range 2 {
		if !evenIfExpired && w.clock.Now().Sub(h.renewed) > w.failover {
			return false
		}
		ok, err := w.renewOnce(ctx, h.lease)
		if err == nil {
			if ok {
				h.lease.LeaseCounter++
				h.renewed = w.clock.Now()
			}
			return ok
		}
		if !awserr.Throttled(err) {
			return true // DependencyException: KCL keeps the lease and tries next round
		}
	}
	return true // still throttled: kept, tried again next round
}

func (w *kcl2Worker) renewOnce(ctx context.Context, l leasecore.Lease) (bool, error) {
	_, err := w.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(w.table),
		Key:                       keyOf(l.LeaseKey),
		ConditionExpression:       aws.String("#leaseCounter = :n"),
		UpdateExpression:          aws.String("SET #leaseCounter = :n1"),
		ExpressionAttributeNames:  map[string]string{"#leaseCounter": leasecore.AttrLeaseCounter},
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": num(l.LeaseCounter), ":n1": num(l.LeaseCounter + 1)},
	})
	if err == nil {
		return true, nil
	}
	if !awserr.ConditionFailed(err) {
		return false, err
	}
	cur, found, gerr := leasecore.GetLease(ctx, w.api, w.table, l.LeaseKey, false)
	if gerr != nil {
		return false, gerr
	}
	return found && cur.LeaseOwner == l.LeaseOwner && cur.LeaseCounter == l.LeaseCounter+1, nil
}

// takerLoop: scheduleWithFixedDelay(taker, 0, takerEvery).
func (w *kcl2Worker) takerLoop(ctx context.Context) {
	for ctx.Err() == nil {
		w.takeLeases(ctx)
		if !w.sleep(ctx, w.takerEvery) {
			return
		}
	}
}

func (w *kcl2Worker) takeLeases(ctx context.Context) {
	started := w.clock.Now()
	fresh, err := w.listLeases(ctx)
	if err != nil {
		return // SCAN_RETRIES = 1
	}
	w.scanTime = w.clock.Now()
	next := make(map[string]*kcl2Seen, len(fresh))
	order := make([]*kcl2Seen, 0, len(fresh))
	for _, l := range fresh {
		s := &kcl2Seen{lease: l}
		if old, ok := w.all[l.LeaseKey]; ok {
			if old.lease.LeaseCounter == l.LeaseCounter {
				s.change = old.change
			} else {
				s.change = w.scanTime
			}
		} else if l.LeaseOwner != "" {
			s.change = w.scanTime
		}
		next[l.LeaseKey] = s
		order = append(order, s)
	}
	w.all, w.order = next, order
	take := w.computeLeasesToTake()
	if w.clock.Now().Sub(started) > w.renewEvery/2 {
		for i, s := range take {
			if s.lease.LeaseOwner != "" && !w.available(s) {
				if cur, ok, err := leasecore.GetLease(ctx, w.api, w.table, s.lease.LeaseKey, false); err == nil && ok {
					take[i] = &kcl2Seen{lease: cur}
				}
			}
		}
	}
	for _, s := range take {
		for range 3 { // TAKE_RETRIES, on throttling only
			ok, err := w.takeOnce(ctx, s.lease)
			if err == nil {
				if ok {
					l := s.lease
					l.LeaseCounter++
					l.LeaseOwner = w.id
					w.mu.Lock()
					w.held[l.LeaseKey] = &kcl2Held{lease: l, renewed: w.clock.Now()}
					w.mu.Unlock()
					w.moves.Add(1)
				}
				break
			}
			if !awserr.Throttled(err) {
				break
			}
		}
	}
}

func (w *kcl2Worker) takeOnce(ctx context.Context, l leasecore.Lease) (bool, error) {
	in := &dynamodb.UpdateItemInput{
		TableName:                aws.String(w.table),
		Key:                      keyOf(l.LeaseKey),
		ConditionExpression:      aws.String("#leaseCounter = :n"),
		UpdateExpression:         aws.String("SET #leaseCounter = :n1, #leaseOwner = :owner"),
		ExpressionAttributeNames: map[string]string{"#leaseCounter": leasecore.AttrLeaseCounter, "#leaseOwner": leasecore.AttrLeaseOwner},
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": num(l.LeaseCounter), ":n1": num(l.LeaseCounter + 1),
			":owner": &types.AttributeValueMemberS{Value: w.id}},
	}
	if l.LeaseOwner != "" && l.LeaseOwner != w.id {
		in.UpdateExpression = aws.String("SET #leaseCounter = :n1, #leaseOwner = :owner ADD #ownerSwitchesSinceCheckpoint :one")
		in.ExpressionAttributeNames["#ownerSwitchesSinceCheckpoint"] = leasecore.AttrOwnerSwitchesSinceCheckpoint
		in.ExpressionAttributeValues[":one"] = num(1)
	}
	_, err := w.api.UpdateItem(ctx, in)
	if awserr.ConditionFailed(err) {
		return false, nil
	}
	return err == nil, err
}

// available is Lease.isAvailable as of the last scan: unowned, or counter
// unchanged for longer than the failover time.
func (w *kcl2Worker) available(s *kcl2Seen) bool {
	return s.lease.LeaseOwner == "" || s.change.IsZero() || w.scanTime.Sub(s.change) > w.failover
}

// computeLeasesToTake is DynamoDBLeaseTaker.computeLeasesToTake and
// chooseLeasesToSteal at the defaults (docs/kcl-compat.md, Taking and
// stealing).
func (w *kcl2Worker) computeLeasesToTake() []*kcl2Seen {
	// w.order is in key order, so a seeded shuffle gives the same result
	// every run.
	counts := map[string]int{}
	var avail []*kcl2Seen
	for _, s := range w.order {
		if w.available(s) {
			avail = append(avail, s)
		} else {
			counts[s.lease.LeaseOwner]++
		}
	}
	if _, ok := counts[w.id]; !ok {
		counts[w.id] = 0
	}
	leases, workers := len(w.all), len(counts)
	if leases == 0 {
		return nil
	}
	target := 1
	if workers < leases {
		target = (leases + workers - 1) / workers
	}
	mine := counts[w.id]
	need := target - mine
	now := w.clock.Now()
	var veryOld []*kcl2Seen
	for _, s := range w.order {
		if now.Sub(s.change) > 3*w.failover {
			veryOld = append(veryOld, s)
		}
	}
	if len(veryOld) > 0 {
		w.rng.Shuffle(len(veryOld), func(i, j int) { veryOld[i], veryOld[j] = veryOld[j], veryOld[i] })
		return veryOld
	}
	if need <= 0 {
		return nil
	}
	if len(avail) > 0 {
		w.rng.Shuffle(len(avail), func(i, j int) { avail[i], avail[j] = avail[j], avail[i] })
		return avail[:min(need, len(avail))]
	}
	victim, most := "", -1
	for _, o := range slices.Sorted(maps.Keys(counts)) {
		if counts[o] > most {
			victim, most = o, counts[o]
		}
	}
	steal := 0
	if most >= target {
		steal = min(need, most-target)
		if need > 1 && steal == 0 {
			steal = 1
		}
		steal = min(steal, 1)
	}
	if steal <= 0 {
		return nil
	}
	var cands []*kcl2Seen
	for _, s := range w.order {
		if s.lease.LeaseOwner == victim {
			cands = append(cands, s)
		}
	}
	w.rng.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	return cands[:min(steal, len(cands))]
}

// electionLoop is the leader decider's listLeases: first when the periodic
// shard sync first asks, then every 5 minutes.
func (w *kcl2Worker) electionLoop(ctx context.Context) {
	if !w.sleep(ctx, kclElectionDelay) {
		return
	}
	for {
		_, _ = w.listLeases(ctx)
		if !w.sleep(ctx, kclElectionInterval) {
			return
		}
	}
}

// auditLoop is the leader's periodic shard sync: its listLeases every 2
// minutes (the ListShards beside it is Kinesis, not the lease table).
func (w *kcl2Worker) auditLoop(ctx context.Context) {
	if !w.sleep(ctx, kclAuditDelay) {
		return
	}
	for {
		if w.isLeader(w.id) {
			_, _ = w.listLeases(ctx)
		}
		if !w.sleep(ctx, kclAuditInterval) {
			return
		}
	}
}

func keyOf(k string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{leasecore.AttrLeaseKey: &types.AttributeValueMemberS{Value: k}}
}

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: itoa(n)}
}

// countThrottles counts the throttled answers of a worker's calls.
type countThrottles struct {
	api
	n *atomic.Int64
}

func (c countThrottles) note(err error) {
	if awserr.Throttled(err) {
		c.n.Add(1)
	}
}

func (c countThrottles) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	out, err := c.api.Scan(ctx, in, o...)
	c.note(err)
	return out, err
}

func (c countThrottles) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := c.api.GetItem(ctx, in, o...)
	c.note(err)
	return out, err
}

func (c countThrottles) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := c.api.UpdateItem(ctx, in, o...)
	c.note(err)
	return out, err
}
