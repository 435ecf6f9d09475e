// Package fleetsim runs whole fleets of lease workers in one process against
// the DynamoDB model (internal/testenv/ddbmodel) on the fake clock
// (internal/testenv/clocktest), to price the lease protocol in capacity units at
// fleet scale: kcltool's coordinator (leasecore, unchanged) beside a port of
// KCL 2.x's lease schedule and rules, driven by the same simulation.
//
// The simulation runs inside a testing/synctest bubble: synctest.Wait tells
// the driver when every worker goroutine is blocked (on a fake timer, a
// channel or a wait group), and the driver then moves the fake clock to the
// next timer. No goroutine ever waits for real time, so ten simulated
// minutes of a hundred workers take as long as their work does.
package fleetsim

import (
	"context"
	"fmt"
	"github.com/kcltool/kcltool/internal/clock"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync/atomic"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/internal/testenv/ddbmodel"
	"github.com/kcltool/kcltool/leasecore"
)

// Engine names which lease engine a fleet runs.
type Engine string

const (
	KCLTool Engine = "kcltool" // leasecore's Coordinator, as `kcltool run` starts it
	KCL2    Engine = "kcl2"    // the port of KCL 2.x (kcl2.go)
)

// Table is the lease table's name in the model.
const Table = "fleet-leases"

// worker is one member of the fleet, whatever its engine.
type worker interface {
	Held() int
	Moves() int64 // leases taken or stolen so far
	Lost() int64  // leases it held and lost (not renewed in time, or taken)
	// Throttled counts lease-table calls answered with a throttle, as the
	// worker's own metrics count them.
	Throttled() int64
	crash() // stop as a killed process stops: no release, no writes
}

// Fleet is a model table and the workers on it.
type Fleet struct {
	Engine Engine
	Clock  *clocktest.Clock
	Model  *ddbmodel.Model
	// ShardSync adds each engine's periodic lease-table reads besides the
	// taker's (kcltool: the runner's shard sync; KCL 2.x: leader election
	// and the leader's audit). Off, the fleet is the coordinators alone.
	ShardSync bool
	// Config is kcltool's coordinator configuration (WorkerID is set per worker).
	Config leasecore.Config

	ctx     context.Context
	cancel  context.CancelFunc
	workers map[string]worker
	order   []string
	seed    uint64
	side    map[string]context.CancelFunc
	leader  string
	// syncScans and syncReuses count kcltool's shard syncs that scanned
	// the table and those that used the taker's latest scan.
	syncScans, syncReuses atomic.Int64
}

// Epoch is the simulation's start time.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// NewFleet makes a model table of n leases owned round-robin by the given
// workers (a running fleet's table) and no workers yet. It must be called
// inside a synctest bubble.
func NewFleet(engine Engine, model ddbmodel.Config, leases int, owners []string, seed uint64) *Fleet {
	clk := clocktest.New(Epoch)
	model.Table, model.HashKey = Table, leasecore.AttrLeaseKey
	m := ddbmodel.New(model, clk)
	ctx, cancel := context.WithCancel(context.Background())
	f := &Fleet{Engine: engine, Clock: clk, Model: m, ctx: ctx, cancel: cancel,
		workers: map[string]worker{}, seed: seed, side: map[string]context.CancelFunc{}}
	for i := range leases {
		l := leasecore.Lease{LeaseKey: fmt.Sprintf("shardId-%012d", i), Checkpoint: leasecore.SequenceNumber{SequenceNumber: "49590338271490256608559692538361571095921575989136588898"},
			StartingHashKey: "0", EndingHashKey: "340282366920938463463374607431768211455"}
		if len(owners) > 0 {
			l.LeaseOwner = owners[i%len(owners)]
		}
		if _, err := m.PutItem(ctx, &dynamodb.PutItemInput{TableName: ptr(Table), Item: leasecore.EncodeLease(l)}); err != nil {
			panic(err)
		}
	}
	if len(owners) > 0 {
		f.leader = owners[0]
	}
	m.ResetStats()
	return f
}

func ptr[T any](v T) *T { return &v }

// Start starts a worker now.
func (f *Fleet) Start(id string) {
	f.seed++
	var w worker
	switch f.Engine {
	case KCLTool:
		w = f.startKCLTool(id, f.seed)
	case KCL2:
		if f.leader == "" {
			f.leader = id
		}
		w = startKCL2(f.ctx, f.Model, Table, id, f.Clock, f.seed, f.ShardSync, func(id string) bool { return id == f.leader })
	}
	f.workers[id] = w
	f.order = append(f.order, id)
}

// Crash kills a worker.
func (f *Fleet) Crash(id string) {
	if c := f.side[id]; c != nil {
		c()
	}
	f.workers[id].crash()
	delete(f.workers, id)
	if id == f.leader && len(f.workers) > 0 {
		f.leader = slices.Sorted(maps.Keys(f.workers))[0]
	}
}

