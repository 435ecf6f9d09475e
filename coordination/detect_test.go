package coordination

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kcltool/kcltool/leasecore"
)

func wantState(t *testing.T, st State, layout Layout, a leasecore.Assignment, metrics bool) {
	t.Helper()
	if st.Layout != layout || st.Assignment != a || st.ReportMetrics != metrics {
		t.Fatalf("Detect = layout %v, %v, metrics %v; want %v, %v, %v (reason %q)",
			st.Layout, st.Assignment, st.ReportMetrics, layout, a, metrics, st.Reason)
	}
}

func TestDetectPlain2x(t *testing.T) {
	r := newRig(t, false, false)
	r.lease("shardId-000000000000", "w1")
	st := r.detect()
	wantState(t, st, LayoutNone, leasecore.AssignByTaking, false)
	if st.SideTables || st.Index != "" || st.ClientVersion != "" || st.TableMigration != "" {
		t.Fatalf("evidence on a 2.x table: %+v", st)
	}
	want := "KCL 2.x (no Migration3.0 item; no index LeaseOwnerToLeaseKeyIndex)"
	if st.Reason != want {
		t.Fatalf("Reason = %q, want %q", st.Reason, want)
	}
}

// KCL 3.0 - 3.4: everything in the side tables, no TableMigration3.5.
func TestDetectSideTables(t *testing.T) {
	r := newRig(t, true, true)
	r.migration(r.tb.CoordinatorState, ClientVersion3X)
	r.lock(r.tb.CoordinatorState, "java-1", "v1")
	r.metrics(r.tb.WorkerMetrics, "java-1", 1764900000, 12, 13)
	st := r.detect()
	wantState(t, st, LayoutSideTables, leasecore.AssignByLeader, true)
	want := "KCL 3.x (Migration3.0 cv=CLIENT_VERSION_3X in " + r.tb.CoordinatorState +
		"; index LeaseOwnerToLeaseKeyIndex ACTIVE; no TableMigration3.5 item: side tables)"
	if st.Reason != want {
		t.Fatalf("Reason = %q, want %q", st.Reason, want)
	}
	if st.ClientVersionBy != "worker-a" || !st.ClientVersionAt.Equal(time.UnixMilli(1764900000000)) {
		t.Fatalf("mb/mts = %q %v", st.ClientVersionBy, st.ClientVersionAt)
	}
	if tbl, key := st.MetricsTable(r.tb); tbl != r.tb.WorkerMetrics || key != "wid" {
		t.Fatalf("MetricsTable = %s %s", tbl, key)
	}
	lock, err := ReadLock(context.Background(), r.c, r.tb, st)
	if err != nil || !lock.Found || lock.Owner != "java-1" || lock.Version != "v1" || lock.LeaseDuration != 20*time.Second || lock.Table != r.tb.CoordinatorState {
		t.Fatalf("ReadLock = %+v, %v", lock, err)
	}
	ms, err := ListWorkerMetrics(context.Background(), r.c, r.tb, st)
	if err != nil || len(ms) != 1 || ms[0].WorkerID != "java-1" || ms[0].Table != r.tb.WorkerMetrics {
		t.Fatalf("ListWorkerMetrics = %+v, %v", ms, err)
	}
	m := ms[0]
	if !m.LastUpdate.Equal(time.Unix(1764900000, 0)) || !m.SupportsMigration || !m.SupportsMigrationAt.Equal(time.Unix(1764900000, 0)) ||
		len(m.Samples["C"]) != 2 || m.Samples["C"][1] != 13 || len(m.OperatingRange["C"]) != 1 || m.OperatingRange["C"][0] != 100 {
		t.Fatalf("decoded %+v", m)
	}
}

func TestDetectDeployed(t *testing.T) {
	r := newRig(t, true, true)
	r.migration(r.tb.CoordinatorState, ClientVersion3X)
	r.tableMigration(r.tb.CoordinatorState, TableMigrationDeployed)
	st := r.detect()
	wantState(t, st, LayoutSideTables, leasecore.AssignByLeader, true)
	if !strings.Contains(st.Reason, "tm DEPLOYED in "+r.tb.CoordinatorState) {
		t.Fatalf("Reason = %q", st.Reason)
	}
}

