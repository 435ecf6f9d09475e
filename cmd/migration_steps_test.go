package cmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
	"github.com/kcltool/kcltool/leasecore"
)

// migrationItem reads Migration3.0 from table (keyed keyAttr); nil when absent.
func migrationItem(t *testing.T, ddb *dynamodb.Client, table, keyAttr string) map[string]ddbtypes.AttributeValue {
	t.Helper()
	out, err := ddb.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{keyAttr: &ddbtypes.AttributeValueMemberS{Value: "Migration3.0"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Item) == 0 {
		return nil
	}
	return out.Item
}

func sAttr(item map[string]ddbtypes.AttributeValue, name string) string {
	if v, ok := item[name].(*ddbtypes.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// tableIndex is the LeaseOwnerToLeaseKeyIndex's status, "" when absent.
func tableIndex(t *testing.T, ddb *dynamodb.Client, table string) string {
	t.Helper()
	d, err := leasecore.DescribeTable(context.Background(), ddb, table)
	if err != nil || d == nil {
		t.Fatalf("describe %s: %v", table, err)
	}
	for _, g := range d.GlobalSecondaryIndexes {
		if aws.ToString(g.IndexName) == leasecore.KCL3IndexName {
			return string(g.IndexStatus)
		}
	}
	return ""
}

func createHashTable(t *testing.T, ddb *dynamodb.Client, name, key string) {
	t.Helper()
	if _, err := ddb.CreateTable(context.Background(), &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: ddbtypes.BillingModePayPerRequest,
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String(key), KeyType: ddbtypes.KeyTypeHash}},
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String(key), AttributeType: ddbtypes.ScalarAttributeTypeS}}}); err != nil {
		t.Fatal(err)
	}
	w := dynamodb.NewTableExistsWaiter(ddb, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 20*time.Millisecond, 200*time.Millisecond
	})
	if err := w.Wait(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestMigrationStartOnA2xTable: start on a KCL 2.x table, in the lease-table
// layout (no side tables: KCL 3.5) and the side-table one (a KCL 3.0–3.4
// fleet made the side tables, empty): the dry run writes nothing and exits
// 0; --execute creates Migration3.0 cv UPGRADE_FROM_2X where a KCL worker
// would, adds the index and waits until it is ACTIVE; a second start has
// nothing to do. The readiness checks are named (w1 has no metrics yet).
func TestMigrationStartOnA2xTable(t *testing.T) {
	t.Parallel()
	ddb := emulator.DynamoDB(t)
	for _, side := range []bool{false, true} {
		table := emulator.Name(t, "mstart")
		emulator.CreateLeaseTable(t, ddb, table)
		putOwnedLease(t, ddb, table, "shardId-000000000000", "w1")
		cvTable, keyAttr := table, "leaseKey"
		if side {
			createHashTable(t, ddb, table+"-CoordinatorState", "key")
			createHashTable(t, ddb, table+"-WorkerMetricStats", "wid")
			cvTable, keyAttr = table+"-CoordinatorState", "key"
		}
		out, errOut, code := runBinary(t, nil, "migration", "start", "--app", table)
		if code != 0 {
			t.Fatalf("side=%v: dry run exit %d\n%s\n%s", side, code, out, errOut)
		}
		for _, want := range []string{"create-cv", "add-index", "create Migration3.0 in " + cvTable, "without: w1", "planned", "index LeaseOwnerToLeaseKeyIndex ACTIVE"} {
			if !strings.Contains(out, want) {
				t.Errorf("side=%v: dry run lacks %q:\n%s", side, want, out)
			}
		}
		if !strings.Contains(errOut, "dry run: 2 steps planned; nothing written") {
			t.Errorf("side=%v: stderr: %s", side, errOut)
		}
		if migrationItem(t, ddb, cvTable, keyAttr) != nil || tableIndex(t, ddb, table) != "" {
			t.Fatalf("side=%v: the dry run wrote", side)
		}

		out, errOut, code = runBinary(t, nil, "migration", "start", "--app", table, "--execute")
		if code != 0 {
			t.Fatalf("side=%v: execute exit %d\n%s\n%s", side, code, out, errOut)
		}
		item := migrationItem(t, ddb, cvTable, keyAttr)
		if sAttr(item, "cv") != coordination.ClientVersionUpgradeFrom2X || sAttr(item, "mb") != "kcltool-migration-start" || sAttr(item, "entityType") != "CLIENT_VERSION_MIGRATION" {
			t.Fatalf("side=%v: Migration3.0 after start: %v", side, item)
		}
		if h, ok := item["h"].(*ddbtypes.AttributeValueMemberL); !ok || len(h.Value) != 1 {
			t.Fatalf("side=%v: h after a create: %v", side, item["h"])
		}
		if st := tableIndex(t, ddb, table); st != "ACTIVE" {
			t.Fatalf("side=%v: index %q after start returned, want ACTIVE (waited for)", side, st)
		}
		if side && migrationItem(t, ddb, table, "leaseKey") != nil {
			t.Fatalf("side tables: Migration3.0 written to the lease table too")
		}
		out, errOut, code = runBinary(t, nil, "migration", "start", "--app", table, "-o", "json")
		var plan struct {
			Steps       []any   `json:"steps"`
			NothingToDo *string `json:"nothingToDo"`
			CV          string  `json:"cv"`
		}
		if err := json.Unmarshal([]byte(out), &plan); err != nil || code != 0 || len(plan.Steps) != 0 || plan.NothingToDo == nil || plan.CV != coordination.ClientVersionUpgradeFrom2X {
			t.Fatalf("side=%v: second start: exit %d, %v\n%s\n%s", side, code, err, out, errOut)
		}
	}
}

// TestMigrationStepsBlocked: each step refused where the KCL refuses it
// exits 3 and names why: finalize on a 2.x table and while the leader has
// not flipped (naming the worker without fresh metrics and the time left),
// rollback of CLIENT_VERSION_3X. Nothing is written.
func TestMigrationStepsBlocked(t *testing.T) {
	t.Parallel()
	ddb := emulator.DynamoDB(t)
	plain := emulator.Name(t, "mblk")
	emulator.CreateLeaseTable(t, ddb, plain)
	putOwnedLease(t, ddb, plain, "shardId-000000000000", "w1")
	upgrading := kcl3fleet.Setup(t, ddb, kcl3fleet.Layout{Kind: kcl3fleet.NewApp, ClientVersion: coordination.ClientVersionUpgradeFrom2X})
	putOwnedLease(t, ddb, upgrading.Tables.Lease, "shardId-000000000000", "w1")
	putOwnedLease(t, ddb, upgrading.Tables.Lease, "shardId-000000000001", "w2")
	m := kcl3fleet.Metrics{Stats: map[string][]float64{"C": {10}}, Range: map[string][]int64{"C": {100}}}
	if err := upgrading.PutWorkerMetrics(context.Background(), "w1", m, time.Now()); err != nil {
		t.Fatal(err)
	}
	final := kcl3fleet.Setup(t, ddb, kcl3fleet.Layout{Kind: kcl3fleet.SideTables, ClientVersion: coordination.ClientVersion3X})
	for _, tc := range []struct {
		args  []string
		wants []string
	}{
		{[]string{"finalize", "--app", plain, "--execute"}, []string{"cv is none: finalize needs CLIENT_VERSION_3X_WITH_ROLLBACK; run `kcltool migration start` first"}},
		{[]string{"finalize", "--app", upgrading.Tables.Lease, "--execute"}, []string{"finalize needs CLIENT_VERSION_3X_WITH_ROLLBACK, which the leader writes",
			"blocked by check every lease owner has worker metrics newer than 1m0s: 1 of 2 owners; without: w2", "left since cv was written"}},
		{[]string{"rollback", "--app", final.Tables.Lease, "--execute"}, []string{"cv CLIENT_VERSION_3X is final"}},
	} {
		out, errOut, code := runBinary(t, nil, append([]string{"migration"}, tc.args...)...)
		if code != 3 {
			t.Fatalf("%v: exit %d, want 3\n%s\n%s", tc.args, code, out, errOut)
		}
		for _, want := range tc.wants {
			if !strings.Contains(out, want) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, want, out)
			}
		}
	}
	if cv := sAttr(migrationItem(t, ddb, upgrading.Tables.Lease, "leaseKey"), "cv"); cv != coordination.ClientVersionUpgradeFrom2X {
		t.Fatalf("a refused finalize changed cv to %s", cv)
	}
	if migrationItem(t, ddb, plain, "leaseKey") != nil {
		t.Fatal("a refused finalize wrote Migration3.0 on a 2.x table")
	}
	if cv := sAttr(migrationItem(t, ddb, final.Tables.CoordinatorState, "key"), "cv"); cv != coordination.ClientVersion3X {
		t.Fatalf("a refused rollback changed cv to %s", cv)
	}
}

