package leasecore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestQueryOwnedKeys(t *testing.T) {
	ddb, table := newKCL3Table(t, 5, "w", "x", "w", "", "w")
	keys, err := QueryOwnedKeys(context.Background(), ddb, table, "w")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	if want := []string{shardKey(0), shardKey(2), shardKey(4)}; !slices.Equal(keys, want) {
		t.Fatalf("keys of w %v, want %v", keys, want)
	}
	if keys, err := QueryOwnedKeys(context.Background(), ddb, table, "nobody"); err != nil || len(keys) != 0 {
		t.Fatalf("keys of nobody %v, %v", keys, err)
	}
	// Every page: with one item per page the server pages three times.
	paged := &onePerPage{Client: ddb}
	keys, err = QueryOwnedKeys(context.Background(), paged, table, "w")
	slices.Sort(keys)
	if want := []string{shardKey(0), shardKey(2), shardKey(4)}; err != nil || !slices.Equal(keys, want) || paged.pages < 3 {
		t.Fatalf("paged: keys %v (%v) in %d pages, want %v", keys, err, paged.pages, want)
	}
}

// onePerPage asks the real server for one item per page.
type onePerPage struct {
	*dynamodb.Client
	pages int
}

func (o *onePerPage) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	o.pages++
	in.Limit = aws.Int32(1)
	return o.Client.Query(ctx, in, opts...)
}

func TestRenewLease3(t *testing.T) {
	ctx := context.Background()
	ddb, table := newKCL3Table(t, 1, "w")
	key := shardKey(0)
	held := mustGet(t, ddb, table, key)
	tput := 12.5
	held.ThroughputKBps = &tput

	l, err := RenewLease3(ctx, ddb, table, held, "w")
	if err != nil {
		t.Fatal(err)
	}
	item := rawItem(t, ddb, table, key)
	if got := numAttr(t, item, AttrThroughputKBps); got != "12.5" {
		t.Errorf("throughputKBps %s, want 12.5", got)
	}
	if cur := mustGet(t, ddb, table, key); cur.LeaseCounter != held.LeaseCounter+1 || l.LeaseCounter != cur.LeaseCounter {
		t.Fatalf("counter %d (returned %d), want %d", cur.LeaseCounter, l.LeaseCounter, held.LeaseCounter+1)
	}

	// The same write again: its condition fails, and the read shows this
	// worker's own applied renewal.
	if again, err := RenewLease3(ctx, ddb, table, held, "w"); err != nil || again.LeaseCounter != held.LeaseCounter+1 {
		t.Fatalf("repeated renewal: %+v, %v; want recognised as applied", again, err)
	}
	// Without a throughput, none is written (the item keeps the last one).
	l.ThroughputKBps = nil
	if l, err = RenewLease3(ctx, ddb, table, l, "w"); err != nil {
		t.Fatal(err)
	}
	if got := numAttr(t, rawItem(t, ddb, table, key), AttrThroughputKBps); got != "12.5" {
		t.Errorf("throughputKBps %s after a renewal without one, want 12.5 kept", got)
	}

	// A handoff away: the counter condition holds, the checkpointOwner one
	// fails; the read shows the handoff.
	leaderHandoff(t, ddb, table, key, "next")
	_, err = RenewLease3(ctx, ddb, table, l, "w")
	var hr *HandoffRequestedError
	if !errors.As(err, &hr) || hr.Lease.LeaseOwner != "next" || hr.Lease.CheckpointOwner != "w" {
		t.Fatalf("renewal after the handoff: %v, want *HandoffRequestedError to next", err)
	}
	if cur := mustGet(t, ddb, table, key); cur.LeaseCounter != l.LeaseCounter {
		t.Fatalf("the failed renewal wrote: counter %d, want %d", cur.LeaseCounter, l.LeaseCounter)
	}
	// Adopted, the renewal goes through without the checkpointOwner
	// condition and leaves the handoff as it is.
	l.LeaseOwner, l.CheckpointOwner = hr.Lease.LeaseOwner, hr.Lease.CheckpointOwner
	if l, err = RenewLease3(ctx, ddb, table, l, "w"); err != nil {
		t.Fatalf("renewal in handoff: %v", err)
	}
	if cur := mustGet(t, ddb, table, key); cur.LeaseCounter != l.LeaseCounter || cur.LeaseOwner != "next" || cur.CheckpointOwner != "w" {
		t.Fatalf("after the renewal in handoff: %+v", cur)
	}
	// Its own applied renewal in handoff is recognised on the actual owner.
	prev := l
	prev.LeaseCounter--
	if _, err := RenewLease3(ctx, ddb, table, prev, "w"); err != nil {
		t.Fatalf("repeated renewal in handoff: %v", err)
	}

	// The leader assigns it away (assignLease): lost.
	if !leaderAssign(t, ddb, table, key, "next") {
		t.Fatal("leader assign failed")
	}
	if _, err := RenewLease3(ctx, ddb, table, l, "w"); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("renewal after the reassignment: %v, want ErrLeaseLost", err)
	}
}

