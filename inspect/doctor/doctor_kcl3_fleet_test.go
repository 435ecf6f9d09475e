package doctor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
	"github.com/kcltool/kcltool/leasecore"
)

// fleetRig is a rig on an application kcl3fleet.Setup made, with the Java
// leader's port holding the lock: the same items another helper wrote from
// the KCL source, read back by doctor.
func fleetRig(t *testing.T, kind kcl3fleet.Kind, failover, window time.Duration) (*rig, *kcl3fleet.Fleet) {
	t.Helper()
	r := &rig{t: t, ddb: emulator.DynamoDB(t), table: emulator.Name(t, "fleet"), failover: failover, window: window,
		clock: clocktest.New(time.Now().UTC().Truncate(time.Second)), leases: map[string]leasecore.Lease{}}
	f := kcl3fleet.Setup(t, r.ddb, kcl3fleet.Layout{Kind: kind, LeaseTable: r.table})
	return r, f
}

// TestDoctorKCL3FleetLayouts: in each layout a heartbeating leader and two
// reporting workers give a leader finding naming the table that holds the
// lock, and no leader-missing or stale-worker-metrics.
func TestDoctorKCL3FleetLayouts(t *testing.T) {
	for _, kind := range []kcl3fleet.Kind{kcl3fleet.NewApp, kcl3fleet.SideTables, kcl3fleet.Pending, kcl3fleet.Complete} {
		t.Run(kind.String(), func(t *testing.T) {
			ctx := context.Background()
			r, f := fleetRig(t, kind, 10*time.Second, 20*time.Second)
			leader := f.NewLeader(kcl3fleet.LeaderConfig{WorkerID: "java-1"})
			if ok, err := leader.TakeLock(ctx); !ok || err != nil {
				t.Fatalf("take lock: %v %v", ok, err)
			}
			if err := f.CreateLeases(ctx, shard(0), shard(1)); err != nil {
				t.Fatal(err)
			}
			for i, w := range []string{"java-1", "java-2"} {
				l, err := leader.AssignLease(ctx, shard(i), w)
				if err != nil {
					t.Fatal(err)
				}
				r.leases[l.LeaseKey] = l
			}
			rep := r.run(func(i int) {
				if err := leader.Heartbeat(ctx); err != nil {
					t.Fatal(err)
				}
				for _, w := range []string{"java-1", "java-2"} {
					if err := f.PutWorkerMetrics(ctx, w, kcl3fleet.Metrics{}, r.clock.Now()); err != nil {
						t.Fatal(err)
					}
				}
				if i > 0 {
					r.renewAll()
				}
			})
			absent(t, rep, FindLeaderMissing, FindLeaderStale, FindStaleMetrics)
			want(t, rep, FindLeader, SeverityInfo, "KCL 3.x leader: java-1 (lock in "+f.LockTable()+")")
		})
	}
}

// TestDoctorKCL3FleetStalledLeader: the leader port's Stall keeps the lock
// item and stops its heartbeat (issue #1803's dead leader): critical once
// the version has not moved for the lock's leaseDuration.
func TestDoctorKCL3FleetStalledLeader(t *testing.T) {
	ctx := context.Background()
	r, f := fleetRig(t, kcl3fleet.SideTables, 10*time.Second, 30*time.Second)
	leader := f.NewLeader(kcl3fleet.LeaderConfig{WorkerID: "java-1", LockLeaseDuration: 20 * time.Second})
	if ok, err := leader.TakeLock(ctx); !ok || err != nil {
		t.Fatalf("take lock: %v %v", ok, err)
	}
	leader.Stall()
	if err := f.CreateLeases(ctx, shard(0)); err != nil {
		t.Fatal(err)
	}
	l, err := leader.AssignLease(ctx, shard(0), "java-2")
	if err != nil {
		t.Fatal(err)
	}
	r.leases[l.LeaseKey] = l
	rep := r.run(func(i int) {
		if err := f.PutWorkerMetrics(ctx, "java-2", kcl3fleet.Metrics{}, r.clock.Now()); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			r.renewAll()
		}
	})
	fd := want(t, rep, FindLeaderStale, SeverityCritical, "issue #1803")
	if want := `{"key":{"S":"Leader"}}`; !strings.Contains(fd.Fix, want) || !strings.Contains(fd.Fix, "--table-name "+f.LockTable()) {
		t.Errorf("fix %q lacks the side table's key or name", fd.Fix)
	}
}
