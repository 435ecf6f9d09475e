package doctor

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// newKCL3Rig is a rig whose lease table has the LeaseOwnerToLeaseKeyIndex,
// as every KCL 3.x lease table does.
func newKCL3Rig(t *testing.T, failover, window time.Duration) *rig {
	t.Helper()
	r := &rig{t: t, ddb: emulator.DynamoDB(t), table: emulator.Name(t, "doc3"), failover: failover, window: window,
		clock: clocktest.New(time.Now().UTC().Truncate(time.Second)), leases: map[string]leasecore.Lease{}}
	emulator.CreateKCL3LeaseTable(t, r.ddb, r.table)
	return r
}

// sideTables creates <app>-CoordinatorState (hash "key") and
// <app>-WorkerMetricStats (hash "wid") with the KCL's key schemas
// (CoordinatorStateDAO, WorkerMetricStatsDAO).
func (r *rig) sideTables() {
	r.t.Helper()
	for _, tbl := range []struct{ suffix, key string }{{"-CoordinatorState", "key"}, {"-WorkerMetricStats", "wid"}} {
		_, err := r.ddb.CreateTable(context.Background(), &dynamodb.CreateTableInput{TableName: aws.String(r.table + tbl.suffix), BillingMode: ddbtypes.BillingModePayPerRequest,
			KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String(tbl.key), KeyType: ddbtypes.KeyTypeHash}},
			AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String(tbl.key), AttributeType: ddbtypes.ScalarAttributeTypeS}}})
		if err != nil {
			r.t.Fatal(err)
		}
		w := dynamodb.NewTableExistsWaiter(r.ddb, func(o *dynamodb.TableExistsWaiterOptions) {
			o.MinDelay, o.MaxDelay = 20*time.Millisecond, 200*time.Millisecond
		})
		if err := w.Wait(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(r.table + tbl.suffix)}, 30*time.Second); err != nil {
			r.t.Fatal(err)
		}
	}
}

func (r *rig) putIn(table string, item map[string]ddbtypes.AttributeValue) {
	r.t.Helper()
	if _, err := r.ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		r.t.Fatal(err)
	}
}

// sideLock writes the lock client's Leader item in <app>-CoordinatorState.
func (r *rig) sideLock(owner, version, leaseMillis string) {
	r.putIn(r.table+"-CoordinatorState", map[string]ddbtypes.AttributeValue{"key": s("Leader"), "ownerName": s(owner),
		"leaseDuration": s(leaseMillis), "recordVersionNumber": s(version)})
}

// metricsAttrs are a WorkerMetricStats item's attributes
// (WorkerMetricStats @DynamoDbAttribute names): lut and slu epoch seconds,
// sts and opr maps of lists, sup the support code.
func metricsAttrs(lut time.Time, sup bool) map[string]ddbtypes.AttributeValue {
	item := map[string]ddbtypes.AttributeValue{"lut": n(lut.Unix()),
		"sts": &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{"C": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{n(41)}}}},
		"opr": &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{"C": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{n(100)}}}}}
	if sup {
		item["sup"], item["slu"] = n(1), n(lut.Unix())
	}
	return item
}

// sideMetrics writes a worker's item in <app>-WorkerMetricStats (keyed wid).
func (r *rig) sideMetrics(worker string, lut time.Time, sup bool) {
	item := metricsAttrs(lut, sup)
	item["wid"] = s(worker)
	r.putIn(r.table+"-WorkerMetricStats", item)
}

// tableMetrics writes a worker's item in the lease table (keyed leaseKey,
// entityType WORKER_METRIC_STATS).
func (r *rig) tableMetrics(worker string, lut time.Time, sup bool) {
	item := metricsAttrs(lut, sup)
	item["leaseKey"], item["entityType"] = s(worker), s("WORKER_METRIC_STATS")
	r.putItem(item)
}

// sideState writes Migration3.0 or TableMigration3.5 in
// <app>-CoordinatorState (MigrationState, TableMigrationState: the status
// as S, mb S, mts N epoch millis).
func (r *rig) sideState(key, attr, value string, at time.Time) {
	r.putIn(r.table+"-CoordinatorState", map[string]ddbtypes.AttributeValue{"key": s(key), attr: s(value), "mb": s("w1"), "mts": n(at.UnixMilli())})
}

