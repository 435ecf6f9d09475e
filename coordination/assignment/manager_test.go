package assignment

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
)

var layouts = []kcl3fleet.Kind{kcl3fleet.NewApp, kcl3fleet.SideTables}

var strategies = []Strategy{ByThroughput, ByLeaseCount}

// Unowned leases all go to the active workers in the first run, evenly
// (step 1, assignExpiredOrUnassignedLeases), in both layouts (metrics in
// the lease table; metrics in the side table) and with both strategies.
func TestRunAssignsUnownedLeases(t *testing.T) {
	for _, kind := range layouts {
		for _, s := range strategies {
			t.Run(kind.String()+"/"+s.String(), func(t *testing.T) {
				r := newRig(t, kind, Config{Strategy: s}, 12)
				r.join("a", "b", "c")
				res := r.run()
				if res.Leases != 12 || res.Active != 3 || res.Expired != 12 || res.Assigned != 12 || res.HandedOff != 0 {
					t.Fatalf("first run: %+v", res)
				}
				by, _ := r.owners()
				if by["a"] != 4 || by["b"] != 4 || by["c"] != 4 {
					t.Fatalf("owners after the first run: %v, want 4 each", by)
				}
				for _, mv := range res.Moves {
					if mv.Graceful || mv.From != "" || !mv.Done {
						t.Fatalf("move %+v: want a done assignLease of an unassigned lease", mv)
					}
				}
				// The followers find them through the index.
				r.advance(r.m.cfg.AssignmentInterval)
				for _, id := range r.ids() {
					if n := len(r.workers[id].Held()); n != 4 {
						t.Fatalf("%s holds %d leases, want 4", id, n)
					}
				}
			})
		}
	}
}

// A worker without a fresh metrics item gets nothing (active workers:
// lut within 2 × workerMetricsReporterFreqInMillis).
func TestRunSkipsWorkersWithStaleMetrics(t *testing.T) {
	r := newRig(t, kcl3fleet.NewApp, Config{}, 6)
	r.join("a", "b")
	r.workers["b"].StopMetrics()
	r.clk.Advance(61e9)
	if err := r.workers["a"].ReportMetrics(r.ctx); err != nil {
		t.Fatal(err)
	}
	res := r.run()
	if by, _ := r.owners(); res.Active != 1 || by["a"] != 6 {
		t.Fatalf("run %+v, owners %v: want all 6 with a, the only active worker", res, by)
	}
}

// A dead worker's leases are reassigned: expired once their counters have
// not moved for the failover time across runs, given to the live workers;
// while the dead worker's metrics stay fresh (up to 60 s) the variance
// decider skips a lease whose owner it picks, so the last ones go when
// its metrics go stale. Within 5 runs after the kill, no lease is left
// with the dead worker, and none is unowned.
func TestRunReassignsDeadWorkersLeases(t *testing.T) {
	for _, kind := range layouts {
		for _, s := range strategies {
			t.Run(kind.String()+"/"+s.String(), func(t *testing.T) {
				r := newRig(t, kind, Config{Strategy: s}, 12)
				r.join("a", "b", "c")
				r.cycle()
				r.cycle() // steady: every lease renewed, seen moving
				r.kill("c")
				runs := 0
				for ; runs < 5; runs++ {
					if by, _ := r.owners(); by["c"] == 0 && by[""] == 0 {
						break
					}
					r.cycle()
				}
				by, _ := r.owners()
				if by["c"] != 0 || by[""] != 0 || by["a"]+by["b"] != 12 {
					t.Fatalf("owners after %d runs: %v, want all 12 with a and b", runs, by)
				}
				t.Logf("the dead worker's leases were reassigned within %d runs", runs)
			})
		}
	}
}

