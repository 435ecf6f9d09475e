package ddbmodel_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/internal/testenv/ddbmodel"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
	"github.com/kcltool/kcltool/leasecore"
)

// TestModelMatchesDynaliteOnKCL3 runs the KCL 3.x writes and reads of
// kcl3fleet (the KCL's legacy Expected/AttributeUpdates writes, the lock
// client's expressions, the worker-metrics SET, a filtered Scan and the
// LeaseOwnerToLeaseKeyIndex query, paged) and leasecore's 3.x follower
// calls against dynalite and the model, and compares outcome by outcome
// and the items left.
func TestModelMatchesDynaliteOnKCL3(t *testing.T) {
	ctx := context.Background()
	ddb := emulator.DynamoDB(t)
	name := emulator.Name(t, "kcl3")
	emulator.CreateKCL3LeaseTable(t, ddb, name)
	m := ddbmodel.New(ddbmodel.Config{Table: name, Indexes: []ddbmodel.Index{{Name: leasecore.KCL3IndexName, HashKey: "leaseOwner", RangeKey: "leaseKey"}}}, clocktest.New(time.Unix(1_700_000_000, 0)))
	results := map[string][]string{}
	items := map[string][]map[string]types.AttributeValue{}
	for bname, api := range map[string]kcl3fleet.API{"dynalite": ddb, "model": m} {
		clk := clocktest.New(time.Unix(1_700_000_000, 0))
		var log []string
		note := func(step string, v ...any) { log = append(log, fmt.Sprint(append([]any{step + ":"}, v...)...)) }
		code := func(err error) string {
			switch {
			case err == nil:
				return "ok"
			case errors.Is(err, kcl3fleet.ErrConditionFailed):
				return "condition"
			case errors.Is(err, leasecore.ErrLeaseLost):
				return "lost"
			}
			return fmt.Sprintf("%T", err)
		}
		f, err := kcl3fleet.Attach(ctx, api, kcl3fleet.Layout{Kind: kcl3fleet.NewApp, LeaseTable: name}, clk)
		note("attach", code(err))
		keys := []string{"shardId-0", "shardId-1", "shardId-2"}
		note("create", code(f.CreateLeases(ctx, keys...)))
		note("create again", code(f.CreateLeases(ctx, keys[0])))
		leader := f.NewLeader(kcl3fleet.LeaderConfig{WorkerID: "leader"})
		ok, err := leader.TakeLock(ctx)
		note("lock", ok, code(err))
		ok, err = f.NewLeader(kcl3fleet.LeaderConfig{WorkerID: "other"}).TakeLock(ctx)
		note("lock taken", ok, code(err))
		note("heartbeat", code(leader.Heartbeat(ctx)))
		stale, _ := f.Lease(ctx, keys[0])
		for i, k := range keys {
			l, err := leader.AssignLease(ctx, k, []string{"w1", "w2", "w1"}[i])
			note("assign "+k, code(err), l.LeaseOwner, l.LeaseCounter)
		}
		_, err = leader.AssignLeaseSeen(ctx, stale, "w2")
		note("assign stale", code(err))
		_, err = leader.AssignLeaseSeen(ctx, leasecore.Lease{LeaseKey: "shardId-9"}, "w2")
		note("assign missing", code(err))
		h, err := leader.Handoff(ctx, keys[0], "w2")
		note("handoff", code(err), h.LeaseOwner, h.CheckpointOwner, h.LeaseCounter)
		_, err = leader.Handoff(ctx, keys[0], "w3")
		note("handoff again", code(err))
		for _, w := range []string{"w1", "w2", "w3"} {
			got, err := leasecore.QueryOwnedKeys(ctx, api, name, w)
			note("index "+w, code(err), got)
		}
		note("metrics", code(f.PutWorkerMetrics(ctx, "w1", kcl3fleet.Metrics{Stats: map[string][]float64{"C": {10, 20.5}}, Range: map[string][]int64{"C": {100}}}, clk.Now())))
		reports, err := f.WorkerMetricsReports(ctx)
		note("reports", code(err), len(reports))
		// The 3.x follower's calls: the old owner renews without the
		// checkpointOwner condition, then completes the handoff.
		held, _ := f.Lease(ctx, keys[0])
		_, err = leasecore.RenewLease3(ctx, api, name, leasecore.Lease{LeaseKey: keys[0], LeaseCounter: held.LeaseCounter, LeaseOwner: "w1"}, "w1")
		note("renew during handoff", code(err))
		done, err := leasecore.HandoffLease(ctx, api, name, held, "w1")
		note("complete handoff", code(err), done.LeaseOwner, done.CheckpointOwner)
		note("set cv", code(f.SetClientVersion(ctx, "CLIENT_VERSION_2X", "tool")))
		note("release", code(leader.Release(ctx)))
		results[bname] = log
		items[bname] = allItems(t, api, name)
	}
	if !reflect.DeepEqual(results["dynalite"], results["model"]) {
		for i := range results["dynalite"] {
			if i < len(results["model"]) && results["dynalite"][i] != results["model"][i] {
				t.Errorf("dynalite %q\n      model %q", results["dynalite"][i], results["model"][i])
			}
		}
		t.Fatalf("outcomes differ:\ndynalite %v\nmodel    %v", results["dynalite"], results["model"])
	}
	if !reflect.DeepEqual(items["dynalite"], items["model"]) {
		t.Fatalf("items differ:\ndynalite %v\nmodel    %v", items["dynalite"], items["model"])
	}
	t.Logf("%d outcomes agree: %v", len(results["model"]), results["model"])
}

