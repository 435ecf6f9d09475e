package doctor

import (
	"strings"
	"testing"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/leasecore"
)

// stoppedFleet writes what a fleet leaves after a graceful stop: each
// lease released (no leaseOwner) at its checkpoint, one shard finished.
func (r *rig) stoppedFleet(entityType string) {
	r.create(leasecore.Lease{LeaseKey: shard(0), LeaseCounter: 40, EntityType: entityType,
		Checkpoint: leasecore.SequenceNumber{SequenceNumber: leasecore.SHARD_END}})
	for i := 1; i <= 2; i++ {
		r.create(leasecore.Lease{LeaseKey: shard(i), LeaseCounter: 40, EntityType: entityType, ParentShardIDs: []string{shard(0)},
			Checkpoint: leasecore.SequenceNumber{SequenceNumber: "49590338271490256608559692538361571095921575989136588898"}})
	}
}

// TestDoctorNoWorkers: a KCL 2.x fleet stopped cleanly leaves leases
// without owners: no-workers, a warning (so the default --fail-on warn
// exits 3), and neither dead-worker nor unassigned-leases. A crashed fleet
// keeps its owners: dead-worker, critical, and no no-workers.
func TestDoctorNoWorkers(t *testing.T) {
	t.Run("stopped", func(t *testing.T) {
		r := newRig(t, time.Second, 3*time.Second)
		r.stoppedFleet("")
		rep := r.run(func(int) {})
		f := want(t, rep, FindNoWorkers, SeverityWarn, "no worker is running: 2 leases to process, none owned in 4 reads over 3s")
		if !contains(f.Evidence.Shards, shard(1)) || contains(f.Evidence.Shards, shard(0)) {
			t.Errorf("no-workers shards %v: want the leases not at SHARD_END", f.Evidence.Shards)
		}
		absent(t, rep, FindDeadWorker, FindUnassigned)
		// Fed a view's reads (top), the summary counts the reads made so
		// far, not the window still to come.
		reps := r.follow(2, 2*time.Second, func(int) {})
		want(t, reps[0], FindNoWorkers, SeverityWarn, "none owned in 1 read")
		want(t, reps[1], FindNoWorkers, SeverityWarn, "none owned in 2 reads over 2s")
		if len(rep.AtLeast(SeverityWarn)) == 0 {
			t.Errorf("nothing at warn: doctor would exit 0\n%s", dump(rep))
		}
	})
	t.Run("crashed", func(t *testing.T) {
		// F + 2T is 5.1s at a 1s failover: a 6s window makes it critical.
		r := newRig(t, time.Second, 6*time.Second)
		r.fleet("w1", "w2")
		rep := r.run(func(int) {})
		want(t, rep, FindDeadWorker, SeverityCritical, "2 workers renewed no lease")
		absent(t, rep, FindNoWorkers)
	})
}

// TestDoctorNoWorkersKCL3: a KCL 3.x fleet stopped cleanly, its leader
// lock gone and its worker metrics stale, is no-workers too.
func TestDoctorNoWorkersKCL3(t *testing.T) {
	r := newRig(t, time.Second, 3*time.Second)
	start := r.clock.Now()
	r.putItem(map[string]ddbtypes.AttributeValue{"leaseKey": s("Migration3.0"), "cv": s("CLIENT_VERSION_3X"),
		"mb": s("w1"), "mts": n(start.Add(-time.Hour).UnixMilli()), "entityType": s("CLIENT_VERSION_MIGRATION")})
	r.workerMetrics("w1", start.Add(-5*time.Minute))
	r.stoppedFleet("LEASE")
	rep := r.run(func(int) {})
	if !rep.KCL3 {
		t.Fatalf("not read as KCL 3.x:\n%s", dump(rep))
	}
	f := want(t, rep, FindNoWorkers, SeverityWarn, "no worker is running: 2 leases to process")
	if !strings.Contains(f.Cause, "no KCL 3.x worker reports fresh worker metrics") {
		t.Errorf("cause %q", f.Cause)
	}
	absent(t, rep, FindDeadWorker, FindUnassigned)
}