// A handoff called off: the leader assigns the lease back to this worker
// (assignLease clears checkpointOwner and adds 1, the counter a renewal
// would have reached). The holder, whose shard stopped for the handoff,
// must not count that as its renewal: it would hold a lease nothing reads.
func TestRenewLease3HandoffCalledOff(t *testing.T) {
	ctx := context.Background()
	ddb, table := newKCL3Table(t, 1, "w")
	key := shardKey(0)
	leaderHandoff(t, ddb, table, key, "next")
	held := mustGet(t, ddb, table, key) // adopted: leaseOwner next, checkpointOwner w
	if !leaderAssign(t, ddb, table, key, "w") {
		t.Fatal("leader assign failed")
	}
	if cur := mustGet(t, ddb, table, key); cur.LeaseOwner != "w" || cur.CheckpointOwner != "" || cur.LeaseCounter != held.LeaseCounter+1 {
		t.Fatalf("setup: %+v", cur)
	}
	if l, err := RenewLease3(ctx, ddb, table, held, "w"); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("renewal of a lease held in handoff after the leader gave it back: %+v, %v; want ErrLeaseLost", l, err)
	}
}

func TestRenewLease3NotAHandoffOfThisWorker(t *testing.T) {
	ctx := context.Background()
	ddb, table := newKCL3Table(t, 1, "w")
	key := shardKey(0)
	held := mustGet(t, ddb, table, key)
	// checkpointOwner set, but naming another worker: no handoff of w's.
	leaderWrite(t, ddb, table, key, "SET #c = :x", "attribute_exists(#c) OR attribute_not_exists(#c)",
		map[string]string{"#c": AttrCheckpointOwner}, map[string]types.AttributeValue{":x": sAV("x")})
	_, err := RenewLease3(ctx, ddb, table, held, "w")
	var hr *HandoffRequestedError
	if errors.As(err, &hr) || !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("renewal with another worker's checkpointOwner: %v, want ErrLeaseLost", err)
	}
}

func TestHandoffLease(t *testing.T) {
	ctx := context.Background()
	ddb, table := newKCL3Table(t, 1, "w")
	key := shardKey(0)
	before := mustGet(t, ddb, table, key)
	leaderHandoff(t, ddb, table, key, "next")
	held := before
	held.LeaseOwner, held.CheckpointOwner = "next", "w"

	// The condition names this worker as checkpoint owner: another worker's
	// write fails and changes nothing.
	other := held
	other.CheckpointOwner = "x"
	if _, err := HandoffLease(ctx, ddb, table, other, "x"); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("handoff write of a worker that is not the checkpoint owner: %v, want ErrLeaseLost", err)
	}
	// And it names the next owner: with another next owner it fails too.
	wrongNext := held
	wrongNext.LeaseOwner = "y"
	if _, err := HandoffLease(ctx, ddb, table, wrongNext, "w"); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("handoff write to the wrong next owner: %v, want ErrLeaseLost", err)
	}
	if cur := mustGet(t, ddb, table, key); cur.LeaseCounter != before.LeaseCounter || cur.CheckpointOwner != "w" {
		t.Fatalf("a failed handoff write changed the item: %+v", cur)
	}

	l, err := HandoffLease(ctx, ddb, table, held, "w")
	if err != nil {
		t.Fatal(err)
	}
	cur := mustGet(t, ddb, table, key)
	if cur.LeaseOwner != "next" || cur.CheckpointOwner != "" || cur.LeaseCounter != before.LeaseCounter+1 ||
		cur.OwnerSwitchesSinceCheckpoint != before.OwnerSwitchesSinceCheckpoint || l.LeaseCounter != cur.LeaseCounter {
		t.Fatalf("after the handoff write: %+v (returned %+v), before %+v", cur, l, before)
	}
	if _, ok := rawItem(t, ddb, table, key)[AttrCheckpointOwner]; ok {
		t.Fatal("checkpointOwner still on the item")
	}
	// Written again (an attempt whose answer was lost): done, not lost.
	if _, err := HandoffLease(ctx, ddb, table, held, "w"); err != nil {
		t.Fatalf("repeated handoff write: %v", err)
	}
}

