package runner

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
)

// kcl3LeaderConfig is a kcltool worker that contends for the leader lock
// (kcl3Config makes followers only), with the test timings: failover
// 1.5 s, so the lock's leaseDuration is 3 s and the assignment runs every
// 3 s.
func (s kcl3Stack) kcl3LeaderConfig(t *testing.T, id string) Config {
	t.Helper()
	cfg := s.kcl3Config(t, id, outFile(t))
	cfg.KCL3.NoLeader = false
	return cfg
}

// lockOwner is the Leader item's ownerName, "" when there is none.
func (s kcl3Stack) lockOwner(t *testing.T) string {
	t.Helper()
	l, ok, err := s.fleet.ReadLock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return ""
	}
	return l.Owner
}

// allOwnedBy reports whether every lease is owned by one of ids.
func (s kcl3Stack) allOwnedBy(t *testing.T, ids ...string) bool {
	t.Helper()
	for _, o := range s.owners(t) {
		ok := false
		for _, id := range ids {
			ok = ok || o == id
		}
		if !ok {
			return false
		}
	}
	return true
}

// A fleet of kcltool workers only, on a 3.x table whose leases nobody
// owns: they elect one leader, which assigns every lease; when the leader
// dies (a crash-like stop: nothing released, the lock left to go stale),
// another worker takes the lock over after its leaseDuration and assigns
// the dead worker's leases to the live ones. The takeover time is logged
// beside the bound leader-lease + 2 × assignment interval + failover; the
// test waits generously and asserts no time.
func TestKCL3KcltoolFleetElectsLeader(t *testing.T) {
	for _, kind := range []kcl3fleet.Kind{kcl3fleet.NewApp, kcl3fleet.SideTables} {
		t.Run(kind.String(), func(t *testing.T) {
			s := newKCL3Stack(t, 6, kcl3fleet.Layout{Kind: kind})
			ids := []string{"kcltool-1", "kcltool-2", "kcltool-3"}
			rs := map[string]*running{}
			for _, id := range ids {
				rs[id] = start(t, s.stack, s.kcl3LeaderConfig(t, id))
			}
			eventually(t, 60*time.Second, "every lease assigned to a worker", func() bool { return s.allOwnedBy(t, ids...) })
			leader := s.lockOwner(t)
			if rs[leader] == nil {
				t.Fatalf("lock owner %q is none of the workers", leader)
			}
			leaders := 0
			for _, id := range ids {
				if rs[id].w.leader.Stats().Leader {
					leaders++
				}
			}
			if leaders != 1 {
				t.Fatalf("%d workers call themselves leader, want 1", leaders)
			}
			if st := rs[leader].w.leader.Stats(); st.Runs == 0 || st.Assigned == 0 {
				t.Errorf("leader's stats %+v: want runs and assignments counted", st)
			}
			// Every worker gets a share (the lease-count or throughput
			// balance reaches all three within a few runs).
			eventually(t, 60*time.Second, "every worker holding a lease", func() bool {
				n := map[string]int{}
				for _, o := range s.owners(t) {
					n[o]++
				}
				return n[ids[0]] > 0 && n[ids[1]] > 0 && n[ids[2]] > 0
			})

			killed := time.Now()
			rs[leader].kill()
			<-rs[leader].done
			rs[leader].done <- nil
			var live []string
			for _, id := range ids {
				if id != leader {
					live = append(live, id)
				}
			}
			eventually(t, 90*time.Second, "a new leader assigning the dead worker's leases", func() bool {
				o := s.lockOwner(t)
				return (o == live[0] || o == live[1]) && s.allOwnedBy(t, live...)
			})
			took := time.Since(killed)
			bound := 2*kcl3Failover + 2*(2*kcl3Failover) + kcl3Failover
			t.Logf("MEASURED %s: leader killed -> its leases held by live workers after %s (bound leader-lease + 2 x assignment interval + failover = %s)", kind, took.Round(10*time.Millisecond), bound)
		})
	}
}

// A graceful stop of the leader releases the lock after its leases: the
// lock item is gone (or already another worker's) when Run returns, and
// a follower takes it at its next poll rather than after the lock's
// leaseDuration.
func TestKCL3LeaderStopReleasesLock(t *testing.T) {
	s := newKCL3Stack(t, 2, kcl3fleet.Layout{Kind: kcl3fleet.NewApp})
	a := start(t, s.stack, s.kcl3LeaderConfig(t, "kcltool-a"))
	eventually(t, 30*time.Second, "kcltool-a leading", func() bool { return s.lockOwner(t) == "kcltool-a" })
	cfgB := s.kcl3LeaderConfig(t, "kcltool-b")
	b := start(t, s.stack, cfgB)
	eventually(t, 30*time.Second, "every lease assigned", func() bool { return s.allOwnedBy(t, "kcltool-a", "kcltool-b") })
	if err := a.stop(t); err != nil {
		t.Fatal(err)
	}
	if o := s.lockOwner(t); o == "kcltool-a" {
		t.Fatal("the stopped leader's lock is still there: not released")
	}
	eventually(t, 30*time.Second, "kcltool-b leading and holding every lease", func() bool {
		return s.lockOwner(t) == "kcltool-b" && s.allOwnedBy(t, "kcltool-b")
	})
	if err := b.stop(t); err != nil {
		t.Fatal(err)
	}
}

