package kcl3fleet

import (
	"context"
	"regexp"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestSetupLayouts checks that each layout puts every coordination item
// where the KCL 3.5.1 DAOs put it, with the attribute names and types of
// the Java serialisers: the tables, Migration3.0, TableMigration3.5, the
// leader lock and a worker-metrics item.
func TestSetupLayouts(t *testing.T) {
	ddb := emulator.DynamoDB(t)
	ctx := context.Background()
	cases := []struct {
		name       string
		layout     Layout
		sideTables bool
		// where each item must be: "lease", "side" or "" (nowhere)
		migration, tm, tmLease, lock, metrics string
		wantLayout                            coordination.Layout
	}{
		{"new app", Layout{Kind: NewApp}, false, "lease", "", "", "lease", "lease", coordination.LayoutLeaseTable},
		{"3.0-3.4", Layout{Kind: SideTables}, true, "side", "", "", "side", "side", coordination.LayoutSideTables},
		{"deployed", Layout{Kind: SideTables, TableMigration: TableMigrationDeployed}, true, "side", TableMigrationDeployed, "", "side", "side", coordination.LayoutSideTables},
		{"pending", Layout{Kind: Pending}, true, "lease", TableMigrationPending, "", "side", "lease", coordination.LayoutPending},
		{"complete", Layout{Kind: Complete}, true, "lease", TableMigrationComplete, TableMigrationComplete, "lease", "lease", coordination.LayoutLeaseTable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := Setup(t, ddb, tc.layout)
			mustEqual(t, "coordination layout", f.CoordinationLayout(), tc.wantLayout)
			want := []string{f.Tables.Lease}
			if tc.sideTables {
				want = []string{f.Tables.Lease, f.Tables.CoordinatorState, f.Tables.WorkerMetrics}
			}
			all := tableNames(t, ddb, f.Tables.Lease, f.Tables.CoordinatorState, f.Tables.WorkerMetrics)
			mustEqual(t, "tables", all, sortedCopy(want))
			if tc.sideTables {
				checkHashTable(t, ddb, f.Tables.CoordinatorState, "key")
				checkHashTable(t, ddb, f.Tables.WorkerMetrics, "wid")
			}

			// where reads an item from the lease table and the side table and
			// says where it was.
			where := func(key, sideTable, sideKey string) (string, map[string]ddbtypes.AttributeValue) {
				inLease := getItem(t, ddb, f.Tables.Lease, "leaseKey", key)
				var inSide map[string]ddbtypes.AttributeValue
				if tc.sideTables {
					inSide = getItem(t, ddb, sideTable, sideKey, key)
				}
				switch {
				case len(inLease) > 0 && len(inSide) > 0:
					return "both", inLease
				case len(inLease) > 0:
					return "lease", inLease
				case len(inSide) > 0:
					return "side", inSide
				}
				return "", nil
			}

			at, mig := where(MigrationKey, f.Tables.CoordinatorState, "key")
			mustEqual(t, "Migration3.0 is in", at, tc.migration)
			keyAttr := map[string]string{"lease": "leaseKey", "side": "key"}[at]
			mustEqual(t, "Migration3.0 attributes", types(mig), map[string]string{
				keyAttr: "S", "entityType": "S", "cv": "S", "mb": "S", "mts": "N", "h": "L"})
			mustEqual(t, "Migration3.0 cv", str(mig, "cv"), coordination.ClientVersion3X)
			mustEqual(t, "Migration3.0 entityType", str(mig, "entityType"), "CLIENT_VERSION_MIGRATION")
			if h, ok := mig["h"].(*ddbtypes.AttributeValueMemberL); ok && len(h.Value) == 1 {
				e, _ := h.Value[0].(*ddbtypes.AttributeValueMemberM)
				if e == nil {
					t.Fatalf("history entry is %T, want M", h.Value[0])
				}
				mustEqual(t, "history entry attributes", types(e.Value), map[string]string{"cv": "S", "mb": "S", "mts": "N"})
			} else {
				t.Errorf("h = %v, want one history entry", mig["h"])
			}

			tmAt, tm := where(TableMigrationKey, f.Tables.CoordinatorState, "key")
			switch {
			case tc.tm == "":
				mustEqual(t, "TableMigration3.5 is in", tmAt, "")
			case tc.tmLease != "":
				mustEqual(t, "TableMigration3.5 is in", tmAt, "both")
			default:
				mustEqual(t, "TableMigration3.5 is in", tmAt, "side")
			}
			if tc.tm != "" {
				side := getItem(t, ddb, f.Tables.CoordinatorState, "key", TableMigrationKey)
				mustEqual(t, "TableMigration3.5 attributes", types(side), map[string]string{
					"key": "S", "entityType": "S", "tm": "S", "mb": "S", "mts": "N"})
				mustEqual(t, "tm", str(side, "tm"), tc.tm)
				mustEqual(t, "TableMigration3.5 entityType", str(side, "entityType"), "TABLE_MIGRATION")
				_ = tm
			}

			leader := f.NewLeader(LeaderConfig{WorkerID: "leader-1"})
			if ok, err := leader.TakeLock(ctx); err != nil || !ok {
				t.Fatalf("TakeLock = %v, %v", ok, err)
			}
			defer leader.Stall()
			lockAt, lock := where(LeaderKey, f.Tables.CoordinatorState, "key")
			mustEqual(t, "lock is in", lockAt, tc.lock)
			lockKey := map[string]string{"lease": "leaseKey", "side": "key"}[lockAt]
			mustEqual(t, "lock attributes", types(lock), map[string]string{
				lockKey: "S", "entityType": "S", "ownerName": "S", "leaseDuration": "S", "recordVersionNumber": "S"})
			mustEqual(t, "lock entityType", str(lock, "entityType"), "LEADER")
			mustEqual(t, "lock ownerName", str(lock, "ownerName"), "leader-1")
			mustEqual(t, "lock leaseDuration", str(lock, "leaseDuration"), "120000")
			if v := str(lock, "recordVersionNumber"); !uuidRE.MatchString(v) {
				t.Errorf("recordVersionNumber %q is not a random UUID", v)
			}
			mustEqual(t, "LockTable()", f.LockTable(), map[string]string{"lease": f.Tables.Lease, "side": f.Tables.CoordinatorState}[lockAt])

			if err := f.PutWorkerMetrics(ctx, "worker-a", Metrics{}, f.Clock.Now()); err != nil {
				t.Fatal(err)
			}
			mAt, m := where("worker-a", f.Tables.WorkerMetrics, "wid")
			mustEqual(t, "metrics item is in", mAt, tc.metrics)
			mKey := map[string]string{"lease": "leaseKey", "side": "wid"}[mAt]
			mustEqual(t, "metrics attributes", types(m), map[string]string{
				mKey: "S", "entityType": "S", "lut": "N", "sts": "M", "opr": "M", "sup": "N", "slu": "N"})
			mustEqual(t, "metrics entityType", str(m, "entityType"), "WORKER_METRIC_STATS")
			mustEqual(t, "sup", str(m, "sup"), "1")
			reports, err := f.WorkerMetricsReports(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(reports) != 1 || reports[0].WorkerID != "worker-a" {
				t.Errorf("WorkerMetricsReports = %+v, want worker-a's item", reports)
			}
		})
	}
}

func sortedCopy(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func checkHashTable(t *testing.T, ddb *dynamodb.Client, table, hashKey string) {
	t.Helper()
	out, err := ddb.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	d := out.Table
	if len(d.KeySchema) != 1 || aws.ToString(d.KeySchema[0].AttributeName) != hashKey || d.KeySchema[0].KeyType != ddbtypes.KeyTypeHash {
		t.Errorf("%s key schema = %+v, want hash %s only", table, d.KeySchema, hashKey)
	}
	if len(d.AttributeDefinitions) != 1 || d.AttributeDefinitions[0].AttributeType != ddbtypes.ScalarAttributeTypeS {
		t.Errorf("%s attribute definitions = %+v, want %s S", table, d.AttributeDefinitions, hashKey)
	}
	if d.BillingModeSummary == nil || d.BillingModeSummary.BillingMode != ddbtypes.BillingModePayPerRequest {
		t.Errorf("%s billing = %+v, want PAY_PER_REQUEST", table, d.BillingModeSummary)
	}
}
