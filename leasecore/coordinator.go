package leasecore

import (
	"context"
	"errors"
	"fmt"
	"github.com/kcltool/kcltool/internal/backoff"
	"github.com/kcltool/kcltool/internal/clock"
	"io"
	"log/slog"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kcltool/kcltool/internal/awserr"
)

// Options are the coordinator's optional hooks.
type Options struct {
	// Logger receives lease gains, losses, steals, throttling and retries.
	// Default: discard.
	Logger *slog.Logger
	// OnEvent is called for every gained, lost or released lease, in order,
	// from a single goroutine. It should hand the event off quickly.
	OnEvent func(LeaseEvent)
	// Rand seeds the taker's shuffles; tests fix it. Default: random.
	Rand *rand.Rand
	// Include, when set, says which leases of the table are this worker's
	// business (in multi-stream mode, those of the streams it was given).
	// The taker neither takes, steals nor counts the others, so they are
	// never renewed or written either. Default: every lease.
	Include func(Lease) bool
	// Capacity receives the capacity units of the coordinator's calls, by
	// operation; the worker shares it with its other lease-table calls.
	// Default: one of the coordinator's own. Stats reports it.
	Capacity *Capacity
	// Assignment is the protocol the coordinator starts with (default
	// AssignByTaking, KCL 2.x); SetAssignment changes it.
	Assignment Assignment
	// Health, when set, watches the coordinator's loops and judges its
	// lease-table calls for the worker's health endpoints (health.go).
	Health *Health
}

// Coordinator is one worker's side of the KCL lease protocol: a renewer
// that renews the held leases at a fixed rate and, in KCL 2.x mode
// (AssignByTaking), a taker that scans the table, takes expired or unowned
// leases and steals toward an even share. It needs no coordinator of its
// own and nothing beyond the lease table. In KCL 3.x mode (AssignByLeader)
// a discoverer finds the leases the leader gave this worker instead
// (discoverer.go), renewals carry the 3.x condition and throughputKBps,
// and the leader's graceful handoffs are reported and completed
// (assign3.go); the client must then also implement QueryAPI.
type Coordinator struct {
	api   meteredAPI
	table string
	cfg   Config
	clock clock.Clock
	log   *slog.Logger
	stats counters

	mu       sync.Mutex
	held     map[string]*heldLease
	seen     map[string]*observation                           // the taker's view; taker goroutine only
	rng      *rand.Rand                                        // taker goroutine only
	lastWait time.Duration                                     // taker goroutine only
	sched    takerSched                                        // taker goroutine only
	warned   map[string]bool                                   // taker goroutine only
	reported struct{ throttled, retries, renewFailures int64 } // taker goroutine only
	tenure   uint64
	started  bool
	stopping bool
	noTaking atomic.Bool // StopTaking was called
	cancel   context.CancelFunc
	loops    sync.WaitGroup
	events   *eventQueue
	poke     chan struct{}
	include  func(Lease) bool // Options.Include, nil for every lease
	latest   latestScan       // the taker's last scan, for LatestScan
	// KCL 3.x (assign3.go, discoverer.go, leasestats.go).
	assign       atomic.Int32 // the Assignment in force
	tput         *leaseStats
	discoverPoke chan struct{}
	skipped      map[string]string // discoverer goroutine only: why a key was last skipped
	health       *Health           // Options.Health; nil-safe
}

// heldLease is a lease this worker holds. Its mutex serialises the writes on
// it: the renewal, a checkpoint and the release all condition on the same
// counter, so two of them in flight at once would make one fail and look
// like a lost lease.
type heldLease struct {
	mu        sync.Mutex
	lease     Lease     // as of this worker's last successful write: LeaseCounter is the N to condition on
	renewedAt time.Time // when that write was sent
	// unknownSince is when the first write since renewedAt was sent whose
	// outcome is unknown (timed out, reset, answer lost): if a later read
	// shows it applied, it was applied no earlier than this.
	unknownSince time.Time
	// unknownCheckpoints are the checkpoints of writes since renewedAt whose
	// outcome is unknown: the table may hold one of them.
	unknownCheckpoints []SequenceNumber
	tenure             uint64
	dropped            bool
	handoffSeen        bool // the LeaseHandoff event of this holding was sent
	// renewed mirrors renewedAt for HandlerDeadline, which must not wait
	// for mu: a renewal hung in the network holds mu for up to the renew
	// interval, and the handler's stop cannot wait that long.
	renewed atomic.Pointer[time.Time]
}