// The first run of a leader judges no lease first seen with an owner
// expired (the KCL needs a second run); it asks for its next run after
// the failover time rather than the interval. With Observe, counters seen
// before the first run let that run judge expiry at once.
func TestNewLeaderExpiry(t *testing.T) {
	r := newRig(t, kcl3fleet.NewApp, Config{}, 6)
	r.join("a", "b")
	r.cycle()
	r.cycle()
	r.kill("b")
	r.advance(r.m.cfg.AssignmentInterval)

	// A new leader with no history: nothing expired in its first run.
	fresh := NewManager(r.m.api, r.m.t, r.m.cfg, r.clk, nil)
	res, err := fresh.RunOnce(r.ctx, r.st)
	if err != nil {
		t.Fatal(err)
	}
	if res.Expired != 0 || res.NextRunIn != r.m.cfg.FailoverTime+1e9 {
		t.Fatalf("new leader's first run: %d expired, next run in %v; want 0 and the failover time + 1 s", res.Expired, res.NextRunIn)
	}
	r.advance(res.NextRunIn)
	res, err = fresh.RunOnce(r.ctx, r.st)
	if err != nil {
		t.Fatal(err)
	}
	if res.Expired != 3 {
		t.Fatalf("new leader's second run, a failover time later: %d expired, want b's 3", res.Expired)
	}

	// A new leader that observed the counters before it led.
	r2 := newRig(t, kcl3fleet.NewApp, Config{}, 6)
	r2.join("a", "b")
	r2.cycle()
	r2.cycle()
	before := r2.leases()
	at := r2.clk.Now()
	r2.kill("b")
	r2.advance(r2.m.cfg.AssignmentInterval)
	obs := NewManager(r2.m.api, r2.m.t, r2.m.cfg, r2.clk, nil)
	obs.Observe(before, at)
	res, err = obs.RunOnce(r2.ctx, r2.st)
	if err != nil {
		t.Fatal(err)
	}
	// b's metrics are still fresh, so b stays active and the decider
	// skips the leases it picks b for: at least one moves now.
	if res.Expired != 3 || res.Assigned == 0 || res.NextRunIn != r2.m.cfg.AssignmentInterval {
		t.Fatalf("observing leader's first run: %+v; want b's 3 leases expired, some assigned", res)
	}
}

// A new worker gets its share through graceful handoffs within N runs of
// joining (N = 7: step 2 runs every third run, and two rebalancing runs
// bring it from 0 to its share on 12 leases and 3 workers).
func TestRunNewWorkerGetsItsShare(t *testing.T) {
	for _, s := range strategies {
		t.Run(s.String(), func(t *testing.T) {
			r := newRig(t, kcl3fleet.NewApp, Config{Strategy: s}, 12)
			r.join("a", "b")
			r.cycle()
			r.cycle()
			r.join("c")
			handoffs, runs := 0, 0
			for ; runs < 7; runs++ {
				if by, n := r.owners(); by["c"] >= 4 && n == 0 {
					break
				}
				res := r.cycle()
				handoffs += res.HandedOff
				for _, mv := range res.Moves {
					if !mv.Graceful {
						t.Fatalf("run %d: move %+v of a live lease without a handoff", runs, mv)
					}
				}
			}
			by, _ := r.owners()
			if by["c"] != 4 || by["a"] != 4 || by["b"] != 4 {
				t.Fatalf("after %d runs: owners %v, want 4 each", runs, by)
			}
			if n := len(r.workers["c"].Processing()); n != 4 {
				t.Fatalf("c processes %d leases, want 4", n)
			}
			t.Logf("the new worker reached its share in %d runs, %d handoffs", runs, handoffs)

			// Steady state: no movement in the next 6 runs (two
			// rebalancing runs).
			for i := 0; i < 6; i++ {
				if res := r.cycle(); len(res.Moves) != 0 {
					t.Fatalf("steady state run %d moved %+v", i, res.Moves)
				}
			}
		})
	}
}

// failingScan fails every Scan, as a table that cannot be read.
type failingScan struct {
	coordination.WriteAPI
	fail bool
}

func (f *failingScan) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	if f.fail {
		return nil, errors.New("injected scan failure")
	}
	return f.WriteAPI.Scan(ctx, in, opts...)
}