// Held is how many leases a worker holds, by its own account.
func (f *Fleet) Held(id string) int {
	if w := f.workers[id]; w != nil {
		return w.Held()
	}
	return 0
}

// Moves is the sum of the workers' takes and steals so far.
func (f *Fleet) Moves() int64 {
	var n int64
	for _, w := range f.workers {
		n += w.Moves()
	}
	return n
}

// Lost and Throttled sum the workers' counters.
func (f *Fleet) Lost() (n int64) {
	for _, w := range f.workers {
		n += w.Lost()
	}
	return n
}

func (f *Fleet) Throttled() (n int64) {
	for _, w := range f.workers {
		n += w.Throttled()
	}
	return n
}

// Stop ends every worker; call it before the bubble ends.
func (f *Fleet) Stop() {
	for _, id := range slices.Sorted(maps.Keys(f.workers)) {
		f.Crash(id)
	}
	f.cancel()
}

// Now is the simulated time.
func (f *Fleet) Now() time.Time { return f.Clock.Now() }

// Run advances simulated time by d, from timer to timer, letting every
// worker finish its work at each instant. until, when set, is checked at
// every instant; Run returns early, reporting true, once it holds.
func (f *Fleet) Run(d time.Duration, until func() bool) (time.Duration, bool) {
	start := f.Clock.Now()
	end := start.Add(d)
	for {
		synctest.Wait()
		now := f.Clock.Now()
		if until != nil && until() {
			return now.Sub(start), true
		}
		next, ok := f.Clock.Next()
		if !ok || next.After(end) {
			if now.Before(end) {
				f.advance(end.Sub(now))
				synctest.Wait()
			}
			return end.Sub(start), until != nil && until()
		}
		f.advance(max(next.Sub(now), 0))
	}
}

// advance moves the fake clock and, by sleeping, the bubble's own clock by
// the same step, so that code on the real clock (a Scan retry's default
// wait, a request deadline) keeps time with the fleet.
func (f *Fleet) advance(d time.Duration) {
	if d > 0 {
		time.Sleep(d)
	}
	f.Clock.Advance(d)
}

// StartSpread is how far apart the workers of a fleet start: over one KCL
// taker interval, so that their scans are spread over the whole cycle, as a
// fleet's drift apart. Until a worker starts, a stand-in renews its leases
// (see StartAll), as the fleet's running members would have: the table is
// the fleet's own, and nobody should see a lease expire while the fleet
// comes up.
const StartSpread = 20050 * time.Millisecond

// startOffsets draws the workers' start times.
func (f *Fleet) startOffsets(ids []string) []time.Duration {
	rng := rand.New(rand.NewPCG(f.seed, 99))
	out := make([]time.Duration, len(ids))
	for i := range ids {
		out[i] = time.Duration(rng.Int64N(int64(StartSpread)))
	}
	return out
}

// StartAll starts the workers at spread-out times within StartSpread and
// runs until the last has started.
func (f *Fleet) StartAll(ids []string) {
	offs := f.startOffsets(ids)
	type ev struct {
		at time.Duration
		id string
	}
	evs := make([]ev, len(ids))
	for i := range ids {
		evs[i] = ev{offs[i], ids[i]}
	}
	sortBy(evs, func(e ev) time.Duration { return e.at })
	standIns := map[string]context.CancelFunc{}
	for _, id := range ids {
		ctx, cancel := context.WithCancel(f.ctx)
		standIns[id] = cancel
		go f.standIn(ctx, id)
	}
	start := f.Clock.Now()
	for _, e := range evs {
		if d := start.Add(e.at).Sub(f.Clock.Now()); d > 0 {
			f.Run(d, nil)
		}
		standIns[e.id]()
		synctest.Wait() // the stand-in has stopped writing
		f.Start(e.id)
	}
}

// standIn renews a worker's leases at the renew interval, without
// conditions, until the worker itself starts: the renewals of the process
// that held them before this simulation began.
func (f *Fleet) standIn(ctx context.Context, id string) {
	var keys []string
	for _, k := range f.Model.Keys() {
		if ownerOf(f.Model.Item(k)) == id {
			keys = append(keys, k)
		}
	}
	every := (leasecore.Config{}).WithDefaults().RenewInterval
	for clock.Sleep(ctx, f.Clock, every) == nil {
		for _, k := range keys {
			_, _ = f.Model.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: ptr(Table), Key: keyOf(k),
				UpdateExpression:          ptr("ADD #c :one"),
				ExpressionAttributeNames:  map[string]string{"#c": leasecore.AttrLeaseCounter},
				ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1)}})
		}
	}
}

func ownerOf(item map[string]types.AttributeValue) string {
	if s, ok := item[leasecore.AttrLeaseOwner].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// WorkerIDs names n workers.
func WorkerIDs(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