// TestDoctorKCL3Pending: tm PENDING, the lock still in
// <app>-CoordinatorState, one worker's metrics in the lease table and one
// in the side table. doctor reads both, as the KCL does: a leader, no
// leader-missing, no worker without metrics; and, since a worker still
// reports to the side table, the leader's next run would roll tm back:
// kcl3-migration says so. The old doctor read the side tables only when
// the lease table held no non-lease item, and reported leader-missing.
func TestDoctorKCL3Pending(t *testing.T) {
	r := newKCL3Rig(t, 10*time.Second, 20*time.Second)
	r.sideTables()
	start := r.clock.Now()
	r.sideState("TableMigration3.5", "tm", "TABLE_MIGRATION_STATUS_PENDING", start.Add(-2*time.Hour))
	r.putItem(map[string]ddbtypes.AttributeValue{"leaseKey": s("Migration3.0"), "cv": s("CLIENT_VERSION_3X"), "mb": s("w1"),
		"mts": n(start.Add(-48 * time.Hour).UnixMilli()), "entityType": s("CLIENT_VERSION_MIGRATION")})
	r.create(leasecore.Lease{LeaseKey: shard(0), LeaseOwner: "w1", LeaseCounter: 3})
	r.create(leasecore.Lease{LeaseKey: shard(1), LeaseOwner: "w2", LeaseCounter: 3})
	// w1 is a kcltool worker: its own reporter writes its item where the
	// state says (the lease table under PENDING), judged like a Java one's.
	tables := coordination.DefaultTables(r.table, r.table)
	st, err := coordination.Detect(context.Background(), r.ddb, tables)
	if err != nil {
		t.Fatal(err)
	}
	kcltool := coordination.NewReporter(r.ddb, tables, "w1", r.clock, coordination.ReporterOptions{})
	kcltool.SetState(st)
	rep := r.run(func(i int) {
		r.sideLock("w1", fmt.Sprintf("v%d", i), "120000") // heartbeating
		if err := kcltool.Report(context.Background()); err != nil || kcltool.Table() != r.table {
			t.Fatalf("kcltool's reporter: %v, wrote to %q", err, kcltool.Table())
		}
		r.sideMetrics("w2", r.clock.Now(), true)
		if i > 0 {
			r.renewAll()
		}
	})
	absent(t, rep, FindLeaderMissing, FindLeaderStale, FindStaleMetrics)
	want(t, rep, FindLeader, SeverityInfo, "KCL 3.x leader: w1 (lock in "+r.table+"-CoordinatorState)")
	m := want(t, rep, FindKCL3Migration, SeverityWarn, "TABLE_MIGRATION_STATUS_PENDING → TABLE_MIGRATION_STATUS_COMPLETE")
	if ev := strings.Join(m.Evidence.Lines, "\n"); !strings.Contains(ev, "w2: reports its worker metrics to "+r.table+"-WorkerMetricStats") || strings.Contains(ev, "w1:") {
		t.Errorf("kcl3-migration evidence:\n%s", ev)
	}
}

// kcl35DeadLeader writes a KCL 3.5 fleet's Migration3.0 (cv 3X, by w1) and
// a leader lock held by w1 whose version no test moves: leaseDuration 20s.
func (r *rig) kcl35DeadLeader() {
	r.putItem(map[string]ddbtypes.AttributeValue{"leaseKey": s("Migration3.0"), "cv": s("CLIENT_VERSION_3X"),
		"mb": s("w1"), "mts": n(r.clock.Now().UnixMilli()), "entityType": s("CLIENT_VERSION_MIGRATION")})
	r.putItem(map[string]ddbtypes.AttributeValue{"leaseKey": s("Leader"), "ownerName": s("w1"),
		"leaseDuration": s("20000"), "recordVersionNumber": s("3f1c2a9e"), "entityType": s("LEADER")})
}

