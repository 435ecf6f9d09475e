package coordination

import (
	"context"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// TestMain stops the local DynamoDB server (dynalite) the tests started.
func TestMain(m *testing.M) { os.Exit(emulator.Main(m)) }

type item = map[string]types.AttributeValue

func sv(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func nv(f float64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatFloat(f, 'f', -1, 64)}
}
func lv(fs ...float64) types.AttributeValue {
	l := &types.AttributeValueMemberL{}
	for _, f := range fs {
		l.Value = append(l.Value, nv(f))
	}
	return l
}

// rig is one application's tables on dynalite.
type rig struct {
	t  *testing.T
	c  *dynamodb.Client
	tb Tables
}

// newRig makes the lease table (with the index when index is set) and,
// when side is set, the KCL 3.0 - 3.4 side tables with the KCL's key
// schema (CoordinatorState hash "key", WorkerMetricStats hash "wid").
func newRig(t *testing.T, index, side bool) *rig {
	t.Helper()
	c := emulator.DynamoDB(t)
	app := emulator.Name(t, "app")
	r := &rig{t: t, c: c, tb: DefaultTables(app, app)}
	if index {
		emulator.CreateKCL3LeaseTable(t, c, r.tb.Lease)
	} else {
		emulator.CreateLeaseTable(t, c, r.tb.Lease)
	}
	if side {
		r.createSide(r.tb.CoordinatorState, "key")
		r.createSide(r.tb.WorkerMetrics, "wid")
	}
	return r
}

func (r *rig) createSide(name, hash string) {
	r.t.Helper()
	_, err := r.c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(hash), AttributeType: types.ScalarAttributeTypeS}},
	})
	if err != nil {
		r.t.Fatalf("create %s: %v", name, err)
	}
	w := dynamodb.NewTableExistsWaiter(r.c, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 20*time.Millisecond, 200*time.Millisecond
	})
	if err := w.Wait(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 30*time.Second); err != nil {
		r.t.Fatalf("wait for %s: %v", name, err)
	}
}

func (r *rig) put(table string, it item) {
	r.t.Helper()
	if _, err := r.c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
		r.t.Fatalf("put into %s: %v", table, err)
	}
}

// keyed returns it with its key attribute set for table: "key" in
// CoordinatorState, "wid" in WorkerMetricStats, "leaseKey" (and the
// entityType the KCL tags it with) in the lease table.
func (r *rig) keyed(table, key, entity string, it item) item {
	out := item{}
	for k, v := range it {
		out[k] = v
	}
	switch table {
	case r.tb.CoordinatorState:
		out["key"] = sv(key)
	case r.tb.WorkerMetrics:
		out["wid"] = sv(key)
	default:
		out["leaseKey"] = sv(key)
		out["entityType"] = sv(entity)
	}
	return out
}

func (r *rig) migration(table, cv string) {
	r.put(table, r.keyed(table, "Migration3.0", EntityClientMigration, item{
		"cv": sv(cv), "mb": sv("worker-a"), "mts": nv(1764900000000),
	}))
}

func (r *rig) tableMigration(table, tm string) {
	r.put(table, r.keyed(table, "TableMigration3.5", EntityTableMigration, item{
		"tm": sv(tm), "mb": sv("worker-a"), "mts": nv(1764900000000),
	}))
}

func (r *rig) lock(table, owner, version string) {
	// The lock client writes these as strings, leaseDuration in ms.
	r.put(table, r.keyed(table, "Leader", EntityLeader, item{
		"ownerName": sv(owner), "recordVersionNumber": sv(version), "leaseDuration": sv("20000"),
	}))
}

func (r *rig) metrics(table, worker string, lut int64, cpu ...float64) {
	r.put(table, r.keyed(table, worker, EntityWorkerMetrics, item{
		"lut": nv(float64(lut)),
		"sts": &types.AttributeValueMemberM{Value: item{"C": lv(cpu...)}},
		"opr": &types.AttributeValueMemberM{Value: item{"C": lv(100)}},
		"sup": nv(1), "slu": nv(float64(lut)),
	}))
}

func (r *rig) lease(key, owner string) {
	r.put(r.tb.Lease, item{
		"leaseKey": sv(key), "leaseOwner": sv(owner), "leaseCounter": nv(3),
		"checkpoint": sv("TRIM_HORIZON"), "checkpointSubSequenceNumber": nv(0), "ownerSwitchesSinceCheckpoint": nv(0),
	})
}

func (r *rig) detect() State {
	r.t.Helper()
	st, err := Detect(context.Background(), r.c, r.tb)
	if err != nil {
		r.t.Fatalf("Detect: %v", err)
	}
	return st
}

// denyAPI answers AccessDenied to the calls deny picks and passes the
// others to dynalite: dynalite has no IAM, so this is the one fake.
type denyAPI struct {
	*dynamodb.Client
	deny func(op, table string) bool
}

func accessDenied() error {
	return &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "not authorized"}
}

func (d denyAPI) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	if d.deny("DescribeTable", aws.ToString(in.TableName)) {
		return nil, accessDenied()
	}
	return d.Client.DescribeTable(ctx, in, o...)
}

func (d denyAPI) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if d.deny("GetItem", aws.ToString(in.TableName)) {
		return nil, accessDenied()
	}
	return d.Client.GetItem(ctx, in, o...)
}

func (d denyAPI) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	if d.deny("Scan", aws.ToString(in.TableName)) {
		return nil, accessDenied()
	}
	return d.Client.Scan(ctx, in, o...)
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