// applied records a write of this worker on the lease that is known to have
// been applied, leaving the lease as l. sent is when the write that
// succeeded was sent; if an earlier write's outcome was unknown, the table
// may show that one instead, so the holding is dated from the earlier send.
// The caller holds hl.mu.
func (hl *heldLease) applied(l Lease, sent time.Time) {
	if !hl.unknownSince.IsZero() && hl.unknownSince.Before(sent) {
		sent = hl.unknownSince
	}
	if sent.Before(hl.renewedAt) {
		sent = hl.renewedAt
	}
	hl.lease, hl.renewedAt, hl.unknownSince, hl.unknownCheckpoints = l, sent, time.Time{}, nil
	hl.renewed.Store(&sent)
}

// unresolved notes a write sent at sent that failed without a definite
// answer. A throttle is definite: nothing was written.
func (hl *heldLease) unresolved(sent time.Time, err error) {
	if hl.unknownSince.IsZero() && !awserr.Throttled(err) && !awserr.Rejected(err) {
		hl.unknownSince = sent
	}
}

// NewCoordinator prepares a worker for the lease table. It makes no calls;
// run EnsureTable first (and, on a KCL 3.x table, pass the mode the caller
// detected in Options.Assignment), then Start, and finally Stop, which also
// ends the event delivery goroutine.
func NewCoordinator(api CoordinatorAPI, table string, cfg Config, clk clock.Clock, opt Options) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if table == "" {
		return nil, errors.New("lease table name is empty")
	}
	if clk == nil {
		clk = clock.RealClock()
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	rng := opt.Rand
	if rng == nil {
		rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	cfg = cfg.WithDefaults()
	c := &Coordinator{
		table: table, cfg: cfg, clock: clk, rng: rng,
		log:  log.With("worker", cfg.WorkerID, "table", table),
		held: map[string]*heldLease{}, seen: map[string]*observation{},
		poke: make(chan struct{}, 1), include: opt.Include,
		tput: newLeaseStats(cfg.RenewInterval), discoverPoke: make(chan struct{}, 1), skipped: map[string]string{},
	}
	if opt.Assignment == AssignByLeader {
		if _, ok := api.(QueryAPI); !ok {
			return nil, errNoQuery
		}
	}
	c.assign.Store(int32(opt.Assignment))
	c.health = opt.Health
	c.health.bindHeld(c.heldCount)
	units := opt.Capacity
	if units == nil {
		units = &Capacity{}
	}
	c.api = meteredAPI{api: api, c: &c.stats, item: cfg.ItemTimeout(), scanTimeout: cfg.ScanTimeout(), units: units}
	c.events = newEventQueue(opt.OnEvent)
	return c, nil
}

// StopTaking ends taking and stealing for good; the held leases are still
// renewed until Stop. A worker shutting down calls it first: a lease taken
// during the shutdown grace would only be released again, unread, and its
// shard would wait for that.
func (c *Coordinator) StopTaking() { c.noTaking.Store(true) }

// WorkerID is the leaseOwner this coordinator writes.
func (c *Coordinator) WorkerID() string { return c.cfg.WorkerID }

// Config is the effective configuration, defaults filled in.
func (c *Coordinator) Config() Config { return c.cfg }

// Start runs the renewer and the taker until ctx is done or Stop is called.
// The taker runs at once. Cancelling ctx is a crash as far as the table can
// tell: the loops stop, nothing is released, the leases expire after the
// failover time. For a clean shutdown call Stop.
func (c *Coordinator) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return errors.New("coordinator already started")
	}
	c.started = true
	ctx, c.cancel = context.WithCancel(ctx)
	c.loops.Add(3)
	// Registered here, not in the goroutines, so that a loop that never
	// got going counts as wedged too.
	renewer := c.health.Loop("renewer", c.cfg.renewerBound())
	taker := c.health.Loop("taker", c.cfg.takerBound())
	discoverer := c.health.Loop("discoverer", c.cfg.discovererBound())
	go func() { defer c.loops.Done(); defer renewer.Close(); c.renewLoop(WithLoop(ctx, renewer)) }()
	// Both assignment loops run; each works only in its mode, so that
	// SetAssignment switches at once (as DynamoDBLeaseCoordinator runs the
	// taker and the discoverer when the mode may change).
	go func() { defer c.loops.Done(); defer taker.Close(); c.takerLoop(WithLoop(ctx, taker)) }()
	go func() { defer c.loops.Done(); defer discoverer.Close(); c.discoverLoop(WithLoop(ctx, discoverer)) }()
	c.log.Info("lease coordinator started", "failover", c.cfg.FailoverTime, "renewInterval", c.cfg.RenewInterval,
		"takerInterval", c.takerIntervalDescription(), "assignment", c.Assignment(), "discoveryInterval", c.cfg.DiscoveryInterval())
	return nil
}

