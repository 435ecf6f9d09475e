package fleetsim

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kcltool/kcltool/coordination/assignment"
	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
)

// TestLedJava reproduces the Java leader's behaviour on the port before
// any figure is claimed: with lock client 1.4.0 under the KCL's decider a
// leader killed with kill -9 is never replaced (KCL issue #1803), so its
// leases stay its own; a contender that takes a lock left unchanged for its
// leaseDuration (LeadJavaStale, the description) replaces it no
// sooner than the lock's 120 s, and its first run judges every lease live
// (it has seen no counters), so the dead worker's leases wait for a
// second run.
func TestLedJava(t *testing.T) {
	p := Point{Leases: 16, Workers: 4}
	o := LedOptions{Steady: 2 * time.Minute, KillLimit: 6 * time.Minute, Java: kcl3fleet.LeaderConfig{LeaseCount: true}}
	t.Run("lock client 1.4.0", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := MeasureLed(LeadJava, Java3, p, o)
			t.Logf("%+v", r)
			if r.KillDone || r.NewLeaderDone {
				t.Errorf("killed Java leader replaced after %s (leases reassigned after %s); lock client 1.4.0 never takes a held lock over", r.NewLeader, r.Kill)
			}
			if !r.CrashDone {
				t.Errorf("a crashed follower's leases were not reassigned under a live leader")
			}
			if r.MovesPerMin != 0 {
				t.Errorf("steady state moved %.2f leases a minute", r.MovesPerMin)
			}
		})
	})
	t.Run("stale takeover", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := MeasureLed(LeadJavaStale, Java3, p, o)
			t.Logf("%+v", r)
			if !r.KillDone || !r.NewLeaderDone {
				t.Fatalf("killed leader's leases not reassigned in %s", o.KillLimit)
			}
			if r.NewLeader < 120*time.Second {
				t.Errorf("new leader after %s, before the lock's 120 s", r.NewLeader)
			}
			// Two runs after the takeover: the first sees every counter
			// for the first time.
			if r.Kill-r.NewLeader < KCL3AssignmentInterval {
				t.Errorf("dead leader's leases reassigned %s after the takeover, within one run", r.Kill-r.NewLeader)
			}
		})
	})
}

// TestJavaNewLeaderTwoRuns: the Java leader port's first run after it takes
// the lock judges no lease expired (it clears the previous run's state,
// prepareAfterLeaderSwitch, and counts a lease first seen with an owner as
// just renewed); the second, one interval later, finds the dead worker's
// unchanged counters and assigns its leases.
func TestJavaNewLeaderTwoRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		f := NewFleet3(Java3, 4, time.Second, kcl3fleet.LeaderConfig{})
		defer f.Stop()
		for _, k := range f.Model.Keys() {
			if !strings.HasPrefix(k, "shardId-") {
				continue
			}
			if _, err := f.Leader.AssignLease(ctx, k, "dead"); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.KCL3.PutWorkerMetrics(ctx, "live", kcl3fleet.Metrics{}, f.Now()); err != nil {
			t.Fatal(err)
		}
		l := f.KCL3.NewLeader(kcl3fleet.LeaderConfig{WorkerID: "new", JavaSchedule: true})
		r1, err := l.RunOnce(ctx)
		if err != nil || !r1.Leader {
			t.Fatalf("first run: %+v, %v", r1, err)
		}
		if len(r1.Expired) != 0 {
			t.Errorf("the new leader's first run judged %d leases expired", len(r1.Expired))
		}
		f.Run(KCL3AssignmentInterval, nil)
		r2, err := l.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(r2.Expired) != 4 || len(r2.Moves) != 4 {
			t.Errorf("second run: %d expired, %d moves; want the dead worker's 4", len(r2.Expired), len(r2.Moves))
		}
		l.Stall()
	})
}

// TestRollingJava: a rolling deploy of a Java-led fleet of the Java port
// ends with every lease read again; a stopped Java worker's leases wait
// for expiry (two runs: 20-40 s) and its item's staleness, so some shard
// goes unread for more than one assignment interval.
func TestRollingJava(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := MeasureRolling(LeadJava, Java3, Point{Leases: 16, Workers: 4}, LedOptions{Java: kcl3fleet.LeaderConfig{LeaseCount: true}})
		t.Logf("%+v", r)
		if r.Longest < KCL3AssignmentInterval {
			t.Errorf("longest unread %s: less than one assignment interval, though Java leaves its leases to expire", r.Longest)
		}
	})
}

// TestLedKCLTool: a fleet of kcltool's coordinators led by the production
// LeaderLock and assignment.Manager assigns every lease, moves nothing in
// steady state, and after its leader is killed with kill -9 has the dead
// leader's leases owned elsewhere within the bound the issue sets: the
// lock's leaseDuration (2 × failover) + two assignment intervals + the
// failover time.
func TestLedKCLTool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The lease-count strategy; the default (throughput) strategy's
		// steady state is TestLedKCLToolThroughputSteady's.
		r := MeasureLed(LeadKCLTool, KCLTool3, Point{Leases: 16, Workers: 4}, LedOptions{Steady: 2 * time.Minute, KillLimit: 6 * time.Minute,
			Assign: assignment.Config{Strategy: assignment.ByLeaseCount}})
		t.Logf("%+v", r)
		bound := 2*KCLToolFailover + 2*KCL3AssignmentInterval + KCLToolFailover
		if !r.KillDone || r.Kill > bound {
			t.Errorf("killed leader's leases owned elsewhere after %s (done %v), bound %s", r.Kill, r.KillDone, bound)
		}
		if !r.CrashDone {
			t.Errorf("a crashed follower's leases were not reassigned")
		}
		if r.MovesPerMin != 0 {
			t.Errorf("steady state moved %.2f leases a minute", r.MovesPerMin)
		}
	})
}

// TestRollingKCLTool: in a rolling deploy of a kcltool-led fleet, no shard
// goes unread for two assignment intervals: a stopping worker deletes its
// metrics item and evicts its leases, and the leader (or the next one, the
// lock released) assigns them at its next run.
func TestRollingKCLTool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := MeasureRolling(LeadKCLTool, KCLTool3, Point{Leases: 16, Workers: 4}, LedOptions{Assign: assignment.Config{Strategy: assignment.ByLeaseCount}})
		t.Logf("%+v", r)
		if r.Longest >= 2*KCL3AssignmentInterval {
			t.Errorf("longest unread %s, two assignment intervals or more", r.Longest)
		}
	})
}