// TestDoctorKCL3Issue1803: a 3.5 single-table fleet whose leader died
// holding the lock: the version does not move for longer than the lock's
// leaseDuration. No KCL worker takes such a lock (KCL issue #1803), so it
// is critical, and the fix is the conditional delete of the Leader item.
func TestDoctorKCL3Issue1803(t *testing.T) {
	r := newKCL3Rig(t, 10*time.Second, 30*time.Second)
	r.kcl35DeadLeader()
	r.create(leasecore.Lease{LeaseKey: shard(0), LeaseOwner: "w2", LeaseCounter: 3})
	rep := r.run(func(i int) {
		r.tableMetrics("w2", r.clock.Now(), true)
		if i > 0 {
			r.renewAll()
		}
	})
	f := want(t, rep, FindLeaderStale, SeverityCritical, "has not been renewed for 30s, longer than its leaseDuration 20s", "issue #1803")
	for _, s := range []string{"delete-item --table-name " + r.table, `{"leaseKey":{"S":"Leader"}}`, "recordVersionNumber = :v", `"3f1c2a9e"`} {
		if !strings.Contains(f.Fix, s) {
			t.Errorf("fix lacks %q: %s", s, f.Fix)
		}
	}
	if f.Evidence.Values["lockUnchangedMillis"] != 30000 {
		t.Errorf("values %v", f.Evidence.Values)
	}
}

// indexStatus answers DescribeTable of the lease table with the index in
// the given status: dynalite makes an index ACTIVE within milliseconds of
// CreateTable and builds none added later, so CREATING cannot be held on
// the server itself.
type indexStatus struct {
	TableAPI
	status ddbtypes.IndexStatus
}

func (x indexStatus) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	out, err := x.TableAPI.DescribeTable(ctx, in, opts...)
	if err == nil && out.Table != nil {
		for i := range out.Table.GlobalSecondaryIndexes {
			out.Table.GlobalSecondaryIndexes[i].IndexStatus = x.status
		}
	}
	return out, err
}

// TestDoctorKCL3MigrationBlocked: under CLIENT_VERSION_UPGRADE_FROM_2X the
// leader flips cv only when the index is ACTIVE and every lease owner has
// fresh worker metrics, steadily for 10 minutes after its 1-minute check
// (MigrationReadyMonitor). What blocks is named; it is a problem only once
// cv has waited longer than that.
func TestDoctorKCL3MigrationBlocked(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cvAge    time.Duration
		index    ddbtypes.IndexStatus
		stale    bool // w2's metrics are 5 minutes old
		sev      Severity
		blockers []string
	}{
		{"stale-worker-overdue", 20 * time.Minute, ddbtypes.IndexStatusActive, true, SeverityWarn, []string{"w2: owns 1 lease, no worker metrics newer than 1m0s"}},
		{"index-creating-overdue", 20 * time.Minute, ddbtypes.IndexStatusCreating, false, SeverityWarn, []string{"index LeaseOwnerToLeaseKeyIndex CREATING, not ACTIVE"}},
		{"stale-worker-within-wait", 3 * time.Minute, ddbtypes.IndexStatusActive, true, SeverityInfo, []string{"w2: owns 1 lease"}},
		{"nothing-blocks", 20 * time.Minute, ddbtypes.IndexStatusActive, false, SeverityInfo, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newKCL3Rig(t, 10*time.Second, 10*time.Second)
			r.ddbVia = func(api TableAPI) TableAPI { return indexStatus{api, tc.index} }
			start := r.clock.Now()
			r.putItem(map[string]ddbtypes.AttributeValue{"leaseKey": s("Migration3.0"), "cv": s("CLIENT_VERSION_UPGRADE_FROM_2X"),
				"mb": s("w1"), "mts": n(start.Add(-tc.cvAge).UnixMilli()), "entityType": s("CLIENT_VERSION_MIGRATION")})
			r.leaderLock("w1", "v0")
			r.create(leasecore.Lease{LeaseKey: shard(0), LeaseOwner: "w1", LeaseCounter: 3})
			r.create(leasecore.Lease{LeaseKey: shard(1), LeaseOwner: "w2", LeaseCounter: 3})
			rep := r.run(func(i int) {
				r.leaderLock("w1", fmt.Sprintf("v%d", i))
				r.tableMetrics("w1", r.clock.Now(), false)
				if tc.stale {
					r.tableMetrics("w2", start.Add(-5*time.Minute), false)
				} else {
					r.tableMetrics("w2", r.clock.Now(), false)
				}
				if i > 0 {
					r.renewAll()
				}
			})
			f := want(t, rep, FindKCL3Migration, tc.sev, "CLIENT_VERSION_UPGRADE_FROM_2X → CLIENT_VERSION_3X_WITH_ROLLBACK")
			ev := strings.Join(f.Evidence.Lines, "\n")
			for _, b := range tc.blockers {
				if !strings.Contains(ev, "blocked by "+b) {
					t.Errorf("evidence lacks %q:\n%s", b, ev)
				}
			}
			if got := int(f.Evidence.Values["blockers"]); got != len(tc.blockers) {
				t.Errorf("blockers %d, want %d:\n%s", got, len(tc.blockers), ev)
			}
		})
	}
}