func (c *Coordinator) takerIntervalDescription() string {
	if c.cfg.TakerInterval > 0 {
		return c.cfg.TakerInterval.String()
	}
	return fmt.Sprintf("adaptive %s..%s", c.cfg.MinTakerInterval(), c.cfg.KCLTakerInterval())
}

// Stop ends the loops. With release it then gives up every held lease
// (ReleaseLease), so that the other workers take them at their next taker
// run instead of after the failover time; in AssignByLeader mode with the
// KCL 3.x evict write (EvictLease3), so that the leader reassigns them at
// its next run (a lease in handoff goes to its next owner at once). Finish
// processing and write the final checkpoints before calling Stop: the
// leases are renewed until then.
// Events queued so far are delivered before Stop returns.
func (c *Coordinator) Stop(ctx context.Context, release bool) error {
	c.mu.Lock()
	if c.stopping {
		c.mu.Unlock()
		return nil
	}
	c.stopping = true
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	c.loops.Wait()
	var err error
	if release {
		err = c.releaseAll(ctx)
	}
	c.events.close()
	return err
}

// Kick makes the taker run now instead of at its next scheduled time.
func (c *Coordinator) Kick() {
	select {
	case c.poke <- struct{}{}:
	default:
	}
}

// Held returns the leases this worker holds now, sorted by key. A lease
// whose last successful renewal is older than the failover time is not held
// any more, even before the renewer has noticed.
func (c *Coordinator) Held() []Lease {
	now := c.clock.Now()
	var out []Lease
	for _, hl := range c.heldSnapshot() {
		hl.mu.Lock()
		if !hl.dropped && c.fresh(hl, now) {
			out = append(out, hl.lease)
		}
		hl.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LeaseKey < out[j].LeaseKey })
	return out
}

// IsHeld reports whether this worker holds the lease now.
func (c *Coordinator) IsHeld(key string) bool {
	hl := c.lookup(key)
	if hl == nil {
		return false
	}
	hl.mu.Lock()
	defer hl.mu.Unlock()
	return !hl.dropped && c.fresh(hl, c.clock.Now())
}

// heldCount is len(Held()) without waiting for any lease's mutex, which
// a renewal hung in the network holds for up to the renew interval: a
// health probe must answer within its own timeout (often 1 s). It reads
// the renewal time the leases mirror for HandlerDeadline.
func (c *Coordinator) heldCount() int {
	now, n := c.clock.Now(), 0
	for _, hl := range c.heldSnapshot() {
		if r := hl.renewed.Load(); r != nil && now.Sub(*r) <= c.cfg.FailoverTime {
			n++
		}
	}
	return n
}

// Stats returns the counters so far.
func (c *Coordinator) Stats() Stats {
	s := c.stats.snapshot()
	s.Held = len(c.Held())
	s.Units = c.api.units.ByOp()
	return s
}

// fresh: the worker stops treating a lease as held once its last successful
// renewal is older than the failover time (KCL's getCurrentlyHeldLease),
// because by then another worker may have judged it expired and taken it.
func (c *Coordinator) fresh(hl *heldLease, now time.Time) bool {
	return now.Sub(hl.renewedAt) <= c.cfg.FailoverTime
}

func (c *Coordinator) lookup(key string) *heldLease {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held[key]
}

func (c *Coordinator) heldSnapshot() []*heldLease {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*heldLease, 0, len(c.held))
	for _, hl := range c.held {
		out = append(out, hl)
	}
	return out
}

// gain records a lease this worker has just taken, renewed as of sent. A
// stolen lease's event says from whom and when its shard may start (see
// Config.StealWait).
func (c *Coordinator) gain(l Lease, sent time.Time, stolenFrom string, notBefore time.Time) {
	if old := c.lookup(l.LeaseKey); old != nil {
		// Taken again after the old holding lapsed unnoticed: end that one
		// first, so events for a key always alternate gained / lost.
		old.mu.Lock()
		c.drop(old, LeaseLost, &LeaseLostError{LeaseKey: l.LeaseKey, Op: "take", Reason: "expired and taken again"})
		old.mu.Unlock()
	}
	c.mu.Lock()
	c.tenure++
	hl := &heldLease{lease: l, renewedAt: sent, tenure: c.tenure}
	hl.renewed.Store(&sent)
	c.held[l.LeaseKey] = hl
	c.mu.Unlock()
	c.events.push(LeaseEvent{Kind: LeaseGained, Lease: l, Tenure: hl.tenure, StolenFrom: stolenFrom, NotBefore: notBefore})
}