func allItems(t *testing.T, api kcl3fleet.API, table string) []map[string]types.AttributeValue {
	t.Helper()
	out, err := api.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(out.Items, func(i, j int) bool {
		return leasecore.ItemKey(out.Items[i]) < leasecore.ItemKey(out.Items[j])
	})
	return out.Items
}

// TestModelQueryPages checks the index query's pages and capacity in the
// model against dynalite: Limit, LastEvaluatedKey, order.
func TestModelQueryPages(t *testing.T) {
	ctx := context.Background()
	ddb := emulator.DynamoDB(t)
	name := emulator.Name(t, "kcl3q")
	emulator.CreateKCL3LeaseTable(t, ddb, name)
	m := ddbmodel.New(ddbmodel.Config{Table: name, Indexes: []ddbmodel.Index{{Name: leasecore.KCL3IndexName, HashKey: "leaseOwner", RangeKey: "leaseKey"}}}, clocktest.New(time.Unix(0, 0)))
	pages := map[string][]string{}
	for bname, api := range map[string]kcl3fleet.API{"dynalite": ddb, "model": m} {
		for i := 0; i < 7; i++ {
			l := leasecore.Lease{LeaseKey: fmt.Sprintf("shardId-%d", 6-i), LeaseOwner: []string{"a", "b"}[i%2], Checkpoint: leasecore.SequenceNumber{SequenceNumber: "TRIM_HORIZON"}}
			if _, err := api.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: leasecore.EncodeLease(l)}); err != nil {
				t.Fatal(err)
			}
		}
		var start map[string]types.AttributeValue
		for {
			out, err := api.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(name), IndexName: aws.String(leasecore.KCL3IndexName),
				KeyConditionExpression: aws.String("leaseOwner = :o"), ExpressionAttributeValues: map[string]types.AttributeValue{":o": &types.AttributeValueMemberS{Value: "a"}},
				Limit: aws.Int32(2), ExclusiveStartKey: start, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
			if err != nil {
				t.Fatalf("%s: %v", bname, err)
			}
			var ks []string
			for _, it := range out.Items {
				ks = append(ks, fmt.Sprintf("%s/%d attrs", leasecore.ItemKey(it), len(it)))
			}
			units := -1.0
			if out.ConsumedCapacity != nil {
				units = aws.ToFloat64(out.ConsumedCapacity.CapacityUnits)
			}
			pages[bname] = append(pages[bname], fmt.Sprint(ks, " more=", len(out.LastEvaluatedKey) > 0, " units=", units))
			if len(out.LastEvaluatedKey) == 0 {
				break
			}
			start = out.LastEvaluatedKey
		}
		_, err := api.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(name), IndexName: aws.String(leasecore.KCL3IndexName), ConsistentRead: aws.Bool(true),
			KeyConditionExpression: aws.String("leaseOwner = :o"), ExpressionAttributeValues: map[string]types.AttributeValue{":o": &types.AttributeValueMemberS{Value: "a"}}})
		pages[bname] = append(pages[bname], fmt.Sprint("consistent read refused: ", err != nil))
	}
	if !reflect.DeepEqual(pages["dynalite"], pages["model"]) {
		t.Fatalf("pages differ:\ndynalite %v\nmodel    %v", pages["dynalite"], pages["model"])
	}
	t.Logf("pages: %v", pages["model"])
}
