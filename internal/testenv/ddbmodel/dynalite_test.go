package ddbmodel_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/kcltool/kcltool/internal/clock"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/testenv/ddbmodel"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// TestMain stops the local DynamoDB server (dynalite) the tests started.
func TestMain(m *testing.M) { os.Exit(emulator.Main(m)) }

// table is what both backends answer: dynalite through the SDK, the model
// in-process.
type table interface {
	leasecore.CoordinatorAPI
	leasecore.PutItemAPI
	leasecore.DeleteItemAPI
}

func backends(t *testing.T) map[string]struct {
	api  table
	name string
} {
	ddb := emulator.DynamoDB(t)
	name := emulator.Name(t, "model")
	emulator.CreateLeaseTable(t, ddb, name)
	m := ddbmodel.New(ddbmodel.Config{Table: "model"}, clock.RealClock())
	return map[string]struct {
		api  table
		name string
	}{"dynalite": {ddb, name}, "model": {m, "model"}}
}

// TestModelMatchesDynaliteOnTheLeaseProtocol runs every conditional write
// of the lease protocol, succeeding and failing, against dynalite and the
// model and compares outcome by outcome, error code by error code, and the
// items left, the capacity each answer reports included.
func TestModelMatchesDynaliteOnTheLeaseProtocol(t *testing.T) {
	ctx := context.Background()
	results := map[string][]string{}
	items := map[string][]map[string]types.AttributeValue{}
	for name, b := range backends(t) {
		api, tbl := b.api, b.name
		var log []string
		note := func(step string, v ...any) { log = append(log, fmt.Sprint(append([]any{step + ":"}, v...)...)) }
		code := func(err error) string {
			if err == nil {
				return "ok"
			}
			var lost *leasecore.LeaseLostError
			if errors.As(err, &lost) {
				return "lost"
			}
			return fmt.Sprintf("%T", errors.Unwrap(err))
		}
		base := leasecore.Lease{LeaseKey: "shardId-000000000001", Checkpoint: leasecore.SequenceNumber{SequenceNumber: leasecore.TRIM_HORIZON},
			ParentShardIDs: []string{"shardId-000000000000"}, StartingHashKey: "0", EndingHashKey: "170141183460469231731687303715884105727"}
		created, err := leasecore.CreateLease(ctx, api, tbl, base)
		note("create", created, code(err))
		created, err = leasecore.CreateLease(ctx, api, tbl, base)
		note("create again", created, code(err))
		taken, ok, err := leasecore.TakeLease(ctx, api, tbl, base, "a")
		note("take unowned", ok, code(err), taken.LeaseCounter, taken.OwnerSwitchesSinceCheckpoint)
		_, ok, err = leasecore.TakeLease(ctx, api, tbl, base, "b")
		note("take with a stale counter", ok, code(err))
		stolen, ok, err := leasecore.TakeLease(ctx, api, tbl, taken, "b")
		note("steal", ok, code(err), stolen.LeaseCounter, stolen.OwnerSwitchesSinceCheckpoint)
		_, err = leasecore.RenewLease(ctx, api, tbl, taken, "a")
		note("renew after the steal", code(err))
		renewed, err := leasecore.RenewLease(ctx, api, tbl, stolen, "b")
		note("renew", code(err), renewed.LeaseCounter)
		cp, err := leasecore.CheckpointLease(ctx, api, tbl, renewed, leasecore.SequenceNumber{SequenceNumber: "49590338271490256608559692538361571095921575989136588898", SubSequenceNumber: 3})
		note("checkpoint", code(err), cp.LeaseCounter, cp.OwnerSwitchesSinceCheckpoint)
		err = leasecore.SetChildShardIDs(ctx, api, tbl, base.LeaseKey, []string{"shardId-000000000002"})
		note("children", code(err))
		err = leasecore.SetChildShardIDs(ctx, api, tbl, "shardId-000000000009", []string{"shardId-000000000002"})
		note("children of a missing lease", code(err) != "ok")
		_, err = leasecore.ReleaseLease(ctx, api, tbl, cp, "a")
		note("release by another", code(err))
		rel, err := leasecore.ReleaseLease(ctx, api, tbl, cp, "b")
		note("release", code(err), rel.LeaseOwner, rel.LeaseCounter)
		deleted, err := leasecore.DeleteFinishedLease(ctx, api, tbl, base.LeaseKey)
		note("delete unfinished", deleted, code(err))
		l, found, err := leasecore.GetLease(ctx, api, tbl, base.LeaseKey, true)
		note("get", found, code(err), l.LeaseOwner, l.LeaseCounter, l.ChildShardIDs)
		items[name] = append(items[name], itemOf(t, api, tbl, base.LeaseKey))

		// Capacity as each answers it.
		out, err := api.GetItem(ctx, &dynamodb.GetItemInput{TableName: &tbl, Key: key(base.LeaseKey), ConsistentRead: aws.Bool(true),
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
		note("get units", code(err), units(out.ConsumedCapacity))
		out, err = api.GetItem(ctx, &dynamodb.GetItemInput{TableName: &tbl, Key: key(base.LeaseKey), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
		note("get units, eventually consistent", code(err), units(out.ConsumedCapacity))
		up, err := api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &tbl, Key: key(base.LeaseKey),
			UpdateExpression: aws.String("SET #c = :c"), ExpressionAttributeNames: map[string]string{"#c": "leaseCounter"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":c": &types.AttributeValueMemberN{Value: "1000"}},
			ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal})
		note("update units", code(err), units(up.ConsumedCapacity))

		// A finished lease is deleted; a second delete finds nothing.
		fin := base
		fin.LeaseKey, fin.Checkpoint = "shardId-000000000000", leasecore.SequenceNumber{SequenceNumber: leasecore.SHARD_END}
		_, err = leasecore.CreateLease(ctx, api, tbl, fin)
		note("create finished", code(err))
		deleted, err = leasecore.DeleteFinishedLease(ctx, api, tbl, fin.LeaseKey)
		note("delete finished", deleted, code(err))
		deleted, err = leasecore.DeleteLease(ctx, api, tbl, fin.LeaseKey)
		note("delete again", deleted, code(err))
		results[name] = log
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
	t.Logf("%d outcomes agree", len(results["model"]))
}

// TestModelMatchesDynaliteOnScanPages fills both with leases large enough
// that a 1 MB page holds only part of them, and compares the pages: item
// counts, LastEvaluatedKey, the read units each page reports, and what
// leasecore.ScanTable makes of them, with and without Limit.
func TestModelMatchesDynaliteOnScanPages(t *testing.T) {
	ctx := context.Background()
	type page struct {
		Count int32
		Last  string
		Units float64
	}
	pages := map[string][]page{}
	for name, b := range backends(t) {
		for i := range 300 {
			l := leasecore.Lease{LeaseKey: fmt.Sprintf("shardId-%012d", i), LeaseOwner: "w", Checkpoint: leasecore.SequenceNumber{SequenceNumber: leasecore.LATEST},
				ParentShardIDs: []string{fmt.Sprintf("%04000d", i)}} // about 4 KB each: 1 MB is about 250 of them
			if _, err := leasecore.CreateLease(ctx, b.api, b.name, l); err != nil {
				t.Fatal(err)
			}
		}
		for _, limit := range []int32{0, 100} {
			in := &dynamodb.ScanInput{TableName: aws.String(b.name), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}
			if limit > 0 {
				in.Limit = aws.Int32(limit)
			}
			for {
				out, err := b.api.Scan(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				p := page{Count: out.Count, Units: units(out.ConsumedCapacity)}
				if k, ok := out.LastEvaluatedKey["leaseKey"].(*types.AttributeValueMemberS); ok {
					p.Last = k.Value
				}
				pages[name] = append(pages[name], p)
				if len(out.LastEvaluatedKey) == 0 {
					break
				}
				in.ExclusiveStartKey = out.LastEvaluatedKey
			}
		}
		res, err := leasecore.ScanTable(ctx, b.api, b.name, leasecore.ScanOptions{})
		if err != nil || len(res.Leases) != 300 {
			t.Fatalf("%s: ScanTable: %d leases, %v", name, len(res.Leases), err)
		}
	}
	// dynalite cuts a page at 1 MB of its estimate of DynamoDB's storage
	// format (attribute names count one byte), the model at 1 MB of the
	// billed item size, so the model's 1 MB pages hold a few items fewer
	// (docs/scale.md, model and dynalite). Everything else agrees: pages cut
	// by Limit, the LastEvaluatedKey of a page cut at the very end, the
	// units of every page.
	d, m := pages["dynalite"], pages["model"]
	if len(d) != len(m) {
		t.Fatalf("pages: dynalite %+v, model %+v", d, m)
	}
	var du, mu float64
	for i := range d {
		du, mu = du+d[i].Units, mu+m[i].Units
		if i >= 2 && (d[i].Count != m[i].Count || d[i].Units != m[i].Units || (d[i].Last == "") != (m[i].Last == "")) {
			t.Errorf("Limit page %d: dynalite %+v, model %+v", i, d[i], m[i])
		}
	}
	if c := float64(m[0].Count) / float64(d[0].Count); c < 0.97 || c > 1 {
		t.Errorf("first 1 MB page: model %d items, dynalite %d", m[0].Count, d[0].Count)
	}
	if d[0].Count+d[1].Count != 300 || m[0].Count+m[1].Count != 300 || du-mu > 1 || mu-du > 1 {
		t.Errorf("1 MB pages: dynalite %+v, model %+v", d[:2], m[:2])
	}
	t.Logf("pages: dynalite %+v; model %+v", d, m)
}

func key(k string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"leaseKey": &types.AttributeValueMemberS{Value: k}}
}

func units(c *types.ConsumedCapacity) float64 {
	if c == nil {
		return -1
	}
	return aws.ToFloat64(c.CapacityUnits)
}

func itemOf(t *testing.T, api table, tbl, k string) map[string]types.AttributeValue {
	out, err := api.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: &tbl, Key: key(k), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// TestModelMatchesDynaliteOnAFleet runs the same small fleet scenario on
// dynalite and on the model, on the real clock with short timings
// (failover 1s): 16 leases, two workers balance, one crashes and the other
// takes its leases, a third joins and the three balance. The outcomes must
// be the same; the times are logged side by side.
func TestModelMatchesDynaliteOnAFleet(t *testing.T) {
	const leases = 16
	cfg := leasecore.Config{FailoverTime: time.Second}
	for name, b := range backends(t) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for i := range leases {
			l := leasecore.Lease{LeaseKey: fmt.Sprintf("shardId-%012d", i), Checkpoint: leasecore.SequenceNumber{SequenceNumber: leasecore.TRIM_HORIZON}}
			if _, err := leasecore.CreateLease(ctx, b.api, b.name, l); err != nil {
				t.Fatal(err)
			}
		}
		start := func(id string) (*leasecore.Coordinator, context.CancelFunc) {
			c := cfg
			c.WorkerID = id
			co, err := leasecore.NewCoordinator(b.api, b.name, c, clock.RealClock(), leasecore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			wctx, wcancel := context.WithCancel(ctx)
			if err := co.Start(wctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { wcancel(); _ = co.Stop(context.Background(), false) })
			return co, wcancel
		}
		wait := func(what string, limit time.Duration, cond func() bool) time.Duration {
			t0 := time.Now()
			for !cond() {
				if time.Since(t0) > limit {
					t.Fatalf("%s: %s not reached in %s", name, what, limit)
				}
				time.Sleep(20 * time.Millisecond)
			}
			return time.Since(t0)
		}
		held := func(c *leasecore.Coordinator) int { return len(c.Held()) }
		a, _ := start("a")
		bw, crashB := start("b")
		balanced := wait("a balanced pair", 30*time.Second, func() bool { return held(a) == leases/2 && held(bw) == leases/2 })
		crashB()
		_ = bw.Stop(context.Background(), false)
		takeover := wait("takeover", 10*time.Second, func() bool { return held(a) == leases })
		c, _ := start("c")
		join := wait("join", 30*time.Second, func() bool { return held(a) == leases/2 && held(c) == leases/2 })
		st := a.Stats()
		t.Logf("%s: balanced in %s, takeover %s, join %s; a: taken %d stolen %d lost %d", name,
			balanced.Round(10*time.Millisecond), takeover.Round(10*time.Millisecond), join.Round(10*time.Millisecond), st.Taken, st.Stolen, st.Lost)
		cancel()
	}
}
