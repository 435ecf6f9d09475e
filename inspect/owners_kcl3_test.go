package inspect

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// TestOwnersKCL3SideTables: a KCL 3.0–3.4 application keeps its leader
// lock in <app>-CoordinatorState and its worker metrics in
// <app>-WorkerMetricStats, items written here as the KCL writes them.
// `leases owners` names the leader and lists every metrics item (an idle
// worker too), and sums each worker's leases' throughputKBps. Before, it
// read the 3.x items from the lease table only, and found none.
func TestOwnersKCL3SideTables(t *testing.T) {
	ctx := context.Background()
	ddb := emulator.DynamoDB(t)
	app := emulator.Name(t, "own3")
	emulator.CreateKCL3LeaseTable(t, ddb, app)
	tables := coordination.DefaultTables(app, app)
	for _, tbl := range []struct{ name, key string }{{tables.CoordinatorState, "key"}, {tables.WorkerMetrics, "wid"}} {
		if _, err := ddb.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(tbl.name), BillingMode: types.BillingModePayPerRequest,
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(tbl.key), KeyType: types.KeyTypeHash}},
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(tbl.key), AttributeType: types.ScalarAttributeTypeS}}}); err != nil {
			t.Fatal(err)
		}
		w := dynamodb.NewTableExistsWaiter(ddb, func(o *dynamodb.TableExistsWaiterOptions) {
			o.MinDelay, o.MaxDelay = 20*time.Millisecond, 200*time.Millisecond
		})
		if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tbl.name)}, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v int64) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	put := func(table string, item map[string]types.AttributeValue) {
		if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UTC().Truncate(time.Second)
	put(tables.CoordinatorState, map[string]types.AttributeValue{"key": s("Migration3.0"), "cv": s("CLIENT_VERSION_3X"), "mb": s("java-1"), "mts": n(now.UnixMilli())})
	put(tables.CoordinatorState, map[string]types.AttributeValue{"key": s("Leader"), "ownerName": s("java-1"), "leaseDuration": s("120000"), "recordVersionNumber": s("b7e1")})
	metrics := func(wid string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"wid": s(wid), "lut": n(now.Unix()),
			"sts": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"C": &types.AttributeValueMemberL{Value: []types.AttributeValue{n(12), n(14)}}}},
			"opr": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"C": &types.AttributeValueMemberL{Value: []types.AttributeValue{n(100)}}}}}
	}
	put(tables.WorkerMetrics, metrics("java-1"))
	put(tables.WorkerMetrics, metrics("java-idle"))
	// A kcltool worker's item, written by its own reporter where the state
	// says (here the side table), with no CPU sampler (off EC2/ECS/EKS).
	st, err := coordination.Detect(ctx, ddb, tables)
	if err != nil {
		t.Fatal(err)
	}
	rep := coordination.NewReporter(ddb, tables, "kcltool-1", clocktest.New(now), coordination.ReporterOptions{})
	rep.SetState(st)
	if err := rep.Report(ctx); err != nil || rep.Table() != tables.WorkerMetrics {
		t.Fatalf("kcltool's reporter: %v, wrote to %q", err, rep.Table())
	}
	kbps := func(v float64) *float64 { return &v }
	for _, l := range []leasecore.Lease{
		{LeaseKey: "shardId-000000000000", LeaseOwner: "java-1", LeaseCounter: 2, ThroughputKBps: kbps(10.5)},
		{LeaseKey: "shardId-000000000001", LeaseOwner: "java-1", LeaseCounter: 2, ThroughputKBps: kbps(4.25)},
		{LeaseKey: "shardId-000000000002", LeaseOwner: "kcltool-1", LeaseCounter: 2, ThroughputKBps: kbps(7)},
		{LeaseKey: "shardId-000000000003", LeaseOwner: "kcltool-1", LeaseCounter: 2}, // not renewed by a 3.x worker yet
		{LeaseKey: "shardId-000000000004", LeaseOwner: "old-2x", LeaseCounter: 2},
	} {
		l.Checkpoint.SequenceNumber = leasecore.TRIM_HORIZON
		if _, err := leasecore.CreateLease(ctx, ddb, app, l); err != nil {
			t.Fatal(err)
		}
	}
	listing, err := ListLeases(ctx, ddb, app, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k3, err := ReadKCL3(ctx, ddb, tables, len(listing.NonLeases))
	if err != nil {
		t.Fatal(err)
	}
	o := OwnersOf(listing).WithKCL3(k3)
	if o.Leader != "java-1" || o.LeaderTable != tables.CoordinatorState {
		t.Errorf("leader %q in %q, want java-1 in %s", o.Leader, o.LeaderTable, tables.CoordinatorState)
	}
	got := map[string]WorkerMetrics{}
	for _, m := range o.Metrics {
		got[m.Worker] = m
	}
	for _, w := range []string{"java-1", "kcltool-1", "java-idle"} {
		m, ok := got[w]
		cpuOK := len(m.CPU) == 2 && m.CPU[1] == 14
		if w == "kcltool-1" {
			cpuOK = len(m.CPU) == 0 // no CPU sampler: sts is an empty map
		}
		if !ok || m.Table != tables.WorkerMetrics || !m.LastUpdate.Equal(now) || !cpuOK {
			t.Errorf("metrics of %s: %+v (found %v)", w, m, ok)
		}
	}
	want := map[string]*float64{"java-1": kbps(14.75), "kcltool-1": kbps(7), "old-2x": nil, "java-idle": nil}
	if len(o.Workers) != len(want) {
		t.Errorf("workers %+v, want %d", o.Workers, len(want))
	}
	for _, w := range o.Workers {
		exp, ok := want[w.Worker]
		switch {
		case !ok:
			t.Errorf("unexpected worker %s", w.Worker)
		case (exp == nil) != (w.ThroughputKBps == nil) || (exp != nil && *exp != *w.ThroughputKBps):
			t.Errorf("%s: throughput %v, want %v", w.Worker, deref(w.ThroughputKBps), deref(exp))
		}
	}
	// The idle worker counts toward the fair share: 5 leases, 4 workers.
	if o.FairShare != 2 {
		t.Errorf("fair share %d, want 2", o.FairShare)
	}
}

func deref(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}