// PENDING: writes go to the lease table, reads merge, the lock stays in the
// side table.
func TestDetectPending(t *testing.T) {
	r := newRig(t, true, true)
	r.tableMigration(r.tb.CoordinatorState, TableMigrationPending)
	// The leader moved Migration3.0 to the lease table before PENDING.
	r.migration(r.tb.Lease, ClientVersion3X)
	r.lock(r.tb.CoordinatorState, "java-1", "v7")
	r.lock(r.tb.Lease, "stale", "v0") // not where the lock is read under PENDING
	r.metrics(r.tb.WorkerMetrics, "both-lease-newer", 100, 1)
	r.metrics(r.tb.Lease, "both-lease-newer", 200, 2)
	r.metrics(r.tb.WorkerMetrics, "both-side-newer", 300, 3)
	r.metrics(r.tb.Lease, "both-side-newer", 250, 4)
	r.metrics(r.tb.WorkerMetrics, "side-only", 100, 5)
	r.metrics(r.tb.Lease, "lease-only", 100, 6)
	r.lease("shardId-000000000000", "lease-only")
	st := r.detect()
	wantState(t, st, LayoutPending, leasecore.AssignByLeader, true)
	if st.ClientVersionIn != r.tb.Lease || !strings.Contains(st.Reason, "tm PENDING") {
		t.Fatalf("cv in %q, reason %q", st.ClientVersionIn, st.Reason)
	}
	if tbl, key := st.MetricsTable(r.tb); tbl != r.tb.Lease || key != "leaseKey" {
		t.Fatalf("MetricsTable = %s %s", tbl, key)
	}
	lock, err := ReadLock(context.Background(), r.c, r.tb, st)
	if err != nil || lock.Owner != "java-1" || lock.Table != r.tb.CoordinatorState {
		t.Fatalf("ReadLock = %+v, %v", lock, err)
	}
	ms, err := ListWorkerMetrics(context.Background(), r.c, r.tb, st)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, m := range ms {
		got[m.WorkerID] = m.Samples["C"][0]
	}
	want := map[string]float64{"both-lease-newer": 2, "both-side-newer": 3, "side-only": 5, "lease-only": 6}
	if len(got) != len(want) {
		t.Fatalf("workers %v, want %v", got, want)
	}
	for w, c := range want {
		if got[w] != c {
			t.Fatalf("worker %s: C %v, want %v (all %v)", w, got[w], c, got)
		}
	}
}

// COMPLETE: the lease table only, even where the side table still holds
// stale copies.
func TestDetectComplete(t *testing.T) {
	r := newRig(t, true, true)
	r.tableMigration(r.tb.CoordinatorState, TableMigrationComplete)
	r.tableMigration(r.tb.Lease, TableMigrationComplete)
	r.migration(r.tb.CoordinatorState, ClientVersion2X) // stale: not read once COMPLETE
	r.migration(r.tb.Lease, ClientVersion3X)
	r.lock(r.tb.CoordinatorState, "old", "v0")
	r.lock(r.tb.Lease, "java-2", "v9")
	r.metrics(r.tb.WorkerMetrics, "gone", 900)
	r.metrics(r.tb.Lease, "java-2", 100, 40)
	st := r.detect()
	wantState(t, st, LayoutLeaseTable, leasecore.AssignByLeader, true)
	if st.ClientVersion != ClientVersion3X || st.ClientVersionIn != r.tb.Lease {
		t.Fatalf("cv %q in %q", st.ClientVersion, st.ClientVersionIn)
	}
	lock, err := ReadLock(context.Background(), r.c, r.tb, st)
	if err != nil || lock.Owner != "java-2" || lock.Table != r.tb.Lease {
		t.Fatalf("ReadLock = %+v, %v", lock, err)
	}
	ms, err := ListWorkerMetrics(context.Background(), r.c, r.tb, st)
	if err != nil || len(ms) != 1 || ms[0].WorkerID != "java-2" {
		t.Fatalf("ListWorkerMetrics = %+v, %v", ms, err)
	}
}

// A new KCL 3.5 application: no side tables, everything in the lease table.
func TestDetectNew35(t *testing.T) {
	r := newRig(t, true, false)
	r.migration(r.tb.Lease, ClientVersion3X)
	r.lock(r.tb.Lease, "java-1", "v1")
	r.metrics(r.tb.Lease, "java-1", 100, 10)
	r.lease("shardId-000000000000", "java-1")
	st := r.detect()
	wantState(t, st, LayoutLeaseTable, leasecore.AssignByLeader, true)
	want := "KCL 3.x (Migration3.0 cv=CLIENT_VERSION_3X in " + r.tb.Lease +
		"; index LeaseOwnerToLeaseKeyIndex ACTIVE; no " + r.tb.CoordinatorState + ": all items in the lease table)"
	if st.Reason != want {
		t.Fatalf("Reason = %q, want %q", st.Reason, want)
	}
	if tbl, key := st.MetricsTable(r.tb); tbl != r.tb.Lease || key != "leaseKey" {
		t.Fatalf("MetricsTable = %s %s", tbl, key)
	}
	lock, err := ReadLock(context.Background(), r.c, r.tb, st)
	if err != nil || lock.Owner != "java-1" {
		t.Fatalf("ReadLock = %+v, %v", lock, err)
	}
	ms, err := ListWorkerMetrics(context.Background(), r.c, r.tb, st)
	if err != nil || len(ms) != 1 || ms[0].WorkerID != "java-1" {
		t.Fatalf("ListWorkerMetrics = %+v, %v (the lease must not count)", ms, err)
	}
}

