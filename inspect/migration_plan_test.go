package inspect

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
)

func migrationCV(t *testing.T, ddb *dynamodb.Client, table, keyAttr string) (cv, mb string) {
	t.Helper()
	out, err := ddb.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{keyAttr: &ddbtypes.AttributeValueMemberS{Value: "Migration3.0"}}})
	if err != nil {
		t.Fatal(err)
	}
	s := func(n string) string {
		v, _ := out.Item[n].(*ddbtypes.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	return s("cv"), s("mb")
}

// TestMigrationApplyNeverOverwritesAConcurrentChange: a plan is applied
// after a worker changed Migration3.0 since the read: to another cv (a
// worker deployed with CLIENT_VERSION_CONFIG_3X), to the same cv with a new
// mts (the leader rewrote it), or created it where the plan saw none (a
// KCL 3.x worker's first start). Each apply fails with
// ErrMigrationStateChanged, the worker's item stays, and the writes after
// the cv (the index deletion, the index creation) are not made.
func TestMigrationApplyNeverOverwritesAConcurrentChange(t *testing.T) {
	t.Parallel()
	ddb := emulator.DynamoDB(t)
	ctx := context.Background()
	clk := clock.RealClock()
	for _, tc := range []struct {
		name, to string
	}{{"other cv", coordination.ClientVersion3X}, {"same cv, new mts", coordination.ClientVersion3XWithRollback}} {
		f := kcl3fleet.Setup(t, ddb, kcl3fleet.Layout{Kind: kcl3fleet.SideTables, ClientVersion: coordination.ClientVersion3XWithRollback})
		plan, err := PlanMigration(ctx, ddb, f.Tables, clk, MigrationRollback, MigrationPlanOptions{})
		if err != nil || plan.Blocked() || len(plan.Writes) < 2 || plan.Writes[0].Action != coordination.ActionUpdateCV {
			t.Fatalf("%s: plan %+v, %v", tc.name, plan, err)
		}
		time.Sleep(5 * time.Millisecond) // mts is in milliseconds
		if err := f.SetClientVersion(ctx, tc.to, "worker-w1"); err != nil {
			t.Fatal(err)
		}
		err = coordination.MigrationApply(ctx, ddb, plan.Writes, coordination.MigrationApplyOptions{})
		if !errors.Is(err, coordination.ErrMigrationStateChanged) {
			t.Fatalf("%s: apply after a concurrent change: %v, want ErrMigrationStateChanged", tc.name, err)
		}
		if cv, mb := migrationCV(t, ddb, f.Tables.CoordinatorState, "key"); cv != tc.to || mb != "worker-w1" {
			t.Fatalf("%s: Migration3.0 is cv %s by %s, want the worker's %s", tc.name, cv, mb, tc.to)
		}
		if st, _ := ReadMigration(ctx, ddb, f.Tables, clk); st.Facts.Coord.Index != "ACTIVE" {
			t.Fatalf("%s: the index was touched after the failed cv write: %q", tc.name, st.Facts.Coord.Index)
		}
	}

	// A create raced by a worker's own create.
	table := emulator.Name(t, "mrace")
	emulator.CreateLeaseTable(t, ddb, table)
	tables := coordination.DefaultTables(table, "")
	plan, err := PlanMigration(ctx, ddb, tables, clk, MigrationStart, MigrationPlanOptions{})
	if err != nil || len(plan.Writes) != 2 || plan.Writes[0].Action != coordination.ActionCreateCV || plan.Writes[1].Action != coordination.ActionAddIndex {
		t.Fatalf("start plan on a 2.x table: %+v, %v", plan, err)
	}
	if _, err := kcl3fleet.Attach(ctx, ddb, kcl3fleet.Layout{Kind: kcl3fleet.NewApp, LeaseTable: table, ClientVersion: coordination.ClientVersionUpgradeFrom2X}, clk); err != nil {
		t.Fatal(err)
	}
	err = coordination.MigrationApply(ctx, ddb, plan.Writes, coordination.MigrationApplyOptions{})
	if !errors.Is(err, coordination.ErrMigrationStateChanged) {
		t.Fatalf("create after a worker's create: %v, want ErrMigrationStateChanged", err)
	}
	if _, mb := migrationCV(t, ddb, table, "leaseKey"); mb != "kcl3fleet" {
		t.Fatalf("Migration3.0 written by %q, want the worker's", mb)
	}
	if st, _ := ReadMigration(ctx, ddb, tables, clk); st.Facts.Coord.Index != "" {
		t.Fatalf("the index was added after the failed create: %q", st.Facts.Coord.Index)
	}
}

// TestMigrationStartWritesCVBeforeTheIndex: the plan's order is the KCL's
// (cv, then the index): an index on a table without Migration3.0 would read
// as a KCL 3.x application, taken over by a leader.
func TestMigrationStartWritesCVBeforeTheIndex(t *testing.T) {
	t.Parallel()
	ddb := emulator.DynamoDB(t)
	table := emulator.Name(t, "morder")
	emulator.CreateLeaseTable(t, ddb, table)
	plan, err := PlanMigration(context.Background(), ddb, coordination.DefaultTables(table, ""), clock.RealClock(), MigrationStart, MigrationPlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []coordination.MigrationAction
	for _, w := range plan.Writes {
		got = append(got, w.Action)
	}
	if len(got) != 2 || got[0] != coordination.ActionCreateCV || got[1] != coordination.ActionAddIndex || plan.Writes[1].ProvisionedThroughput != nil {
		t.Fatalf("start's writes %v (throughput %v), want create-cv then add-index without throughput (on demand)", got, plan.Writes[1].ProvisionedThroughput)
	}
}

// TestMigrationStartOnAProvisionedTable: on a provisioned lease table the
// index gets the table's own read and write capacity, as
// createLeaseOwnerToLeaseKeyIndexIfNotExists gives it, and is built (the
// local server refuses an index without throughput there, as DynamoDB does).
func TestMigrationStartOnAProvisionedTable(t *testing.T) {
	t.Parallel()
	ddb := emulator.DynamoDB(t)
	ctx := context.Background()
	table := emulator.Name(t, "mprov")
	if _, err := ddb.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(table),
		ProvisionedThroughput: &ddbtypes.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(7), WriteCapacityUnits: aws.Int64(3)},
		KeySchema:             []ddbtypes.KeySchemaElement{{AttributeName: aws.String("leaseKey"), KeyType: ddbtypes.KeyTypeHash}},
		AttributeDefinitions:  []ddbtypes.AttributeDefinition{{AttributeName: aws.String("leaseKey"), AttributeType: ddbtypes.ScalarAttributeTypeS}}}); err != nil {
		t.Fatal(err)
	}
	if err := dynamodb.NewTableExistsWaiter(ddb, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 20*time.Millisecond, 200*time.Millisecond
	}).
		Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	ownedLease(t, ddb, table, "shardId-000000000000", "w1")
	tables := coordination.DefaultTables(table, "")
	plan, err := PlanMigration(ctx, ddb, tables, clock.RealClock(), MigrationStart, MigrationPlanOptions{})
	if err != nil || len(plan.Writes) != 2 {
		t.Fatalf("plan %+v, %v", plan, err)
	}
	pt := plan.Writes[1].ProvisionedThroughput
	if pt == nil || aws.ToInt64(pt.ReadCapacityUnits) != 7 || aws.ToInt64(pt.WriteCapacityUnits) != 3 {
		t.Fatalf("the index's throughput %+v, want the table's 7 / 3", pt)
	}
	if err := coordination.MigrationApply(ctx, ddb, plan.Writes, coordination.MigrationApplyOptions{Poll: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	st, err := ReadMigration(ctx, ddb, tables, clock.RealClock())
	if err != nil || st.Facts.Coord.Index != "ACTIVE" || st.Facts.Coord.ClientVersion != coordination.ClientVersionUpgradeFrom2X {
		t.Fatalf("after start: index %q, cv %q, %v", st.Facts.Coord.Index, st.Facts.Coord.ClientVersion, err)
	}
}

// TestMigrationStartWaitsForAnIndexBeingBuilt: an index another writer is
// adding (a KCL worker's createGsi(false)) is waited for, not added again.
func TestMigrationStartWaitsForAnIndexBeingBuilt(t *testing.T) {
	t.Parallel()
	ddb := emulator.DynamoDB(t)
	f := kcl3fleet.Setup(t, ddb, kcl3fleet.Layout{Kind: kcl3fleet.NewApp, ClientVersion: coordination.ClientVersionUpgradeFrom2X})
	plan, err := PlanMigration(context.Background(), creatingIndex{ddb, f.Tables.Lease}, f.Tables, clock.RealClock(), MigrationStart, MigrationPlanOptions{})
	if err != nil || len(plan.Writes) != 1 || plan.Writes[0].Action != coordination.ActionWaitIndex || plan.Blocked() {
		t.Fatalf("start with the index CREATING: %+v, %v", plan, err)
	}
}
