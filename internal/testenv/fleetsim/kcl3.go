package fleetsim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/coordination/assignment"
	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/internal/testenv/ddbmodel"
	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
	"github.com/kcltool/kcltool/leasecore"
)

// KCL 3.x fleets (issue 25, item 9): a leader on the KCL's schedule
// (kcl3fleet.Leader: the lock, a LeaseAssignmentManager round every
// leaseAssignmentIntervalMillis) and followers of one engine on the model
// table with its LeaseOwnerToLeaseKeyIndex:
//
//   - Java3: kcl3fleet.OtherWorker, the port of a Java 3.x worker's
//     schedule (discovery every 9,975 ms, renewals every 3,308 ms, metrics
//     every 30 s, the handoff completed after the batch in flight);
//   - KCLTool3: leasecore's Coordinator in AssignByLeader mode, unchanged,
//     whose LeaseHandoff events are answered as the runner answers them
//     (the batch in flight, then CompleteHandoff), with a metrics item
//     written every 30 s as the runner's reporter does.
const (
	Java3    Engine = "java3"
	KCLTool3 Engine = "kcltool3"
)

// Fleet3 is one KCL 3.x fleet in the simulation.
type Fleet3 struct {
	*Fleet // Clock, Model and Run; its own workers map stays empty
	Engine Engine
	KCL3   *kcl3fleet.Fleet
	Leader *kcl3fleet.Leader
	// Batch is the time a worker takes to finish the batch in flight after
	// it learns of a handoff away from it.
	Batch time.Duration

	mu    sync.Mutex
	java  map[string]*kcl3fleet.OtherWorker
	ours  map[string]*leasecore.Coordinator
	stops map[string]context.CancelFunc
	// reporters are the kcltool workers' metrics reporters.
	reporters map[string]*coordination.Reporter

	// Lead, with StartMember, gives every worker a leader side (lead3.go);
	// AssignConfig is the kcltool leader's.
	Lead         Lead
	AssignConfig assignment.Config
	// ContendPeriod is the kcltool lead's LeaderLockConfig.ContendPeriod
	// (zero: LeaderLock's default).
	ContendPeriod time.Duration
	JavaLeader    kcl3fleet.LeaderConfig // the Java leads' settings (WorkerID and JavaSchedule set per member)
	sides         map[string]leaderSide
	deadMoves     int64
}

// NewFleet3 makes the model table (with the index) holding n unowned
// leases, as the shard sync creates them, and the leader, not running yet.
// It must be called inside a synctest bubble.
func NewFleet3(engine Engine, leases int, batch time.Duration, leader kcl3fleet.LeaderConfig) *Fleet3 {
	clk := clocktest.New(Epoch)
	m := ddbmodel.New(ddbmodel.Config{Table: Table, HashKey: leasecore.AttrLeaseKey,
		Indexes: []ddbmodel.Index{{Name: leasecore.KCL3IndexName, HashKey: leasecore.AttrLeaseOwner, RangeKey: leasecore.AttrLeaseKey}}}, clk)
	ctx, cancel := context.WithCancel(context.Background())
	base := &Fleet{Engine: engine, Clock: clk, Model: m, ctx: ctx, cancel: cancel, workers: map[string]worker{}, side: map[string]context.CancelFunc{}}
	kf, err := kcl3fleet.Attach(ctx, m, kcl3fleet.Layout{Kind: kcl3fleet.NewApp, LeaseTable: Table}, clk)
	if err != nil {
		panic(err)
	}
	keys := make([]string, leases)
	for i := range keys {
		keys[i] = fmt.Sprintf("shardId-%012d", i)
	}
	if err := kf.CreateLeases(ctx, keys...); err != nil {
		panic(err)
	}
	if leader.WorkerID == "" {
		leader.WorkerID = "leader"
	}
	f := &Fleet3{Fleet: base, Engine: engine, KCL3: kf, Leader: kf.NewLeader(leader), Batch: batch,
		java: map[string]*kcl3fleet.OtherWorker{}, ours: map[string]*leasecore.Coordinator{}, stops: map[string]context.CancelFunc{},
		reporters: map[string]*coordination.Reporter{}, sides: map[string]leaderSide{}}
	m.ResetStats()
	return f
}