// drop removes a lease from the held set, at once, and reports it lost (or
// released). The caller holds hl.mu.
func (c *Coordinator) drop(hl *heldLease, kind EventKind, cause error) {
	if hl.dropped {
		return
	}
	hl.dropped = true
	c.mu.Lock()
	if c.held[hl.lease.LeaseKey] == hl {
		delete(c.held, hl.lease.LeaseKey)
	}
	c.mu.Unlock()
	c.tput.drop(hl.lease.LeaseKey)
	switch kind {
	case LeaseLost:
		c.stats.lost.Add(1)
		c.log.Warn("lease lost", "lease", hl.lease.LeaseKey, "reason", cause)
	case LeaseHandedOff:
		c.stats.handedOff.Add(1)
		c.log.Info("lease handed off", "lease", hl.lease.LeaseKey, "to", hl.lease.LeaseOwner)
	default:
		c.stats.released.Add(1)
		c.log.Info("lease released", "lease", hl.lease.LeaseKey)
	}
	c.events.push(LeaseEvent{Kind: kind, Lease: hl.lease, Tenure: hl.tenure, Err: cause})
}

// expiredLocally is the loss a worker notices by itself: no successful
// renewal within the failover time.
func (c *Coordinator) expiredLocally(hl *heldLease, op string, now time.Time) error {
	return &LeaseLostError{LeaseKey: hl.lease.LeaseKey, Op: op,
		Reason: fmt.Sprintf("not renewed for %s (failover time %s)", now.Sub(hl.renewedAt).Round(time.Millisecond), c.cfg.FailoverTime)}
}

// Release gives up one held lease, as Stop(release) does for all: owner
// removed, counter bumped, so that nobody waits out the failover time. The
// runner releases a shard's lease once it has checkpointed SHARD_END. A lease
// not held is left alone.
func (c *Coordinator) Release(ctx context.Context, key string) error {
	hl := c.lookup(key)
	if hl == nil {
		return nil
	}
	return c.releaseOne(ctx, hl)
}

func (c *Coordinator) releaseAll(ctx context.Context) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, hl := range c.heldSnapshot() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.releaseOne(ctx, hl); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (c *Coordinator) releaseOne(ctx context.Context, hl *heldLease) error {
	hl.mu.Lock()
	defer hl.mu.Unlock()
	sleep := func(ctx context.Context, d time.Duration) error { return clock.Sleep(ctx, c.clock, d) }
	return backoff.Retry(ctx, sleep, backoff.Default, func(attempt int) (bool, error) {
		if hl.dropped {
			return false, nil
		}
		// No freshness check: a lease not renewed for the failover time
		// (a stalled renewer, a slow stop) is written all the same. The
		// write's conditions fail if another worker or the leader has
		// taken it since; if nobody has, releasing it spares the fleet
		// the wait for its expiry.
		var l Lease
		var err error
		if c.Assignment() == AssignByLeader {
			// Issue 25 point 8: the KCL's 3.x evict write, so that the
			// leader reassigns the lease at its next run.
			l, err = EvictLease3(WithCapacityOp(ctx, OpRelease), c.api, c.table, hl.lease, c.cfg.WorkerID)
		} else {
			l, err = ReleaseLease(WithCapacityOp(ctx, OpRelease), c.api, c.table, hl.lease, c.cfg.WorkerID)
		}
		var handoff *HandoffRequestedError
		switch {
		case errors.As(err, &handoff):
			c.adoptHandoff(hl, handoff.Lease)
			return true, err // evict again as the handoff's old owner
		case err == nil:
			hl.lease = l
			c.drop(hl, LeaseReleased, nil)
			return false, nil
		case errors.Is(err, ErrLeaseLost):
			c.drop(hl, LeaseLost, err)
			return false, nil
		case ctx.Err() != nil || !awserr.Transient(err) || attempt > 8:
			return false, err
		}
		c.stats.retries.Add(1)
		return true, err
	}, backoff.OpErrorOnCut)
}