// Three failed runs in a row give up leadership
// (DEFAULT_FAILURE_COUNT_TO_SWITCH_LEADER); a good run in between resets
// the count; Reset does too.
func TestRunGivesUpAfterThreeFailures(t *testing.T) {
	r := newRig(t, kcl3fleet.NewApp, Config{}, 2)
	api := &failingScan{WriteAPI: r.f.DDB.(coordination.WriteAPI), fail: true}
	m := NewManager(api, r.f.Tables, Config{}, r.clk, nil)
	runs := func(n int) error {
		var err error
		for range n {
			_, err = m.RunOnce(r.ctx, r.st)
			if err == nil {
				t.Fatal("run with a failing scan succeeded")
			}
		}
		return err
	}
	if err := runs(2); errors.Is(err, ErrGiveUpLeadership) {
		t.Fatalf("second failure: %v, want no give-up yet", err)
	}
	api.fail = false
	if _, err := m.RunOnce(r.ctx, r.st); err != nil {
		t.Fatal(err)
	}
	api.fail = true
	if err := runs(2); errors.Is(err, ErrGiveUpLeadership) {
		t.Fatalf("two failures after a good run: %v, want no give-up", err)
	}
	if err := runs(1); !errors.Is(err, ErrGiveUpLeadership) {
		t.Fatalf("third failure in a row: %v, want ErrGiveUpLeadership", err)
	}
	m.Reset()
	if err := runs(1); errors.Is(err, ErrGiveUpLeadership) {
		t.Fatalf("first failure after Reset: %v, want no give-up", err)
	}
}

// A handoff the old owner never completes (its batch never ends, and its
// own timeout is far off) is forced by the leader with assignLease once
// the handoff is older than gracefulLeaseHandoffTimeoutMillis + the
// failover time (getCheckpointOwnerTimeoutTimestampMillis); until then the
// lease is blocked (blockedOnPendingCheckpoint) and not written, which
// the test checks as: no forced write before that time.
func TestRunForcesATimedOutHandoff(t *testing.T) {
	// Step 2 every run, so that the leader would move the lease again as
	// soon as it may.
	r := newRig(t, kcl3fleet.NewApp, Config{VarianceBalancingFrequency: 1}, 12)
	r.joinWith(kcl3fleet.WorkerConfig{ID: "a", NeverFinishBatch: true, HandoffTimeout: time.Hour})
	r.join("b")
	r.cycle()
	r.cycle()
	r.join("c")
	started := map[string]time.Time{}
	forced := 0
	blocked := 0
	for i := 0; i < 9; i++ {
		now := r.clk.Now()
		res := r.cycle()
		blocked += res.Blocked
		for _, mv := range res.Moves {
			switch {
			case mv.Graceful && mv.From == "a" && mv.Done:
				started[mv.Key] = now
			case !mv.Graceful && mv.From == "a" && mv.Done:
				at, ok := started[mv.Key]
				if !ok {
					t.Fatalf("run %d: %+v forced without a handoff started", i, mv)
				}
				if d := now.Sub(at); d < r.m.cfg.HandoffTimeout+r.m.cfg.FailoverTime {
					t.Fatalf("run %d: handoff of %s forced %v after it started, before the timeout", i, mv.Key, d)
				}
				forced++
			}
		}
	}
	if len(started) == 0 || forced == 0 {
		t.Fatalf("handoffs from a %d, forced %d: want some of each", len(started), forced)
	}
	t.Logf("%d handoffs from a, %d forced after the timeout, %d moves blocked meanwhile", len(started), forced, blocked)
}