// TestMigrationRollbackForwardFinalize walks a Java fleet's table through
// the operator's steps, in the side-table layout (KCL 3.0–3.4: Migration3.0
// in CoordinatorState), the same with tm INIT (KCL 3.5), tm PENDING
// (Migration3.0 in the lease table, side tables still there) and the
// lease-table one: rollback from
// 3X_WITH_ROLLBACK writes cv 2X where the item is (its h keeps the replaced
// state first) and deletes the index (and, for the 3.0–3.4 fleet, the
// WorkerMetricStats table); start rolls forward to UPGRADE_FROM_2X and adds
// the index back; finalize is refused until the leader (kcl3fleet) flips
// to 3X_WITH_ROLLBACK, then writes CLIENT_VERSION_3X.
func TestMigrationRollbackForwardFinalize(t *testing.T) {
	t.Parallel()
	ddb := emulator.DynamoDB(t)
	for _, l := range []kcl3fleet.Layout{{Kind: kcl3fleet.SideTables}, {Kind: kcl3fleet.SideTables, TableMigration: kcl3fleet.TableMigrationInit}, {Kind: kcl3fleet.Pending}, {Kind: kcl3fleet.NewApp}} {
		kind := l.Kind.String() + "/" + l.TableMigration
		l.ClientVersion = coordination.ClientVersion3XWithRollback
		f := kcl3fleet.Setup(t, ddb, l)
		putOwnedLease(t, ddb, f.Tables.Lease, "shardId-000000000000", "w1")
		cvTable, keyAttr := f.MigrationTable(), "leaseKey"
		if l.Kind == kcl3fleet.SideTables {
			keyAttr = "key"
		}
		app := f.Tables.Lease
		out, errOut, code := runBinary(t, nil, "migration", "rollback", "--app", app)
		if code != 0 || !strings.Contains(out, "delete-index") || !strings.Contains(out, "wait 2m0s after cv CLIENT_VERSION_2X") {
			t.Fatalf("%s: rollback dry run: exit %d\n%s\n%s", kind, code, out, errOut)
		}
		if sAttr(migrationItem(t, ddb, cvTable, keyAttr), "cv") != coordination.ClientVersion3XWithRollback || tableIndex(t, ddb, app) != "ACTIVE" {
			t.Fatalf("%s: the rollback dry run wrote", kind)
		}
		out, errOut, code = runBinary(t, nil, "migration", "rollback", "--app", app, "--execute", "--index-wait", "0s")
		if code != 0 {
			t.Fatalf("%s: rollback: exit %d\n%s\n%s", kind, code, out, errOut)
		}
		item := migrationItem(t, ddb, cvTable, keyAttr)
		h, _ := item["h"].(*ddbtypes.AttributeValueMemberL)
		if sAttr(item, "cv") != coordination.ClientVersion2X || sAttr(item, "mb") != "kcltool-migration-rollback" || h == nil || len(h.Value) < 2 ||
			sAttr(h.Value[0].(*ddbtypes.AttributeValueMemberM).Value, "cv") != coordination.ClientVersion3XWithRollback {
			t.Fatalf("%s: Migration3.0 after rollback: %v", kind, item)
		}
		waitNoIndex(t, ddb, app)
		// Only a KCL 3.0–3.4 fleet's (no tm) is deleted; a 3.5 fleet in
		// tm INIT keeps it, as KclMigrationTool.py 3.5.1 does.
		// (dynalite keeps a deleted table DELETING for a moment.)
		switch {
		case l.Kind == kcl3fleet.SideTables && l.TableMigration == "":
			waitNoTable(t, ddb, f.Tables.WorkerMetrics)
		case l.Kind != kcl3fleet.NewApp:
			if st := tableStatus(t, ddb, f.Tables.WorkerMetrics); st != "ACTIVE" {
				t.Fatalf("%s: WorkerMetricStats is %q after rollback, want kept ACTIVE", kind, st)
			}
		}

		out, errOut, code = runBinary(t, nil, "migration", "start", "--app", app, "--execute")
		if code != 0 {
			t.Fatalf("%s: roll forward: exit %d\n%s\n%s", kind, code, out, errOut)
		}
		if cv := sAttr(migrationItem(t, ddb, cvTable, keyAttr), "cv"); cv != coordination.ClientVersionUpgradeFrom2X || tableIndex(t, ddb, app) != "ACTIVE" {
			t.Fatalf("%s: after the roll forward: cv %s, index %s", kind, cv, tableIndex(t, ddb, app))
		}
		if _, _, code = runBinary(t, nil, "migration", "finalize", "--app", app, "--execute"); code != 3 {
			t.Fatalf("%s: finalize before the flip: exit %d, want 3", kind, code)
		}
		if err := f.SetClientVersion(context.Background(), coordination.ClientVersion3XWithRollback, "leader-w1"); err != nil {
			t.Fatal(err)
		}
		out, errOut, code = runBinary(t, nil, "migration", "finalize", "--app", app, "--execute")
		if code != 0 {
			t.Fatalf("%s: finalize: exit %d\n%s\n%s", kind, code, out, errOut)
		}
		if item := migrationItem(t, ddb, cvTable, keyAttr); sAttr(item, "cv") != coordination.ClientVersion3X || sAttr(item, "mb") != "kcltool-migration-finalize" {
			t.Fatalf("%s: after finalize: %v", kind, item)
		}
	}
}