func TestEvictLease3(t *testing.T) {
	ctx := context.Background()
	ddb, table := newKCL3Table(t, 3, "w", "w", "w")

	// Not in handoff: leaseOwner removed, counter + 1.
	k0 := shardKey(0)
	held := mustGet(t, ddb, table, k0)
	if _, err := EvictLease3(ctx, ddb, table, held, "w"); err != nil {
		t.Fatal(err)
	}
	cur := mustGet(t, ddb, table, k0)
	if cur.LeaseOwner != "" || cur.CheckpointOwner != "" || cur.LeaseCounter != held.LeaseCounter+1 {
		t.Fatalf("evicted: %+v", cur)
	}
	// Again: the item shows the eviction applied.
	if _, err := EvictLease3(ctx, ddb, table, held, "w"); err != nil {
		t.Fatalf("repeated evict: %v", err)
	}

	// In handoff: the next owner stays, checkpointOwner goes.
	k1 := shardKey(1)
	held = mustGet(t, ddb, table, k1)
	leaderHandoff(t, ddb, table, k1, "next")
	inHandoff := held
	inHandoff.LeaseOwner, inHandoff.CheckpointOwner = "next", "w"
	if _, err := EvictLease3(ctx, ddb, table, inHandoff, "w"); err != nil {
		t.Fatal(err)
	}
	if cur := mustGet(t, ddb, table, k1); cur.LeaseOwner != "next" || cur.CheckpointOwner != "" || cur.LeaseCounter != held.LeaseCounter+1 {
		t.Fatalf("evicted in handoff: %+v", cur)
	}

	// A handoff the evicting worker has not seen: its condition (no
	// checkpointOwner, leaseOwner w) fails, the read shows the handoff.
	k2 := shardKey(2)
	held = mustGet(t, ddb, table, k2)
	leaderHandoff(t, ddb, table, k2, "next")
	_, err := EvictLease3(ctx, ddb, table, held, "w")
	var hr *HandoffRequestedError
	if !errors.As(err, &hr) {
		t.Fatalf("evict of an unseen handoff: %v, want *HandoffRequestedError", err)
	}
	if cur := mustGet(t, ddb, table, k2); cur.LeaseCounter != held.LeaseCounter || cur.CheckpointOwner != "w" {
		t.Fatalf("the failed evict wrote: %+v", cur)
	}
	// Reassigned elsewhere: lost.
	if !leaderAssign(t, ddb, table, k2, "other") {
		t.Fatal("leader assign failed")
	}
	adopted := held
	adopted.LeaseOwner, adopted.CheckpointOwner = "next", "w"
	if _, err := EvictLease3(ctx, ddb, table, adopted, "w"); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("evict after reassignment: %v, want ErrLeaseLost", err)
	}
}

// TestCheckpointDuringHandoff: the KCL's checkpoint (updateLease) is
// conditioned on the counter alone, and the leader's handoff leaves the
// counter alone, so the old owner still checkpoints while it hands over,
// whether or not its renewer has seen the handoff yet.
func TestCheckpointDuringHandoff(t *testing.T) {
	ctx := context.Background()
	ddb, table := newKCL3Table(t, 1, "w")
	key := shardKey(0)
	held := mustGet(t, ddb, table, key)
	leaderHandoff(t, ddb, table, key, "next")

	l, err := CheckpointLease(ctx, ddb, table, held, SequenceNumber{SequenceNumber: "100"})
	if err != nil {
		t.Fatalf("checkpoint before the handoff was seen: %v", err)
	}
	if l.LeaseOwner != "next" || l.CheckpointOwner != "w" {
		t.Fatalf("checkpoint returned %+v, want the item's handoff", l)
	}
	// The same write again (its answer lost), from the lease as held
	// before: the item's leaseOwner is the next owner now, and the write is
	// recognised on the actual owner, not taken for a lost lease.
	if _, err := CheckpointLease(ctx, ddb, table, held, SequenceNumber{SequenceNumber: "100"}); err != nil {
		t.Fatalf("repeated checkpoint across the handoff: %v", err)
	}
	l2, err := CheckpointLease(ctx, ddb, table, l, SequenceNumber{SequenceNumber: "200"})
	if err != nil {
		t.Fatalf("checkpoint in handoff: %v", err)
	}
	if _, err := CheckpointLease(ctx, ddb, table, l, SequenceNumber{SequenceNumber: "200"}); err != nil {
		t.Fatalf("repeated checkpoint in handoff: %v", err)
	}
	cur := mustGet(t, ddb, table, key)
	if cur.Checkpoint.SequenceNumber != "200" || cur.LeaseCounter != l2.LeaseCounter || cur.LeaseOwner != "next" || cur.CheckpointOwner != "w" {
		t.Fatalf("after checkpoints in handoff: %+v", cur)
	}
}