// Workers that report CPU are balanced on it: a worker at 90% beside one
// at 30% (average 60, both outside ±10%) gives throughput × (90 − 60)/90
// × 60% of its leases, by graceful handoff, to the cooler one; the cooler
// one gives nothing.
func TestRunBalancesOnCPU(t *testing.T) {
	r := newRig(t, kcl3fleet.NewApp, Config{}, 12)
	cpu := func(v float64) kcl3fleet.Metrics {
		return kcl3fleet.Metrics{Stats: map[string][]float64{"C": {v, v}}, Range: map[string][]int64{"C": {100}}}
	}
	r.joinWith(kcl3fleet.WorkerConfig{ID: "hot", Metrics: cpu(50)})
	r.joinWith(kcl3fleet.WorkerConfig{ID: "cool", Metrics: cpu(50)})
	r.cycle() // even CPU: 6 each, no rebalancing
	if by, _ := r.owners(); by["hot"] != 6 || by["cool"] != 6 {
		t.Fatalf("owners %v, want 6 each", by)
	}
	r.joinWith(kcl3fleet.WorkerConfig{ID: "hot", Metrics: cpu(90)})
	r.joinWith(kcl3fleet.WorkerConfig{ID: "cool", Metrics: cpu(30)})
	r.m.Reset() // a new leadership: step 2 in its first run
	res := r.run()
	// 6 leases of 1 KBps × 30/90 × 0.6 = 1.2 KBps: one lease.
	if !res.Rebalanced || len(res.Moves) != 1 || res.Moves[0].From != "hot" || res.Moves[0].To != "cool" || !res.Moves[0].Graceful {
		t.Fatalf("run %+v: want one handoff from hot to cool", res)
	}
}

// A worker marked Departed (the previous leader, whose lock was taken over
// as stale) is not active while its last metrics item is still fresh:
// the next run counts the others only and gives its expired leases to
// them. Unmarked, it stays active for up to 60 s more. A later metrics
// item brings it back.
func TestDepartedWorkerIsNotActive(t *testing.T) {
	r := newRig(t, kcl3fleet.NewApp, Config{}, 12)
	r.join("a", "b", "c")
	r.cycle()
	r.cycle()
	r.kill("c")
	r.m.Departed("c", r.clk.Now())
	res := r.run()
	if res.Active != 2 {
		t.Fatalf("active workers right after c departed: %d, want 2 (c's metrics item is fresh but c is gone)", res.Active)
	}
	for range 3 {
		r.cycle()
	}
	if by, _ := r.owners(); by["c"] != 0 || by["a"]+by["b"] != 12 {
		t.Fatalf("owners %v, want all 12 with a and b", by)
	}
	r.advance(time.Second)
	// Back after all (a long pause, not a death): a new metrics item.
	if err := r.f.PutWorkerMetrics(r.ctx, "c", kcl3fleet.Metrics{}, r.clk.Now()); err != nil {
		t.Fatal(err)
	}
	if res := r.run(); res.Active != 3 {
		t.Fatalf("active workers once c wrote metrics again: %d, want 3", res.Active)
	}
}

// An unowned lease at SHARD_END is left alone: it waits for the cleanup.
// (The KCL assigns it; a kcltool worker releases it at once, so every run
// would write it again.) A finished lease still held stays with its owner.
func TestRunLeavesFinishedLeasesUnassigned(t *testing.T) {
	r := newRig(t, kcl3fleet.NewApp, Config{}, 4)
	r.join("a", "b")
	finished := "shardId-000000000003"
	_, err := r.f.DDB.UpdateItem(r.ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(r.f.Tables.Lease),
		Key:                       map[string]ddbtypes.AttributeValue{"leaseKey": &ddbtypes.AttributeValueMemberS{Value: finished}},
		UpdateExpression:          aws.String("SET checkpoint = :e"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":e": &ddbtypes.AttributeValueMemberS{Value: "SHARD_END"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		r.cycle()
	}
	l, err := r.f.Lease(r.ctx, finished)
	if err != nil {
		t.Fatal(err)
	}
	if l.LeaseOwner != "" || l.LeaseCounter != 0 {
		t.Fatalf("finished lease: owner %q, counter %d; want left unowned and unwritten", l.LeaseOwner, l.LeaseCounter)
	}
	if by, _ := r.owners(); by["a"]+by["b"] != 3 {
		t.Fatalf("owners %v, want the 3 open leases assigned", by)
	}
}
