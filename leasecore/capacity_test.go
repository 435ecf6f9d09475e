package leasecore

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// ItemSize counts an item as dynalite (and DynamoDB) do: padded to exactly
// 1 KB by its own count, every fixture item and an item of every
// (ASCII-valued) attribute type costs dynalite one write unit, and one byte
// more costs two.
func TestItemSizeMatchesDynalite(t *testing.T) {
	c := emulator.DynamoDB(t)
	table := emulator.Name(t, "size")
	emulator.CreateLeaseTable(t, c, table)
	ctx := context.Background()
	items := []map[string]types.AttributeValue{{
		"leaseKey": &types.AttributeValueMemberS{Value: "every type"},
		"n":        &types.AttributeValueMemberN{Value: "-1.0E7"}, "n2": &types.AttributeValueMemberN{Value: "0.00120"},
		"n3": &types.AttributeValueMemberN{Value: "12345"}, "n4": &types.AttributeValueMemberN{Value: "0"},
		"n5": &types.AttributeValueMemberN{Value: "-49590338271490256608559692538361.57109"},
		"b":  &types.AttributeValueMemberB{Value: []byte{0, 1, 2, 250, 255}},
		"ss": &types.AttributeValueMemberSS{Value: []string{"a", "bc"}}, "ns": &types.AttributeValueMemberNS{Value: []string{"1", "-2.5"}},
		"bs": &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}}, "t": &types.AttributeValueMemberBOOL{Value: true},
		"null": &types.AttributeValueMemberNULL{Value: true},
		"list": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "x"}, &types.AttributeValueMemberL{Value: []types.AttributeValue{}}}},
		"map":  &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": &types.AttributeValueMemberN{Value: "3"}, "e": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}}},
	}}
	for _, name := range leaseFixtures {
		items = append(items, loadFixture(t, name)...)
	}
	for i, item := range items {
		for _, extra := range []int{0, 1} {
			padded := map[string]types.AttributeValue{}
			for k, v := range item {
				padded[k] = v
			}
			pad := 1024 - ItemSize(item) - len("pad") + extra
			padded["pad"] = &types.AttributeValueMemberS{Value: strings.Repeat("x", pad)}
			if got := ItemSize(padded); got != 1024+extra {
				t.Fatalf("item %d: padded size %d", i, got)
			}
			// A put costs the larger of the old and the new item: none.
			_, _ = c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: keyOf(ItemKey(item))})
			out, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: padded,
				ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := aws.ToFloat64(out.ConsumedCapacity.CapacityUnits), float64(1+extra); got != want {
				t.Errorf("item %d (%s) padded to %d bytes by ItemSize: dynalite charged %v WCU, want %v", i, ItemKey(item), 1024+extra, got, want)
			}
		}
	}
}

// Each lease operation counts the units DynamoDB answered under its own
// name: a small lease's take, renewal, checkpoint and release are one write
// unit each, a Scan of N leases half a unit per 4 KB of them, and a
// conditional write that fails is estimated (DynamoDB charges it, but its
// error carries no ConsumedCapacity) while its read back is answered.
func TestCapacityPerOperation(t *testing.T) {
	const n = 40
	ddb, table := newLeaseTable(t, n)
	units := &Capacity{}
	api := meteredAPI{api: ddb, c: &counters{}, units: units}
	ctx := context.Background()

	res, err := ScanTable(WithCapacityOp(ctx, OpScan), api, table, ScanOptions{})
	if err != nil || len(res.Leases) != n {
		t.Fatalf("scan: %d leases, %v", len(res.Leases), err)
	}
	size := 0
	for _, l := range res.Leases {
		size += ItemSize(EncodeLease(l))
	}
	wantScan := math.Ceil(float64(size)/4096) / 2
	if got := units.ByOp()[OpScan]; got != (Units{Read: wantScan}) || res.ReadUnits != wantScan || wantScan < 1 {
		t.Errorf("scan of %d leases (%d bytes): %+v (ScanResult %v), want %v RCU", n, size, got, res.ReadUnits, wantScan)
	}

	l, ok, err := TakeLease(WithCapacityOp(ctx, OpTake), api, table, res.Leases[0], "w1")
	if err != nil || !ok {
		t.Fatalf("take: %v %v", ok, err)
	}
	l, err = RenewLease(WithCapacityOp(ctx, OpRenew), api, table, l, "w1")
	if err != nil {
		t.Fatal(err)
	}
	l, err = CheckpointLease(WithCapacityOp(ctx, OpCheckpoint), api, table, l, SequenceNumber{SequenceNumber: "49590338271490256608559692538361571095921575989136588898"})
	if err != nil {
		t.Fatal(err)
	}
	// A stale counter: the renewal fails its condition and reads back.
	stale := l
	stale.LeaseCounter -= 2
	if _, err := RenewLease(WithCapacityOp(ctx, OpRenew), api, table, stale, "w1"); err == nil {
		t.Fatal("renewal on a stale counter succeeded")
	}
	if _, err := ReleaseLease(WithCapacityOp(ctx, OpRelease), api, table, l, "w1"); err != nil {
		t.Fatal(err)
	}
	if _, err := ReleaseLease(ctx, api, table, l, "w1"); err == nil {
		t.Fatal("second release succeeded")
	}
	want := map[string]Units{
		OpScan: {Read: wantScan}, OpTake: {Write: 1}, OpCheckpoint: {Write: 1}, OpRelease: {Write: 1},
		OpRenew: {Write: 2, Read: 1}, // the renewal, the failed one, and its consistent read back
		OpOther: {Write: 1, Read: 1}, // the failed release, untagged, and its read back
	}
	got := units.ByOp()
	for op, w := range want {
		if got[op] != w {
			t.Errorf("%s: %+v, want %+v", op, got[op], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("ops counted: %v", CapacityOps(got))
	}
	if e := units.Estimated(); e != (Units{Write: 2}) {
		t.Errorf("estimated %+v, want the two failed writes' 2 WCU", e)
	}

	// A lease over 1 KB costs two units a renewal (the larger of the item
	// before and after the write).
	big := res.Leases[1]
	big.Extra = map[string]types.AttributeValue{"note": &types.AttributeValueMemberS{Value: strings.Repeat("x", 1100)}}
	if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: EncodeLease(big)}); err != nil {
		t.Fatal(err)
	}
	units2 := &Capacity{}
	api.units = units2
	if _, err := RenewLease(WithCapacityOp(ctx, OpRenew), api, table, big, ""); err != nil {
		t.Fatal(err)
	}
	if got := units2.ByOp()[OpRenew]; got != (Units{Write: 2}) {
		t.Errorf("renewal of a %d-byte lease: %+v, want 2 WCU", ItemSize(EncodeLease(big)), got)
	}
}

