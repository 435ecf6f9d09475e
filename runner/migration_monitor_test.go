package runner

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// setClock is a clock the test moves by hand: the monitor's checks are
// called directly, so nothing waits on its timers.
type setClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *setClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}
func (c *setClock) NewTimer(d time.Duration) clock.Timer { return clock.RealClock().NewTimer(d) }
func (c *setClock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// monitorRig is a 3.x lease table (with the index) under cv
// UPGRADE_FROM_2X, and monitors of workers w1 and w2 on a hand-set clock
// with the KCL's timings (a check a minute, 10 minutes to stabilize).
type monitorRig struct {
	t     *testing.T
	ddb   *dynamodb.Client
	table string
	clk   *setClock
}

func newMonitorRig(t *testing.T) *monitorRig {
	c := emulator.DynamoDB(t)
	r := &monitorRig{t: t, ddb: c, table: emulator.Name(t, "app"), clk: &setClock{now: time.Unix(1_800_000_000, 0)}}
	emulator.CreateKCL3LeaseTable(t, c, r.table)
	r.put(map[string]ddbtypes.AttributeValue{"leaseKey": sv("Migration3.0"), "entityType": sv(coordination.EntityClientMigration),
		"cv": sv(coordination.ClientVersionUpgradeFrom2X), "mb": sv("kcltool-migration-start"), "mts": nvi(r.clk.Now().UnixMilli())})
	return r
}

func sv(s string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: s} }
func nvi(n int64) ddbtypes.AttributeValue {
	return &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func (r *monitorRig) put(item map[string]ddbtypes.AttributeValue) {
	r.t.Helper()
	if _, err := r.ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(r.table), Item: item}); err != nil {
		r.t.Fatal(err)
	}
}

func (r *monitorRig) lease(key, owner string) {
	r.put(map[string]ddbtypes.AttributeValue{"leaseKey": sv(key), "leaseOwner": sv(owner), "leaseCounter": nvi(1),
		"checkpoint": sv("TRIM_HORIZON"), "checkpointSubSequenceNumber": nvi(0), "ownerSwitchesSinceCheckpoint": nvi(0)})
}

// metrics writes the worker's metrics item with lut = the clock's now.
func (r *monitorRig) metrics(worker string) {
	r.put(map[string]ddbtypes.AttributeValue{"leaseKey": sv(worker), "entityType": sv(coordination.EntityWorkerMetrics),
		"lut": nvi(r.clk.Now().Unix()), "sts": &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{}}})
}

func (r *monitorRig) monitor(id string) *migrationMonitor {
	cfg := DefaultConfig()
	cfg.App, cfg.Table, cfg.WorkerID = r.table, r.table, id
	w := &Worker{cfg: cfg, ddb: r.ddb, leaseDDB: r.ddb, clock: r.clk, log: testLogger(r.t, id).With("worker", id)}
	return newMigrationMonitor(w)
}

func (r *monitorRig) cv() coordination.State {
	r.t.Helper()
	st, err := coordination.Detect(context.Background(), r.ddb, coordination.DefaultTables(r.table, r.table))
	if err != nil {
		r.t.Fatal(err)
	}
	return st
}

// The monitor's rules end to end on a hand-set clock: only the shuffle's
// leader (w1 of w1, w2) checks; it flips only after 10 minutes of passing
// checks; a failed check (w2's metrics gone stale) starts the 10 minutes
// again; the flip is the conditional cv write, by w1.
func TestMigrationMonitorFlipsAfterStableChecks(t *testing.T) {
	r := newMonitorRig(t)
	r.lease("shard-0", "w1")
	r.lease("shard-1", "w2")
	if got := coordination.ShuffleLeaders([]string{"w1", "w2"}, 1); !slices.Equal(got, []string{"w1"}) {
		t.Fatalf("shuffle leader %q, the test expects w1", got)
	}
	m1, m2 := r.monitor("w1"), r.monitor("w2")
	t0 := r.clk.Now()
	flippedAt := -1
	for min := 0; min <= 20 && flippedAt < 0; min++ {
		r.clk.set(t0.Add(time.Duration(min) * time.Minute))
		r.metrics("w1")
		if min != 5 { // at minute 5 w2's item is 2 minutes old: the check fails
			r.metrics("w2")
		}
		for _, m := range []*migrationMonitor{m2, m1} {
			if err := m.check(context.Background()); err != nil {
				t.Fatalf("minute %d: %s's check: %v", min, m.w.cfg.WorkerID, err)
			}
		}
		if st := r.cv(); st.ClientVersion == coordination.ClientVersion3XWithRollback {
			flippedAt = min
			if st.ClientVersionBy != "w1" || !st.ClientVersionAt.Equal(r.clk.Now()) {
				t.Errorf("flipped by %q at %s, want w1 at the check's time", st.ClientVersionBy, st.ClientVersionAt)
			}
		}
	}
	// Passing from minute 0, failed at 5, passing again from 6: due at 16.
	if flippedAt != 16 {
		t.Fatalf("cv flipped at minute %d, want 16 (10 minutes after the checks passed again at 6)", flippedAt)
	}
	if m2.leading {
		t.Error("w2 thinks it leads the 2.x fleet")
	}
}

// Under cv changed by someone else (a rollback) the leader writes nothing,
// however long its checks have passed.
func TestMigrationMonitorLeavesRollbackAlone(t *testing.T) {
	r := newMonitorRig(t)
	r.lease("shard-0", "w1")
	m := r.monitor("w1")
	t0 := r.clk.Now()
	for min := 0; min <= 12; min++ {
		r.clk.set(t0.Add(time.Duration(min) * time.Minute))
		r.metrics("w1")
		if min == 10 {
			r.put(map[string]ddbtypes.AttributeValue{"leaseKey": sv("Migration3.0"), "entityType": sv(coordination.EntityClientMigration),
				"cv": sv(coordination.ClientVersion2X), "mb": sv("KclMigrationTool-rollback"), "mts": nvi(r.clk.Now().UnixMilli())})
		}
		if err := m.check(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if st := r.cv(); st.ClientVersion != coordination.ClientVersion2X || st.ClientVersionBy != "KclMigrationTool-rollback" {
		t.Fatalf("cv %s by %s after a rollback, want the rollback kept", st.ClientVersion, st.ClientVersionBy)
	}
}

// The election follows the decider's schedule: at the first check, a
// minute later, then every five minutes; owners that change in between
// do not move the leadership until the next election.
func TestMigrationMonitorElectionSchedule(t *testing.T) {
	r := newMonitorRig(t)
	r.lease("shard-0", "w1")
	r.lease("shard-1", "w2")
	m := r.monitor("w2")
	t0 := r.clk.Now()
	at := func(d time.Duration) bool {
		r.clk.set(t0.Add(d))
		return m.isLeader(context.Background())
	}
	if at(0) {
		t.Fatal("w2 leads at the first election; w1 is the shuffle's pick")
	}
	r.lease("shard-0", "w2") // w1 is gone: w2 owns everything
	if at(30 * time.Second) {
		t.Error("re-elected before the decider's first scheduled election")
	}
	if !at(time.Minute) {
		t.Error("not re-elected a minute after the first election")
	}
	r.lease("shard-0", "w1") // w1 is back
	if !at(time.Minute + 4*time.Minute) {
		t.Error("re-elected before five minutes")
	}
	if at(time.Minute + 5*time.Minute) {
		t.Error("not re-elected five minutes after the second election")
	}
}