// The index and nothing else: a 3.x worker's default start.
func TestDetectIndexWithoutMigrationItem(t *testing.T) {
	r := newRig(t, true, false)
	st := r.detect()
	wantState(t, st, LayoutLeaseTable, leasecore.AssignByLeader, true)
	if !strings.Contains(st.Reason, "default clientVersionConfig") {
		t.Fatalf("Reason = %q", st.Reason)
	}
}

// No index, no Migration3.0, but the leader lock in the lease table.
func TestDetectLeaderLockOnly(t *testing.T) {
	r := newRig(t, false, false)
	r.lock(r.tb.Lease, "java-1", "v1")
	st := r.detect()
	wantState(t, st, LayoutLeaseTable, leasecore.AssignByLeader, true)
	if !st.LeaderLockSeen || !strings.Contains(st.Reason, "leader lock in") {
		t.Fatalf("state %+v", st)
	}
}

func TestDetectClientVersions(t *testing.T) {
	cases := []struct {
		cv      string
		a       leasecore.Assignment
		metrics bool
		label   string
	}{
		{ClientVersion3X, leasecore.AssignByLeader, true, "KCL 3.x ("},
		{ClientVersion3XWithRollback, leasecore.AssignByLeader, true, "KCL 3.x ("},
		{ClientVersionUpgradeFrom2X, leasecore.AssignByTaking, true, "KCL 3.x upgrading from 2.x ("},
		{ClientVersion2X, leasecore.AssignByTaking, false, "KCL 3.x rolled back to 2.x ("},
	}
	for _, c := range cases {
		t.Run(c.cv, func(t *testing.T) {
			for _, side := range []bool{true, false} {
				r := newRig(t, true, side)
				table, layout := r.tb.Lease, LayoutLeaseTable
				if side {
					table, layout = r.tb.CoordinatorState, LayoutSideTables
				}
				r.migration(table, c.cv)
				st := r.detect()
				wantState(t, st, layout, c.a, c.metrics)
				if !strings.HasPrefix(st.Reason, c.label) || !strings.Contains(st.Reason, "cv="+c.cv+" in "+table) {
					t.Fatalf("Reason = %q", st.Reason)
				}
			}
		})
	}
}

func TestDetectUnknownClientVersion(t *testing.T) {
	r := newRig(t, true, false)
	r.migration(r.tb.Lease, "CLIENT_VERSION_4X")
	_, err := Detect(context.Background(), r.c, r.tb)
	if err == nil {
		t.Fatal("Detect accepted an unknown client version")
	}
	// The message names the value, where it is and the fix.
	for _, want := range []string{"CLIENT_VERSION_4X", r.tb.Lease, "Migration3.0", "kcltool release that knows it"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Detect error %q lacks %q", err, want)
		}
	}
}

func TestDetectMissingLeaseTable(t *testing.T) {
	c := newRig(t, false, false).c
	_, err := Detect(context.Background(), c, DefaultTables("no-such-table-x", "no-such-table-x"))
	var nf *leasecore.TableNotFoundError
	if !errorsAs(err, &nf) {
		t.Fatalf("Detect error = %v, want a TableNotFoundError", err)
	}
}

// A side table the worker may not describe is no evidence: when its items
// can be read it counts as present; when nothing can be read Reason says so.
func TestDetectAccessDenied(t *testing.T) {
	r := newRig(t, true, true)
	r.migration(r.tb.CoordinatorState, ClientVersion3X)
	r.tableMigration(r.tb.CoordinatorState, TableMigrationDeployed)

	describeOnly := denyAPI{r.c, func(op, table string) bool { return op == "DescribeTable" && table != r.tb.Lease }}
	st, err := Detect(context.Background(), describeOnly, r.tb)
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, st, LayoutSideTables, leasecore.AssignByLeader, true)
	if st.CoordinatorStateTable != PresencePresent || st.WorkerMetricsTable != PresenceUnknown || st.TableMigration != TableMigrationDeployed {
		t.Fatalf("state %+v", st)
	}
	if !strings.Contains(st.Reason, r.tb.WorkerMetrics+" may not be described (AccessDenied)") {
		t.Fatalf("Reason = %q", st.Reason)
	}

	nothing := denyAPI{r.c, func(op, table string) bool { return table != r.tb.Lease }}
	st, err = Detect(context.Background(), nothing, r.tb)
	if err != nil {
		t.Fatal(err)
	}
	if st.CoordinatorStateTable != PresenceUnknown || !strings.Contains(st.Reason, r.tb.CoordinatorState+" may not be described (AccessDenied)") {
		t.Fatalf("state %+v", st)
	}
	// The index still shows a 3.x application; the side tables stay the
	// layout, since only a missing side table means a single-table one.
	wantState(t, st, LayoutSideTables, leasecore.AssignByLeader, true)
}