// A kcltool leader with followers that follow the Java rules (kcl3fleet
// OtherWorker: metrics reported, leases found through the index, renewed,
// handed over): every lease is assigned, the Java workers get theirs.
func TestKCL3KcltoolLeadsJavaFollowers(t *testing.T) {
	s := newKCL3Stack(t, 6, kcl3fleet.Layout{Kind: kcl3fleet.SideTables})
	j1 := s.javaWorker(t, "java-1", 0)
	j2 := s.javaWorker(t, "java-2", 0)
	r := start(t, s.stack, s.kcl3LeaderConfig(t, "kcltool-1"))
	eventually(t, 60*time.Second, "every lease assigned", func() bool { return s.allOwnedBy(t, "kcltool-1", j1.ID(), j2.ID()) })
	if o := s.lockOwner(t); o != "kcltool-1" {
		t.Fatalf("lock owner %q, want kcltool-1", o)
	}
	eventually(t, 60*time.Second, "each Java follower holding a lease", func() bool {
		n := map[string]int{}
		for _, o := range s.owners(t) {
			n[o]++
		}
		return n[j1.ID()] > 0 && n[j2.ID()] > 0
	})
	// Its own metrics reported, the leader balances leases onto itself
	// too: a graceful handoff from a Java follower (initiateGracefulLeaseHandoff,
	// then the follower's transfer).
	eventually(t, 90*time.Second, "kcltool-1 holding a lease handed over by a Java follower", func() bool {
		n := 0
		for _, o := range s.owners(t) {
			if o == "kcltool-1" {
				n++
			}
		}
		return n > 0 && r.w.leader.Stats().HandedOff > 0
	})
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

// The Java port's leader with kcltool followers that contend: while the
// Java leader heartbeats, no kcltool worker takes the lock nor assigns;
// when it dies holding the lock (heartbeats stop), a kcltool worker takes
// the lock over after the item's own leaseDuration and assigns.
func TestKCL3JavaLeaderThenKcltoolTakesOver(t *testing.T) {
	s := newKCL3Stack(t, 4, kcl3fleet.Layout{Kind: kcl3fleet.SideTables})
	java := s.leader(t)
	eventually(t, 10*time.Second, "the Java leader holding the lock", func() bool { return s.lockOwner(t) == java.ID() })
	r1 := start(t, s.stack, s.kcl3LeaderConfig(t, "kcltool-1"))
	r2 := start(t, s.stack, s.kcl3LeaderConfig(t, "kcltool-2"))
	eventually(t, 60*time.Second, "the Java leader assigning every lease", func() bool { return s.allOwnedBy(t, "kcltool-1", "kcltool-2") })
	// Several lock lease durations (3 s) of a live Java leader.
	time.Sleep(8 * time.Second)
	if o := s.lockOwner(t); o != java.ID() {
		t.Fatalf("lock owner %q while the Java leader heartbeats, want %s", o, java.ID())
	}
	for _, r := range []*running{r1, r2} {
		if st := r.w.leader.Stats(); st.Terms != 0 || st.Runs != 0 {
			t.Fatalf("%s led under a live Java leader: %+v", r.w.WorkerID(), st)
		}
	}
	died := time.Now()
	java.Stall()
	eventually(t, 60*time.Second, "a kcltool worker holding the lock", func() bool {
		o := s.lockOwner(t)
		return o == "kcltool-1" || o == "kcltool-2"
	})
	t.Logf("MEASURED: Java leader died holding a 3 s lock -> kcltool took it over after %s", time.Since(died).Round(10*time.Millisecond))
	// The new leader assigns: kill the other worker, its leases move.
	newLeader, other := r1, r2
	if s.lockOwner(t) == "kcltool-2" {
		newLeader, other = r2, r1
	}
	other.kill()
	<-other.done
	other.done <- nil
	eventually(t, 60*time.Second, "the dead follower's leases assigned by the kcltool leader", func() bool {
		return s.allOwnedBy(t, newLeader.w.WorkerID())
	})
	if err := newLeader.stop(t); err != nil {
		t.Fatal(err)
	}
}

// A kcltool leader killed in a mixed fleet: the Java port's followers do
// not contend (KCL 3.5.1 contenders never take over a lock they can read,
// #1803), the other kcltool worker does, and assigns the dead leader's
// leases to itself and the Java follower.
func TestKCL3KcltoolLeaderKilledInMixedFleet(t *testing.T) {
	s := newKCL3Stack(t, 4, kcl3fleet.Layout{Kind: kcl3fleet.NewApp})
	j := s.javaWorker(t, "java-1", 0)
	a := start(t, s.stack, s.kcl3LeaderConfig(t, "kcltool-a"))
	eventually(t, 30*time.Second, "kcltool-a leading", func() bool { return s.lockOwner(t) == "kcltool-a" })
	b := start(t, s.stack, s.kcl3LeaderConfig(t, "kcltool-b"))
	eventually(t, 60*time.Second, "every lease assigned", func() bool { return s.allOwnedBy(t, "kcltool-a", "kcltool-b", j.ID()) })
	killed := time.Now()
	a.kill()
	<-a.done
	a.done <- nil
	eventually(t, 90*time.Second, "kcltool-b leading, the dead leader's leases reassigned", func() bool {
		return s.lockOwner(t) == "kcltool-b" && s.allOwnedBy(t, "kcltool-b", j.ID())
	})
	t.Logf("MEASURED: kcltool leader killed in a mixed fleet -> leases reassigned after %s", time.Since(killed).Round(10*time.Millisecond))
	if err := b.stop(t); err != nil {
		t.Fatal(err)
	}
}

// A follower never syncs shards on the timer in KCL 3.x mode (the
// leader's audit does, PeriodicShardSyncManager), and skips the sync at
// start when the table has leases: no whole-table scan per follower.
func TestKCL3FollowerDoesNotSync(t *testing.T) {
	s := newKCL3Stack(t, 2, kcl3fleet.Layout{Kind: kcl3fleet.NewApp})
	s.leader(t)
	cfg := s.kcl3Config(t, "kcltool-1", outFile(t))     // a follower only
	cfg.KCL3.ShardAuditInterval = cfg.ShardSyncInterval // the loop ticks every second
	r := start(t, s.stack, cfg)
	eventually(t, 30*time.Second, "leases assigned", func() bool { return s.allOwnedBy(t, "kcltool-1") })
	time.Sleep(4 * cfg.ShardSyncInterval)
	if n := r.w.syncs.Load(); n != 0 {
		t.Errorf("a 3.x follower ran %d shard syncs, want 0", n)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

// The leader's audit (PeriodicShardSyncManager): a shard whose lease is
// missing leaves a hole in the leases' hash ranges; the leader syncs once
// it has seen the same hole in 3 audits in a row, and the lease appears.
func TestKCL3LeaderAuditFillsHole(t *testing.T) {
	s := newKCL3Stack(t, 3, kcl3fleet.Layout{Kind: kcl3fleet.NewApp})
	missing := s.shards[1]
	if _, err := s.ddb.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
		TableName: aws.String(s.table), Key: map[string]ddbtypes.AttributeValue{"leaseKey": &ddbtypes.AttributeValueMemberS{Value: missing}},
	}); err != nil {
		t.Fatal(err)
	}
	cfg := s.kcl3LeaderConfig(t, "kcltool-1")
	cfg.KCL3.ShardAuditInterval = 500 * time.Millisecond
	var buf *logBuffer
	cfg.Log, buf = recordedLogger(t, "kcltool-1")
	r := start(t, s.stack, cfg)
	eventually(t, 60*time.Second, "the missing lease created by the leader's audit", func() bool {
		_, ok := s.owners(t)[missing]
		return ok
	})
	logs := buf.String()
	for _, want := range []string{"seen=1", "seen=2", "the same hash range hole in 3 audits in a row"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the audit's log lacks %q", want)
		}
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

// scanFailingDDB fails every Scan of the lease table while fail is set:
// the leader's assignment runs fail.
type scanFailingDDB struct {
	DynamoDBAPI
	table string
	fail  *atomic.Bool
}

func (d scanFailingDDB) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	if d.fail.Load() && aws.ToString(in.TableName) == d.table {
		return nil, errors.New("injected: scan refused")
	}
	return d.DynamoDBAPI.Scan(ctx, in, opts...)
}

// Three failed assignment runs in a row: the leader gives the lock up
// (LeaseAssignmentManager's releaseLeadershipIfHeld), deleting it, and
// leads again at a later poll once nobody else holds it.
func TestKCL3LeaderGivesUpAfterFailedRuns(t *testing.T) {
	s := newKCL3Stack(t, 2, kcl3fleet.Layout{Kind: kcl3fleet.NewApp})
	cfg := s.kcl3LeaderConfig(t, "kcltool-1")
	var buf *logBuffer
	cfg.Log, buf = recordedLogger(t, "kcltool-1")
	fail := &atomic.Bool{}
	r := startWith(t, s.stack, cfg, scanFailingDDB{DynamoDBAPI: s.ddb, table: s.table, fail: fail})
	eventually(t, 30*time.Second, "kcltool-1 leading", func() bool { return r.w.leader.Stats().Runs > 0 })
	fail.Store(true)
	eventually(t, 60*time.Second, "the leadership given up", func() bool { return r.w.leader.Stats().GiveUps > 0 })
	st := r.w.leader.Stats()
	if st.RunFailures < 3 {
		t.Errorf("gave up after %d failed runs, want 3", st.RunFailures)
	}
	if !strings.Contains(buf.String(), "leader lock released") {
		t.Error("the lock was not released at the give-up")
	}
	fail.Store(false)
	eventually(t, 30*time.Second, "leading again", func() bool { st := r.w.leader.Stats(); return st.Terms >= 2 && st.Leader })
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}