// answeredUnits sums what DynamoDB answered, per operation, as a second
// count to check the coordinator's against.
type answeredUnits struct {
	CoordinatorAPI
	mu  sync.Mutex
	ops map[string]Units
}

func (a *answeredUnits) add(ctx context.Context, u Units) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ops[CapacityOpOf(ctx)] = a.ops[CapacityOpOf(ctx)].Plus(u)
}

func (a *answeredUnits) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	out, err := a.CoordinatorAPI.Scan(ctx, in, opts...)
	if err == nil {
		a.add(ctx, Units{Read: aws.ToFloat64(out.ConsumedCapacity.CapacityUnits)})
	}
	return out, err
}

func (a *answeredUnits) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := a.CoordinatorAPI.GetItem(ctx, in, opts...)
	if err == nil {
		a.add(ctx, Units{Read: aws.ToFloat64(out.ConsumedCapacity.CapacityUnits)})
	}
	return out, err
}

func (a *answeredUnits) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := a.CoordinatorAPI.UpdateItem(ctx, in, opts...)
	if err == nil {
		a.add(ctx, Units{Write: aws.ToFloat64(out.ConsumedCapacity.CapacityUnits)})
	}
	return out, err
}

// A running coordinator reports, per operation, exactly the units dynalite
// answered for its calls: every scan, take and renewal.
func TestCoordinatorReportsUnits(t *testing.T) {
	ddb, table := newLeaseTable(t, 6)
	api := &answeredUnits{CoordinatorAPI: ddb, ops: map[string]Units{}}
	// Renewals every 975ms, each with as long to be answered: no retries
	// on a busy machine, which would add estimated units of failed writes.
	w := startWorker(t, api, table, "w1", Config{FailoverTime: 3 * time.Second, TakerInterval: 500 * time.Millisecond})
	waitFor(t, 15*time.Second, "6 leases held and renewed twice", func() bool {
		s := w.c.Stats()
		return s.Held == 6 && s.Renewals >= 12 && s.TakerRuns >= 2
	})
	w.crash()
	s := w.c.Stats()
	if s.Retries > 0 {
		t.Logf("%d retries: the counts below may include estimated failed writes", s.Retries)
	}
	if s.Units[OpTake] != (Units{Write: float64(s.Taken)}) || s.Units[OpRenew] != (Units{Write: float64(s.Renewals)}) {
		t.Errorf("takes %d, renewals %d: units %+v", s.Taken, s.Renewals, s.Units)
	}
	if s.Units[OpScan].Read < float64(s.TakerRuns)/2 {
		t.Errorf("%d scans: %+v", s.TakerRuns, s.Units[OpScan])
	}
	for op, u := range api.ops {
		if s.Units[op] != u {
			t.Errorf("%s: coordinator counted %+v, dynalite answered %+v", op, s.Units[op], u)
		}
	}
	if len(s.Units) != len(api.ops) {
		t.Errorf("ops: coordinator %v, answered %v", CapacityOps(s.Units), CapacityOps(api.ops))
	}
}

func TestNumberSize(t *testing.T) {
	for _, tc := range []struct {
		n    string
		want int
	}{
		{"0", 1}, {"1", 2}, {"12", 2}, {"123", 3}, {"10", 2}, {"-1", 3}, {"0.5", 2}, {"0.05", 2}, {"1.5", 3}, {"1e3", 2}, {"12e1", 3},
	} {
		if got := numberSize(tc.n); got != tc.want {
			t.Errorf("numberSize(%s) = %d, want %d", tc.n, got, tc.want)
		}
	}
}