// Under PENDING the lock is read from the side table; when it is not there
// (the leader finished the step to COMPLETE and took the lock in the lease
// table before this worker saw it), from the lease table; when nowhere,
// Found is false and Table names where it should be.
func TestReadLockFallback(t *testing.T) {
	r := newRig(t, true, true)
	r.tableMigration(r.tb.CoordinatorState, TableMigrationPending)
	r.migration(r.tb.Lease, ClientVersion3X)
	st := r.detect()
	ctx := context.Background()
	lock, err := ReadLock(ctx, r.c, r.tb, st)
	if err != nil || lock.Found || lock.Table != r.tb.CoordinatorState {
		t.Fatalf("no lock: %+v, %v", lock, err)
	}
	r.lock(r.tb.Lease, "java-3", "v1")
	lock, err = ReadLock(ctx, r.c, r.tb, st)
	if err != nil || !lock.Found || lock.Owner != "java-3" || lock.Table != r.tb.Lease {
		t.Fatalf("lock in the lease table: %+v, %v", lock, err)
	}
}

// A WorkerMetricStats table the worker may not describe nor scan is
// skipped; the lease table's items are still listed.
func TestListWorkerMetricsUnreadableSideTable(t *testing.T) {
	r := newRig(t, true, true)
	r.tableMigration(r.tb.CoordinatorState, TableMigrationPending)
	r.migration(r.tb.Lease, ClientVersion3X)
	r.metrics(r.tb.WorkerMetrics, "side", 100, 1)
	r.metrics(r.tb.Lease, "lease", 100, 2)
	api := denyAPI{r.c, func(op, table string) bool { return table == r.tb.WorkerMetrics }}
	st, err := Detect(context.Background(), api, r.tb)
	if err != nil || st.WorkerMetricsTable != PresenceUnknown {
		t.Fatalf("Detect = %+v, %v", st, err)
	}
	ms, err := ListWorkerMetrics(context.Background(), api, r.tb, st)
	if err != nil || len(ms) != 1 || ms[0].WorkerID != "lease" {
		t.Fatalf("ListWorkerMetrics = %+v, %v", ms, err)
	}
}

// countAPI counts the calls Detect makes.
type countAPI struct {
	*dynamodb.Client
	mu    sync.Mutex
	calls map[string]int
}

func (c *countAPI) note(op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[op]++
}

func (c *countAPI) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	c.note("DescribeTable")
	return c.Client.DescribeTable(ctx, in, o...)
}

func (c *countAPI) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.note("GetItem")
	return c.Client.GetItem(ctx, in, o...)
}

// Detect is cheap enough to repeat every shard sync: three describes and
// at most three single-item reads, whatever the layout.
func TestDetectCost(t *testing.T) {
	for _, c := range []struct {
		name        string
		index, side bool
		setup       func(r *rig)
		gets        int
	}{
		{"2.x", false, false, func(r *rig) {}, 3},                                                            // tm, cv, Leader in the lease table
		{"side tables", true, true, func(r *rig) { r.migration(r.tb.CoordinatorState, ClientVersion3X) }, 2}, // tm, cv in the side table
		{"pending", true, true, func(r *rig) {
			r.tableMigration(r.tb.CoordinatorState, TableMigrationPending)
			r.migration(r.tb.Lease, ClientVersion3X)
		}, 3}, // tm; cv: side table, then the lease table
		{"lease table", true, false, func(r *rig) { r.migration(r.tb.Lease, ClientVersion3X) }, 2}, // tm, cv in the lease table
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.index, c.side)
			c.setup(r)
			api := &countAPI{Client: r.c, calls: map[string]int{}}
			if _, err := Detect(context.Background(), api, r.tb); err != nil {
				t.Fatal(err)
			}
			if api.calls["DescribeTable"] != 3 || api.calls["GetItem"] != c.gets {
				t.Fatalf("calls %v, want 3 DescribeTable and %d GetItem", api.calls, c.gets)
			}
		})
	}
}