// TestTakeLeaseEndsHandoff: KCL 3.x's takeLease (its taker in 2.x
// compatible mode) removes checkpointOwner, and counts an owner switch
// when the taker was the checkpoint owner (with another old owner, the
// switch counts anyway).
func TestTakeLeaseEndsHandoff(t *testing.T) {
	ctx := context.Background()
	ddb, table := newKCL3Table(t, 1, "w")
	key := shardKey(0)
	leaderHandoff(t, ddb, table, key, "next") // leaseOwner next, checkpointOwner w
	cur := mustGet(t, ddb, table, key)
	l, ok, err := TakeLease(ctx, ddb, table, cur, "next")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	after := mustGet(t, ddb, table, key)
	if after.CheckpointOwner != "" || l.CheckpointOwner != "" || after.LeaseOwner != "next" || after.OwnerSwitchesSinceCheckpoint != cur.OwnerSwitchesSinceCheckpoint {
		t.Fatalf("taken by the next owner: %+v (before %+v)", after, cur)
	}
	leaderHandoff(t, ddb, table, key, "w") // leaseOwner w, checkpointOwner next
	cur = mustGet(t, ddb, table, key)
	if _, ok, err := TakeLease(ctx, ddb, table, cur, "next"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if after := mustGet(t, ddb, table, key); after.CheckpointOwner != "" || after.OwnerSwitchesSinceCheckpoint != cur.OwnerSwitchesSinceCheckpoint+1 {
		t.Fatalf("taken by the checkpoint owner: %+v (before %+v)", after, cur)
	}
}

// TestRenewLeaseOwnWriteInHandoff: the 2.x renewal (a worker switched back
// to taking while it hands a lease over) also recognises its own applied
// write on the actual owner.
func TestRenewLeaseOwnWriteInHandoff(t *testing.T) {
	ctx := context.Background()
	ddb, table := newKCL3Table(t, 1, "w")
	key := shardKey(0)
	leaderHandoff(t, ddb, table, key, "next")
	held := mustGet(t, ddb, table, key)
	if _, err := RenewLease(ctx, ddb, table, held, "w"); err != nil {
		t.Fatal(err)
	}
	if _, err := RenewLease(ctx, ddb, table, held, "w"); err != nil {
		t.Fatalf("repeated renewal in handoff: %v, want recognised", err)
	}
}

// noReads fails every GetItem: the item must come from the error.
type noReads struct{}

func (noReads) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return nil, errors.New("read not expected")
}

// TestItemOnFailureUsesReturnedItem: DynamoDB returns the item with the
// condition failure (ReturnValuesOnConditionCheckFailure ALL_OLD), so no
// read is needed; dynalite does not (the other tests take the read path).
func TestItemOnFailureUsesReturnedItem(t *testing.T) {
	want := Lease{LeaseKey: "k", LeaseOwner: "next", CheckpointOwner: "w", LeaseCounter: 7, Checkpoint: SequenceNumber{SequenceNumber: TRIM_HORIZON}}
	err := fmt.Errorf("update: %w", &types.ConditionalCheckFailedException{Item: EncodeLease(want)})
	got, ok, rerr := itemOnFailure(context.Background(), noReads{}, "t", "k", err)
	if rerr != nil || !ok || got.LeaseOwner != "next" || got.CheckpointOwner != "w" || got.LeaseCounter != 7 {
		t.Fatalf("item from the error: %+v, %v, %v", got, ok, rerr)
	}
}
