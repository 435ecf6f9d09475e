package coordination

import (
	"context"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// tableShape is what a lease table's description says of its making, to
// compare tables created by different paths.
type tableShape struct {
	Billing    types.BillingMode
	Keys       []string
	Attributes []string
	Indexes    []string
}

func shapeOf(t *testing.T, c *dynamodb.Client, table string) tableShape {
	t.Helper()
	out, err := c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	d := out.Table
	sh := tableShape{}
	if d.BillingModeSummary != nil {
		sh.Billing = d.BillingModeSummary.BillingMode
	}
	for _, k := range d.KeySchema {
		sh.Keys = append(sh.Keys, aws.ToString(k.AttributeName)+" "+string(k.KeyType))
	}
	for _, a := range d.AttributeDefinitions {
		sh.Attributes = append(sh.Attributes, aws.ToString(a.AttributeName)+" "+string(a.AttributeType))
	}
	sort.Strings(sh.Attributes)
	for _, g := range d.GlobalSecondaryIndexes {
		s := aws.ToString(g.IndexName)
		for i, k := range g.KeySchema {
			sep := ", "
			if i == 0 {
				sep = " "
			}
			s += sep + aws.ToString(k.AttributeName) + " " + string(k.KeyType)
		}
		if g.Projection != nil {
			s += ", " + string(g.Projection.ProjectionType)
		}
		sh.Indexes = append(sh.Indexes, s)
	}
	return sh
}

// fixedClock is the real clock stopped at a time, for the item's mts.
type fixedClock struct {
	clock.Clock
	now time.Time
}

func (c *fixedClock) Now() time.Time { return c.now }

// newAppTables names one application's tables, none created.
func newAppTables(t *testing.T) (*dynamodb.Client, Tables) {
	c := emulator.DynamoDB(t)
	app := emulator.Name(t, "new")
	return c, DefaultTables(app, app)
}

// A new KCL 3.x application's table, as KCL 3.5.1 leaves it after its
// first worker started: the index (hash leaseOwner, range leaseKey,
// KEYS_ONLY) on an on-demand table keyed leaseKey, and the Migration3.0
// item at CLIENT_VERSION_3X in the lease table with INIT as its history.
// Detect reads it as a 3.x application in the single-table layout whose
// leases a leader gives. A second start changes nothing.
func TestEnsureLeaseTableNewKCL3(t *testing.T) {
	c, tb := newAppTables(t)
	at := time.UnixMilli(1_780_000_000_123).UTC()
	clk := &fixedClock{Clock: clock.RealClock(), now: at}
	created, err := EnsureLeaseTable(context.Background(), c, tb, true, NewKCL3Application("worker-1"), clk)
	if err != nil || !created {
		t.Fatalf("EnsureLeaseTable: created %v, %v", created, err)
	}
	want := tableShape{
		Billing:    types.BillingModePayPerRequest,
		Keys:       []string{"leaseKey HASH"},
		Attributes: []string{"leaseKey S", "leaseOwner S"},
		Indexes:    []string{"LeaseOwnerToLeaseKeyIndex leaseOwner HASH, leaseKey RANGE, KEYS_ONLY"},
	}
	if got := shapeOf(t, c, tb.Lease); !reflect.DeepEqual(got, want) {
		t.Errorf("table %+v\nwant  %+v", got, want)
	}

	it := getRaw(t, c, tb.Lease, keyMigration)
	wantItem := item{
		"leaseKey":   sv("Migration3.0"),
		"entityType": sv("CLIENT_VERSION_MIGRATION"),
		"cv":         sv("CLIENT_VERSION_3X"),
		"mb":         sv("worker-1"),
		"mts":        &types.AttributeValueMemberN{Value: "1780000000123"},
		"h": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberM{Value: item{
			"cv": sv("CLIENT_VERSION_INIT"), "mb": sv("worker-1"), "mts": &types.AttributeValueMemberN{Value: "1780000000123"},
		}}}},
	}
	if !reflect.DeepEqual(it, wantItem) {
		t.Errorf("Migration3.0 item %#v\nwant %#v", it, wantItem)
	}

	st, err := Detect(context.Background(), c, tb)
	if err != nil {
		t.Fatal(err)
	}
	if st.Layout != LayoutLeaseTable || st.Assignment != leasecore.AssignByLeader || !st.ReportMetrics ||
		st.ClientVersion != ClientVersion3X || st.ClientVersionIn != tb.Lease || st.Index != "ACTIVE" || st.SideTables {
		t.Errorf("Detect: %+v; want a 3.x application, lease-table layout, cv CLIENT_VERSION_3X in %s, index ACTIVE", st, tb.Lease)
	}

	clk.now = clk.now.Add(time.Minute)
	created, err = EnsureLeaseTable(context.Background(), c, tb, true, NewKCL3Application("worker-2"), clk)
	if err != nil || created {
		t.Fatalf("second start: created %v, %v; want the table kept", created, err)
	}
	if again := getRaw(t, c, tb.Lease, keyMigration); !reflect.DeepEqual(again, wantItem) {
		t.Errorf("a second start rewrote Migration3.0: %#v", again)
	}
}

