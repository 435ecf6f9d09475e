package fleetsim

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

func measure(t *testing.T, e Engine, p Point, o Options) Result {
	t.Helper()
	var r Result
	synctest.Test(t, func(t *testing.T) { r = Measure(e, p, o) })
	return r
}

// TestFleetGoals is the always-on version of TestBenchFleet: two small grid
// points, one on each side of the small-table line, with the goals of issue
// 17 asserted against the KCL 2.x port on the same simulation. It fails when
// a taker change makes kcltool dearer than the KCL, move leases in steady
// state, or take over or balance slower.
func TestFleetGoals(t *testing.T) {
	o := Options{Steady: 5 * time.Minute, CrashLimit: 2 * time.Minute, JoinLimit: 5 * time.Minute}
	for _, tc := range []struct {
		p        Point
		maxRatio float64
	}{
		{Point{64, 2}, 1.05},  // a small table may spend 5% more on fast takeover
		{Point{300, 6}, 1.00}, // beyond 100 leases, no more than the KCL
	} {
		t.Run(tc.p.String(), func(t *testing.T) {
			ours, kcl := measure(t, KCLTool, tc.p, o), measure(t, KCL2, tc.p, o)
			t.Logf("kcltool %.3f units/lease/min (read %.3f), KCL 2.x %.3f (read %.3f); takeover %s vs %s; join %s vs %s",
				ours.Total(), ours.ReadPerLeaseMin, kcl.Total(), kcl.ReadPerLeaseMin, ours.Takeover, kcl.Takeover, ours.Join, kcl.Join)
			// Above 100 leases both engines scan on the same schedule: equal
			// units are the expected outcome, 0.1% is room for rounding.
			if r := ours.Total() / kcl.Total(); r > tc.maxRatio*1.001 {
				t.Errorf("read+write units per lease per minute %.3f, %.3f× KCL 2.x's %.3f (goal ≤ %.2f×)", ours.Total(), r, kcl.Total(), tc.maxRatio)
			}
			if ours.MovesPerMin != 0 {
				t.Errorf("%.2f lease movements per minute in steady state, want 0", ours.MovesPerMin)
			}
			if !ours.TakeoverDone || ours.Takeover > kcl.Takeover {
				t.Errorf("crash takeover %s (done %v), KCL 2.x %s", ours.Takeover, ours.TakeoverDone, kcl.Takeover)
			}
			if ours.Join <= 0 || ours.Join > kcl.Join {
				t.Errorf("a new worker reached %d/%d leases in %s (extrapolated %v), KCL 2.x %s", ours.JoinGained, ours.Fair, ours.Join, ours.JoinExtrapolated, kcl.Join)
			}
		})
	}
}

// TestFleetGoalsWithShardSync prices the run as a whole: the coordinators
// plus kcltool's shard sync (per the runner's rule, kcltool.go) against KCL
// 2.x's leader election and leader audit. A shard sync that scanned the
// table every minute on every worker made kcltool 1.03× KCL 2.x's units.
func TestFleetGoalsWithShardSync(t *testing.T) {
	p := Point{300, 6}
	o := Options{Steady: 5 * time.Minute, ShardSync: true, SkipCrash: true, SkipJoin: true}
	ours, kcl := measure(t, KCLTool, p, o), measure(t, KCL2, p, o)
	t.Logf("kcltool %.3f units/lease/min (read %.3f; shard syncs: %d scanned, %d used the taker's scan), KCL 2.x %.3f (read %.3f)",
		ours.Total(), ours.ReadPerLeaseMin, ours.SyncScans, ours.SyncReuses, kcl.Total(), kcl.ReadPerLeaseMin)
	if r := ours.Total() / kcl.Total(); r > 1.001 {
		t.Errorf("with shard sync, read+write units per lease per minute %.3f, %.3f× KCL 2.x's %.3f (goal ≤ 1×)", ours.Total(), r, kcl.Total())
	}
	if ours.SyncScans != 0 || ours.SyncReuses == 0 {
		t.Errorf("shard syncs in steady state: %d scanned the table, %d used the taker's scan; want every one to use the taker's", ours.SyncScans, ours.SyncReuses)
	}
	if ours.MovesPerMin != 0 {
		t.Errorf("%.2f lease movements per minute in steady state, want 0", ours.MovesPerMin)
	}
}

// TestFleetUnderProvisionedLimit is issue 17's point 4: a table whose write
// capacity lies between what the renewals need (60.5 units/s for 200 leases)
// and the fleet's total demand (the renewals plus 40 units/s of other writes
// that never back off), and whose read capacity is below what the scans
// want. No worker may lose a lease it holds, no lease may move, and the
// workers' own counters must show the throttling. The KCL 2.x port, on the
// same table, loses leases (logged for comparison). At 65 units the other
// writes leave the renewals about 25 a second if they took only what is
// left: enough only because a lease needs one renewal per failover time,
// not three, and the renewer gives the oldest leases the first tries. 45
// units is below the renewals' nominal need; it stays because it is where
// a renewer that lets fresh leases retry as often as those near expiry
// loses leases (about half the runs did), while the renewer that spaces
// retries by the time left lost none in 65 runs. Runs differ only in
// goroutine order, and the renewer lost nothing at any of these points in
// dozens of runs each: a loss here is worth a look, not a rerun.
func TestFleetUnderProvisionedLimit(t *testing.T) {
	p := Point{200, 4}
	for _, wcu := range []float64{45, 55, 65, 75, 85} {
		t.Run(fmt.Sprintf("%.0fWCU", wcu), func(t *testing.T) {
			lim := Limits{ReadCapacity: 0.5, WriteCapacity: wcu, OtherWrites: 40}
			run := func(e Engine) ThrottleResult {
				var r ThrottleResult
				synctest.Test(t, func(t *testing.T) { r = MeasureThrottled(e, p, lim, 5*time.Minute, Options{}) })
				return r
			}
			ours := run(KCLTool)
			kcl := ThrottleResult{Lost: -1, Moves: -1}
			if !testing.Short() {
				kcl = run(KCL2)
			}
			t.Logf("kcltool: lost %d, moved %d, throttled %d %v, other writes served %d throttled %d; KCL 2.x: lost %d, moved %d",
				ours.Lost, ours.Moves, ours.Throttled, ours.ModelThrottled, ours.OtherWriteServed, ours.OtherWriteThrottled, kcl.Lost, kcl.Moves)
			if ours.Lost != 0 || ours.Moves != 0 {
				t.Errorf("under throttling %d leases were lost and %d moved; want none", ours.Lost, ours.Moves)
			}
			if ours.ModelThrottled["UpdateItem"] == 0 || ours.ModelThrottled["Scan"] == 0 {
				t.Fatalf("the table throttled %v: the scenario does not throttle both renewals and scans", ours.ModelThrottled)
			}
			if ours.Throttled == 0 {
				t.Error("the workers' Throttled counters are 0 although the table throttled them")
			}
		})
	}
}