// TestDoctorKCL3TableMigrationInit: KCL 3.5's phase 1 in a side-table
// application: tm INIT was written 2 hours ago, past the 1-hour bake to
// DEPLOYED, and a lease owner without the support code (a KCL 3.4 worker:
// no sup) holds it back (TableMigrationStateMachineImpl.isMinSupportCodeMet).
func TestDoctorKCL3TableMigrationInit(t *testing.T) {
	r := newKCL3Rig(t, 10*time.Second, 10*time.Second)
	r.sideTables()
	start := r.clock.Now()
	r.sideState("TableMigration3.5", "tm", "TABLE_MIGRATION_STATUS_INIT", start.Add(-2*time.Hour))
	r.sideState("Migration3.0", "cv", "CLIENT_VERSION_3X", start.Add(-48*time.Hour))
	r.create(leasecore.Lease{LeaseKey: shard(0), LeaseOwner: "w1", LeaseCounter: 3})
	r.create(leasecore.Lease{LeaseKey: shard(1), LeaseOwner: "w2", LeaseCounter: 3})
	rep := r.run(func(i int) {
		r.sideLock("w1", fmt.Sprintf("v%d", i), "120000")
		r.sideMetrics("w1", r.clock.Now(), true)
		r.sideMetrics("w2", r.clock.Now(), false)
		if i > 0 {
			r.renewAll()
		}
	})
	absent(t, rep, FindLeaderMissing, FindStaleMetrics)
	f := want(t, rep, FindKCL3Migration, SeverityWarn, "TABLE_MIGRATION_STATUS_INIT → TABLE_MIGRATION_STATUS_DEPLOYED", "1 condition blocks it")
	if ev := strings.Join(f.Evidence.Lines, "\n"); !strings.Contains(ev, "blocked by w2: sup is not 1") || !strings.Contains(ev, "written 2h0m") {
		t.Errorf("evidence:\n%s", ev)
	}
}

// TestDoctorKCL3LockWatchedAcrossWindows: a watch keeps one window of reads,
// yet follows the lock's version since the first read that saw it, so a
// lock older than its leaseDuration (issue #1803) shows in a window shorter
// than that.
func TestDoctorKCL3LockWatchedAcrossWindows(t *testing.T) {
	r := newKCL3Rig(t, 10*time.Second, 10*time.Second)
	ctx := context.Background()
	r.putItem(map[string]ddbtypes.AttributeValue{"leaseKey": s("Leader"), "ownerName": s("w1"),
		"leaseDuration": s("20000"), "recordVersionNumber": s("dead"), "entityType": s("LEADER")})
	r.create(leasecore.Lease{LeaseKey: shard(0), LeaseOwner: "w2", LeaseCounter: 3})
	d, err := New(ctx, r.apis(), r.options())
	if err != nil {
		t.Fatal(err)
	}
	var samples []sample
	for i := range 4 { // reads at 0s, 10s, 20s, 30s
		if i > 0 {
			r.clock.Advance(10 * time.Second)
			r.renewAll()
		}
		r.tableMetrics("w2", r.clock.Now(), true)
		smp, err := d.takeSample(ctx)
		if err != nil {
			t.Fatal(err)
		}
		samples = append(samples, smp)
	}
	rep, err := d.diagnose(ctx, samples[2:]) // the watch's last window: 10s
	if err != nil {
		t.Fatal(err)
	}
	want(t, rep, FindLeaderStale, SeverityCritical, "not been renewed for 30s, longer than its leaseDuration 20s")
}