// --kcl-version 2: KCL 2.x's table, nothing else; Detect calls it 2.x.
func TestEnsureLeaseTableNewKCL2(t *testing.T) {
	c, tb := newAppTables(t)
	created, err := EnsureLeaseTable(context.Background(), c, tb, true, NewApplication{}, nil)
	if err != nil || !created {
		t.Fatalf("EnsureLeaseTable: created %v, %v", created, err)
	}
	want := tableShape{Billing: types.BillingModePayPerRequest, Keys: []string{"leaseKey HASH"}, Attributes: []string{"leaseKey S"}}
	if got := shapeOf(t, c, tb.Lease); !reflect.DeepEqual(got, want) {
		t.Errorf("table %+v, want %+v", got, want)
	}
	if it := getRaw(t, c, tb.Lease, keyMigration); it != nil {
		t.Errorf("a 2.x table got a Migration3.0 item: %v", it)
	}
	st, err := Detect(context.Background(), c, tb)
	if err != nil || st.Layout != LayoutNone || st.Assignment != leasecore.AssignByTaking {
		t.Errorf("Detect: %+v, %v; want KCL 2.x", st, err)
	}
}

// An existing KCL 2.x table keeps its mode: creating for 3.x neither adds
// the index nor writes the item, until an operator migrates it.
func TestEnsureLeaseTableKeepsExisting2x(t *testing.T) {
	c, tb := newAppTables(t)
	emulator.CreateLeaseTable(t, c, tb.Lease)
	before := shapeOf(t, c, tb.Lease)
	created, err := EnsureLeaseTable(context.Background(), c, tb, true, NewKCL3Application("worker-1"), nil)
	if err != nil || created {
		t.Fatalf("EnsureLeaseTable on an existing table: created %v, %v", created, err)
	}
	if after := shapeOf(t, c, tb.Lease); !reflect.DeepEqual(after, before) {
		t.Errorf("the existing table changed: %+v, was %+v", after, before)
	}
	if it := getRaw(t, c, tb.Lease, keyMigration); it != nil {
		t.Errorf("the existing 2.x table got a Migration3.0 item: %v", it)
	}
	st, err := Detect(context.Background(), c, tb)
	if err != nil || st.Layout != LayoutNone || st.Assignment != leasecore.AssignByTaking {
		t.Errorf("Detect: %+v, %v; want KCL 2.x still", st, err)
	}
}

// The item is created only where none is (the KCL's conditional create):
// one already there, whatever its cv, is kept.
func TestCreateMigrationItemNeverOverwrites(t *testing.T) {
	c, tb := newAppTables(t)
	emulator.CreateKCL3LeaseTable(t, c, tb.Lease)
	first := item{"leaseKey": sv(keyMigration), "entityType": sv(EntityClientMigration), "cv": sv(ClientVersion2X), "mb": sv("operator"), "mts": nv(1)}
	if _, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(tb.Lease), Item: first}); err != nil {
		t.Fatal(err)
	}
	wrote, err := CreateMigrationItem(context.Background(), c, tb.Lease, ClientVersion3X, "worker-1", time.Now())
	if err != nil || wrote {
		t.Fatalf("CreateMigrationItem over an item: wrote %v, %v; want false, nil", wrote, err)
	}
	if got := getRaw(t, c, tb.Lease, keyMigration); !reflect.DeepEqual(got, first) {
		t.Errorf("item overwritten: %#v", got)
	}
}

func getRaw(t *testing.T, c *dynamodb.Client, table, key string) item {
	t.Helper()
	it, err := getItem(context.Background(), c, table, attrLeaseKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return it
}
