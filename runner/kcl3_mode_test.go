package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
	"github.com/kcltool/kcltool/leasecore"
)

// The leader takes every lease away with plain assignments (no handoff):
// kcltool's runs stop at its next renewal, and nothing is checkpointed
// after the loss.
func TestKCL3LeaderTakesEveryLease(t *testing.T) {
	s := newKCL3Stack(t, 2, kcl3fleet.Layout{Kind: kcl3fleet.NewApp})
	out := outFile(t)
	cfg := s.kcl3Config(t, "kcltool-1", out)
	cfg.BatchSize = 2
	times := timedHandler(t, &cfg, "0.3")
	r := start(t, s.stack, cfg)
	leader := s.leader(t)
	s.put(t, func(k string) string { return "v-" + k }, keys("a", 60)...)
	eventually(t, 30*time.Second, "kcltool handling both shards", func() bool { return len(r.w.heldRuns()) == 2 && len(readSpans(t, times)) >= 2 })

	moved := map[string]leasecore.Lease{}
	for _, key := range s.shards {
		l, err := leader.AssignLease(context.Background(), key, "java-gone")
		if err != nil {
			t.Fatal(err)
		}
		moved[key] = l
	}
	movedAt := time.Now()
	eventually(t, 10*time.Second, "kcltool's runs stopped", func() bool { return len(r.w.heldRuns()) == 0 })
	time.Sleep(time.Second)
	for _, key := range s.shards {
		if got := s.lease(t, key); got.Checkpoint != moved[key].Checkpoint || got.LeaseOwner != "java-gone" {
			t.Errorf("lease %s changed after the leader took it: %+v, want checkpoint %+v owner java-gone", key, got, moved[key].Checkpoint)
		}
	}
	// A batch may have been in flight at the move; none starts once the
	// loss is seen, at the latest a failover time later.
	for _, sp := range readSpans(t, times) {
		if sp.start.After(movedAt.Add(kcl3Failover)) {
			t.Errorf("a batch of %s started at %s, after the leases were taken at %s", sp.shard, sp.start.Format(time.StampMicro), movedAt.Format(time.StampMicro))
		}
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

// cv rolled back to CLIENT_VERSION_2X mid-run: kcltool switches to taking
// without a restart and keeps the leases it holds; it then takes the
// lease a dead worker left. Rolled forward again, it follows the leader.
func TestKCL3RollbackTo2X(t *testing.T) {
	s := newKCL3Stack(t, 2, kcl3fleet.Layout{Kind: kcl3fleet.SideTables})
	java := s.javaWorker(t, "java-1", 0)
	cfg := s.kcl3Config(t, "kcltool-1", outFile(t))
	var buf *logBuffer
	cfg.Log, buf = recordedLogger(t, "kcltool-1")
	r := start(t, s.stack, cfg)
	eventually(t, 10*time.Second, "both workers' metrics", func() bool {
		reps, _ := s.fleet.WorkerMetricsReports(context.Background())
		return len(reps) == 2
	})
	// Both active before the first round: one lease each.
	leader := s.leader(t)
	eventually(t, 30*time.Second, "one lease each", func() bool { return len(r.w.heldRuns()) == 1 && len(java.Held()) == 1 })
	mine := r.w.heldRuns()[0]
	tenure := r.w.runOf(mine).tenure
	leader.Stall()
	java.Kill()

	if err := s.fleet.SetClientVersion(context.Background(), coordination.ClientVersion2X, "test"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the switch to taking", func() bool { return r.w.assignmentIs(leasecore.AssignByTaking) })
	eventually(t, 10*time.Second, "the dead worker's lease taken", func() bool { return len(r.w.heldRuns()) == 2 })
	if run := r.w.runOf(mine); run == nil || run.tenure != tenure {
		t.Errorf("the lease held before the rollback was lost and taken again")
	}
	if strings.Contains(buf.String(), "lease lost") {
		t.Error("a lease was lost across the rollback")
	}
	if err := s.fleet.SetClientVersion(context.Background(), coordination.ClientVersion3X, "test"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the switch back to the leader", func() bool { return r.w.assignmentIs(leasecore.AssignByLeader) })
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

// A KCL 3.x application that appears mid-run (here: a table whose
// Migration3.0 item says CLIENT_VERSION_2X rolled forward to 3X) switches
// kcltool to the leader's assignment without a restart; it keeps its
// leases and reports metrics from then on.
func TestKCL3AppearsMidRun(t *testing.T) {
	s := newKCL3Stack(t, 1, kcl3fleet.Layout{Kind: kcl3fleet.NewApp, ClientVersion: coordination.ClientVersion2X})
	cfg := s.kcl3Config(t, "kcltool-1", outFile(t))
	var buf *logBuffer
	cfg.Log, buf = recordedLogger(t, "kcltool-1")
	r := start(t, s.stack, cfg)
	eventually(t, 20*time.Second, "the lease taken (2.x)", func() bool { return len(r.w.heldRuns()) == 1 })
	if r.w.coordAssignment() != leasecore.AssignByTaking {
		t.Fatalf("assignment %s under CLIENT_VERSION_2X", r.w.coordAssignment())
	}
	if reps, _ := s.fleet.WorkerMetricsReports(context.Background()); len(reps) != 0 {
		t.Errorf("metrics written under CLIENT_VERSION_2X: %+v", reps)
	}
	if err := s.fleet.SetClientVersion(context.Background(), coordination.ClientVersion3X, "test"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the switch to the leader", func() bool { return r.w.assignmentIs(leasecore.AssignByLeader) })
	eventually(t, 10*time.Second, "kcltool's metrics item", func() bool {
		reps, _ := s.fleet.WorkerMetricsReports(context.Background())
		return len(reps) == 1 && reps[0].WorkerID == "kcltool-1"
	})
	if len(r.w.heldRuns()) != 1 || strings.Contains(buf.String(), "lease lost") {
		t.Error("the lease was not kept across the switch")
	}
	if !strings.Contains(buf.String(), "KCL 3.x state changed") {
		t.Error("the switch is not logged")
	}
	select {
	case err := <-r.done:
		t.Fatalf("the worker stopped: %v", err)
	default:
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

// clientVersionConfig decides only while a 3.x table has no Migration3.0
// item, as in the KCL: COMPATIBLE_WITH_2X takes leases and reports metrics
// (CLIENT_VERSION_UPGRADE_FROM_2X); the default follows the leader.
func TestKCL3ClientVersionConfigWithoutMigrationItem(t *testing.T) {
	s := newKCL3Stack(t, 1, kcl3fleet.Layout{Kind: kcl3fleet.NewApp, NoMigrationItem: true})
	cfg := s.kcl3Config(t, "kcltool-1", outFile(t))
	cfg.KCL3.ClientVersionConfig = "CLIENT_VERSION_CONFIG_COMPATIBLE_WITH_2X"
	r := start(t, s.stack, cfg)
	eventually(t, 20*time.Second, "the lease taken without a leader", func() bool { return len(r.w.heldRuns()) == 1 })
	if got := r.w.coordAssignment(); got != leasecore.AssignByTaking {
		t.Errorf("assignment %s, want taking", got)
	}
	eventually(t, 10*time.Second, "kcltool's metrics item", func() bool {
		reps, _ := s.fleet.WorkerMetricsReports(context.Background())
		return len(reps) == 1 && reps[0].WorkerID == "kcltool-1"
	})
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}

	cfg = s.kcl3Config(t, "kcltool-2", outFile(t))
	var buf *logBuffer
	cfg.Log, buf = recordedLogger(t, "kcltool-2")
	r = start(t, s.stack, cfg)
	eventually(t, 20*time.Second, "kcltool-2 started", func() bool { return strings.Contains(buf.String(), "worker started") })
	time.Sleep(3 * time.Second) // two discovery runs
	if got := r.w.coordAssignment(); got != leasecore.AssignByLeader || len(r.w.heldRuns()) != 0 {
		t.Errorf("default clientVersionConfig: assignment %s, %d leases held without a leader; want leader and none", got, len(r.w.heldRuns()))
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}