func waitNoIndex(t *testing.T, ddb *dynamodb.Client, table string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); tableIndex(t, ddb, table) != ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("index of %s never deleted (%s)", table, tableIndex(t, ddb, table))
		}
	}
}

// tableStatus is the table's status, "" when it does not exist.
func tableStatus(t *testing.T, ddb *dynamodb.Client, table string) string {
	t.Helper()
	d, err := leasecore.DescribeTable(context.Background(), ddb, table)
	if err != nil {
		t.Fatal(err)
	}
	if d == nil {
		return ""
	}
	return string(d.TableStatus)
}

func waitNoTable(t *testing.T, ddb *dynamodb.Client, table string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); tableStatus(t, ddb, table) != ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("table %s never deleted (%s)", table, tableStatus(t, ddb, table))
		}
	}
}

// TestMigrationPlanGolden pins the plans' -o json: start on a 2.x table
// and rollback of a 3.0–3.4 fleet at 3X_WITH_ROLLBACK (dry runs).
func TestMigrationPlanGolden(t *testing.T) {
	t.Parallel()
	ddb := emulator.DynamoDB(t)
	plain := emulator.Name(t, "mplan")
	emulator.CreateLeaseTable(t, ddb, plain)
	putOwnedLease(t, ddb, plain, "shardId-000000000000", "w1")
	side := kcl3fleet.Setup(t, ddb, kcl3fleet.Layout{Kind: kcl3fleet.SideTables, ClientVersion: coordination.ClientVersion3XWithRollback})
	for _, tc := range []struct{ command, table, golden string }{
		{"start", plain, "migration-start-2x.json"}, {"rollback", side.Tables.Lease, "migration-rollback-side-tables.json"},
	} {
		out, errOut, code := runBinary(t, nil, "migration", tc.command, "--app", tc.table, "-o", "json")
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", tc.golden, code, out, errOut)
		}
		golden(t, tc.golden, strings.ReplaceAll(out, tc.table, "APP"))
	}
}