// StartLeader runs the leader's rounds.
func (f *Fleet3) StartLeader() {
	go func() { _ = f.Leader.Run(f.ctx) }()
}

// Start starts a follower now.
func (f *Fleet3) Start(id string, seed uint64) {
	ctx, cancel := context.WithCancel(f.ctx)
	f.mu.Lock()
	f.stops[id] = cancel
	f.mu.Unlock()
	switch f.Engine {
	case Java3:
		w := f.KCL3.NewWorker(kcl3fleet.WorkerConfig{ID: id, HandoffDelay: f.Batch})
		f.mu.Lock()
		f.java[id] = w
		f.mu.Unlock()
		go func() { _ = w.Run(ctx) }()
	case KCLTool3:
		var c *leasecore.Coordinator
		onEvent := func(e leasecore.LeaseEvent) {
			if e.Kind != leasecore.LeaseHandoff {
				return
			}
			// The runner's answer: stop reading, finish the batch in
			// flight and checkpoint it, then write the transfer.
			go func(key string) {
				if clock.Sleep(ctx, f.Clock, f.Batch) == nil {
					_ = c.CompleteHandoff(ctx, key)
				}
			}(e.Lease.LeaseKey)
		}
		var err error
		c, err = leasecore.NewCoordinator(f.Model, Table, leasecore.Config{WorkerID: id}, f.Clock,
			leasecore.Options{Assignment: leasecore.AssignByLeader, OnEvent: onEvent, Rand: rand.New(rand.NewPCG(seed, 7))})
		if err != nil {
			panic(err)
		}
		if err := c.Start(ctx); err != nil {
			panic(err)
		}
		f.mu.Lock()
		f.ours[id] = c
		f.mu.Unlock()
		// The worker-metrics reporter kcltool runs (coordination.Reporter,
		// WorkerMetricStatsReporter's 30 s), so that a graceful stop can
		// delete the item as kcltool does (Reporter.Remove).
		rep := coordination.NewReporter(f.Model, coordination.Tables{Lease: Table}, id, f.Clock, coordination.ReporterOptions{})
		rep.SetState(coordination.State{ReportMetrics: true, Layout: coordination.LayoutLeaseTable, Assignment: leasecore.AssignByLeader})
		// A first item at start, as the fleet's workers always had here
		// (the reporter's own first write is two seconds later), so that
		// the figures measured before the reporter was used still hold.
		_ = rep.Report(ctx)
		rep.Start(ctx)
		f.mu.Lock()
		f.reporters[id] = rep
		f.mu.Unlock()
	default:
		panic("fleetsim: not a KCL 3.x engine: " + string(f.Engine))
	}
}

// Held is how many leases a worker holds by its own account.
func (f *Fleet3) Held(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if w := f.java[id]; w != nil {
		return len(w.Held())
	}
	if c := f.ours[id]; c != nil {
		return len(c.Held())
	}
	return 0
}

// HeldTotal sums Held over the workers.
func (f *Fleet3) HeldTotal() int {
	f.mu.Lock()
	ids := make([]string, 0, len(f.java)+len(f.ours))
	for id := range f.java {
		ids = append(ids, id)
	}
	for id := range f.ours {
		ids = append(ids, id)
	}
	f.mu.Unlock()
	n := 0
	for _, id := range ids {
		n += f.Held(id)
	}
	return n
}

// Renewals is kcltool's workers' successful renewals so far.
func (f *Fleet3) Renewals() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n int64
	for _, c := range f.ours {
		n += c.Stats().Renewals
	}
	return n
}

// Stop ends the workers and the leader; call it before the bubble ends.
func (f *Fleet3) Stop() {
	for _, id := range f.Members() {
		f.Kill(id)
	}
	f.mu.Lock()
	for _, c := range f.ours {
		_ = c.Stop(context.Background(), false)
	}
	f.mu.Unlock()
	f.Leader.Stall()
	f.cancel()
}

// lease reads one item of the model as it is now.
func (f *Fleet3) lease(key string) leasecore.Lease {
	out, err := f.Model.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(Table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{leasecore.AttrLeaseKey: &types.AttributeValueMemberS{Value: key}}})
	if err != nil || len(out.Item) == 0 {
		return leasecore.Lease{}
	}
	l, _ := leasecore.DecodeLease(out.Item)
	return l
}

// Result3 is what one KCL 3.x fleet did.
type Result3 struct {
	Engine  Engine
	Point   Point
	Steady  time.Duration
	Batch   time.Duration
	Assign  time.Duration // from the leader's start until every lease is held
	Handoff []time.Duration
	// DiscoveryReadPerWorkerMin is the read units of the index queries and
	// of the reads of the leases they name, per worker per minute of the
	// steady window.
	DiscoveryReadPerWorkerMin float64
	// RenewalsPerLeaseMin: kcltool's renewals per lease per minute in the
	// steady window (KCLTool3 only).
	RenewalsPerLeaseMin float64
}

// MeasureKCL3 runs a KCL 3.x fleet: the followers start within
// StartSpread, the leader assigns every lease, then a steady window, then
// handoffs: one at a time, the leader's initiateGracefulLeaseHandoff of a
// lease to the next worker, timed until checkpointOwner is gone from the
// item, at random moments of the renewal cycle. It must run inside a
// synctest bubble.
func MeasureKCL3(engine Engine, p Point, steady time.Duration, handoffs int, batch time.Duration, seed uint64) Result3 {
	f := NewFleet3(engine, p.Leases, batch, kcl3fleet.LeaderConfig{})
	defer f.Stop()
	res := Result3{Engine: engine, Point: p, Steady: steady, Batch: batch}
	ids := WorkerIDs("w", p.Workers)
	rng := rand.New(rand.NewPCG(seed, 3))
	for i, id := range ids {
		f.Start(id, seed+uint64(i))
		f.Run(time.Duration(rng.Int64N(int64(StartSpread)/int64(p.Workers))), nil)
	}
	f.StartLeader()
	res.Assign, _ = f.Run(10*time.Minute, func() bool { return f.HeldTotal() == p.Leases })
	f.Run(time.Minute, nil)

	f.Model.ResetStats()
	renewals := f.Renewals()
	f.Run(steady, nil)
	st := f.Model.Stats()
	minutes := steady.Minutes()
	res.DiscoveryReadPerWorkerMin = (st.ReadUnitsByOp["Query"] + st.ReadUnitsByOp["GetItem"]) / float64(p.Workers) / minutes
	res.RenewalsPerLeaseMin = float64(f.Renewals()-renewals) / float64(p.Leases) / minutes

	keys := f.Model.Keys()
	var leaseKeys []string
	for _, k := range keys {
		if l := f.lease(k); l.LeaseOwner != "" && l.EntityType == leasecore.EntityTypeLease {
			leaseKeys = append(leaseKeys, k)
		}
	}
	sort.Strings(leaseKeys)
	ctx := context.Background()
	for i := 0; i < handoffs && i < len(leaseKeys); i++ {
		f.Run(time.Duration(rng.Int64N(int64(5*time.Second))), nil)
		k := leaseKeys[(i*7)%len(leaseKeys)]
		from := f.lease(k).LeaseOwner
		to := ids[0]
		for j, id := range ids {
			if id == from {
				to = ids[(j+1)%len(ids)]
			}
		}
		if _, err := f.Leader.Handoff(ctx, k, to); err != nil {
			panic(fmt.Sprintf("handoff of %s: %v", k, err))
		}
		d, ok := f.Run(5*time.Minute, func() bool { return f.lease(k).CheckpointOwner == "" })
		if !ok {
			panic(fmt.Sprintf("handoff of %s from %s to %s not done in 5 minutes", k, from, to))
		}
		res.Handoff = append(res.Handoff, d)
		f.Run(5*time.Second, nil)
	}
	return res
}
