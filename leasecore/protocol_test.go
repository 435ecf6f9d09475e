package leasecore

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// rawItem reads an item as stored, to check attributes exactly.
func rawItem(t *testing.T, ddb *dynamodb.Client, table, key string) map[string]types.AttributeValue {
	t.Helper()
	out, err := ddb.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: keyOf(key), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func attrNames(item map[string]types.AttributeValue) []string {
	var names []string
	for k := range item {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func numAttr(t *testing.T, item map[string]types.AttributeValue, name string) string {
	t.Helper()
	v, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("%s is %T, want N", name, item[name])
	}
	return v.Value
}

func mustGet(t *testing.T, ddb *dynamodb.Client, table, key string) Lease {
	t.Helper()
	l, ok, err := GetLease(context.Background(), ddb, table, key, true)
	if err != nil || !ok {
		t.Fatalf("get %s: found=%v err=%v", key, ok, err)
	}
	return l
}

func TestCreateLeaseOnlyIfAbsent(t *testing.T) {
	ddb, table := newLeaseTable(t, 0)
	ctx := context.Background()
	l := Lease{LeaseKey: "shardId-000000000007", Checkpoint: SequenceNumber{SequenceNumber: LATEST},
		ParentShardIDs: []string{"shardId-000000000001"}, StartingHashKey: "0", EndingHashKey: "100"}
	if ok, err := CreateLease(ctx, ddb, table, l); err != nil || !ok {
		t.Fatalf("first create: %v %v", ok, err)
	}
	l2 := l
	l2.Checkpoint.SequenceNumber = TRIM_HORIZON
	if ok, err := CreateLease(ctx, ddb, table, l2); err != nil || ok {
		t.Fatalf("second create: created=%v err=%v, want false, nil", ok, err)
	}
	item := rawItem(t, ddb, table, l.LeaseKey)
	want := []string{"checkpoint", "checkpointSubSequenceNumber", "endingHashKey", "leaseCounter", "leaseKey",
		"ownerSwitchesSinceCheckpoint", "parentShardId", "startingHashKey"}
	if got := attrNames(item); !reflect.DeepEqual(got, want) {
		t.Errorf("attributes %v, want %v (no owner, no empty values)", got, want)
	}
	if cp := item["checkpoint"].(*types.AttributeValueMemberS).Value; cp != LATEST {
		t.Errorf("checkpoint %s overwritten, want LATEST", cp)
	}
	if _, err := CreateLease(ctx, ddb, table, Lease{LeaseKey: "x", Checkpoint: SequenceNumber{SequenceNumber: "junk"}}); err == nil {
		t.Error("created a lease with an invalid checkpoint")
	}
}

func TestRenewLease(t *testing.T) {
	ddb, table := newLeaseTable(t, 1)
	ctx := context.Background()
	l, ok, err := TakeLease(ctx, ddb, table, mustGet(t, ddb, table, shardKey(0)), "w1")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	renewed, err := RenewLease(ctx, ddb, table, l, "w1")
	if err != nil || renewed.LeaseCounter != l.LeaseCounter+1 {
		t.Fatalf("renew: counter %d err %v", renewed.LeaseCounter, err)
	}
	if got := numAttr(t, rawItem(t, ddb, table, l.LeaseKey), "leaseCounter"); got != "2" {
		t.Fatalf("stored counter %s, want 2", got)
	}

	// The same renewal again is the "spurious" condition failure KCL
	// handles: its first attempt was applied but the answer was lost. The
	// item shows this worker and counter N+1, so it counts as renewed and the
	// counter is not bumped twice.
	again, err := RenewLease(ctx, ddb, table, l, "w1")
	if err != nil || again.LeaseCounter != 2 {
		t.Fatalf("spurious failure not recognised: counter %d err %v", again.LeaseCounter, err)
	}
	if got := numAttr(t, rawItem(t, ddb, table, l.LeaseKey), "leaseCounter"); got != "2" {
		t.Fatalf("stored counter %s after retry, want 2", got)
	}

	// Another worker renewing from the same stale counter has lost it.
	_, err = RenewLease(ctx, ddb, table, l, "w2")
	var lost *LeaseLostError
	if !errors.Is(err, ErrLeaseLost) || !errors.As(err, &lost) || lost.LeaseKey != l.LeaseKey {
		t.Fatalf("stale renew by another worker: %v, want ErrLeaseLost", err)
	}
}

func TestTakeLeaseCountsOwnerSwitches(t *testing.T) {
	ddb, table := newLeaseTable(t, 1)
	ctx := context.Background()
	key := shardKey(0)
	steps := []struct {
		worker       string
		wantSwitches string
	}{
		{"w1", "0"}, // unowned → w1: no switch
		{"w1", "0"}, // w1 → w1 (re-adopting its own): no switch
		{"w2", "1"}, // w1 → w2: a switch
		{"w1", "2"}, // and back
	}
	for i, st := range steps {
		cur := mustGet(t, ddb, table, key)
		taken, ok, err := TakeLease(ctx, ddb, table, cur, st.worker)
		if err != nil || !ok {
			t.Fatalf("step %d: take: %v %v", i, ok, err)
		}
		item := rawItem(t, ddb, table, key)
		if got := numAttr(t, item, "ownerSwitchesSinceCheckpoint"); got != st.wantSwitches {
			t.Errorf("step %d: ownerSwitchesSinceCheckpoint %s, want %s", i, got, st.wantSwitches)
		}
		if taken.LeaseOwner != st.worker || taken.LeaseCounter != cur.LeaseCounter+1 {
			t.Errorf("step %d: returned %s/%d", i, taken.LeaseOwner, taken.LeaseCounter)
		}
	}
	// A take from a stale read fails without error: someone else won.
	stale := mustGet(t, ddb, table, key)
	stale.LeaseCounter--
	if _, ok, err := TakeLease(ctx, ddb, table, stale, "w3"); ok || err != nil {
		t.Fatalf("stale take: taken=%v err=%v, want false, nil", ok, err)
	}
	if _, _, err := TakeLease(ctx, ddb, table, stale, ""); err == nil {
		t.Fatal("take with an empty worker id must be refused (never write empty strings)")
	}
}

func TestCheckpointLease(t *testing.T) {
	ddb, table := newLeaseTable(t, 0)
	ctx := context.Background()
	pending := SequenceNumber{SequenceNumber: "200"}
	seed := Lease{
		LeaseKey: "123456789012:orders:1700000000:shardId-000000000007", StreamName: "123456789012:orders:1700000000",
		ShardID: "shardId-000000000007", LeaseOwner: "w1", OwnerSwitchesSinceCheckpoint: 3,
		Checkpoint: SequenceNumber{SequenceNumber: "100"}, PendingCheckpoint: &pending, PendingCheckpointState: []byte("state"),
		StartingHashKey: "0", EndingHashKey: "99",
	}
	if ok, err := CreateLease(ctx, ddb, table, seed); err != nil || !ok {
		t.Fatal(ok, err)
	}
	cp := SequenceNumber{SequenceNumber: "49590338271490256608559692538361571095921575989136588898", SubSequenceNumber: 3}
	got, err := CheckpointLease(ctx, ddb, table, seed, cp)
	if err != nil {
		t.Fatal(err)
	}
	if got.Checkpoint != cp || got.LeaseCounter != 1 || got.OwnerSwitchesSinceCheckpoint != 0 || got.PendingCheckpoint != nil {
		t.Errorf("returned lease %+v", got)
	}
	item := rawItem(t, ddb, table, seed.LeaseKey)
	want := []string{"checkpoint", "checkpointSubSequenceNumber", "endingHashKey", "leaseCounter", "leaseKey", "leaseOwner",
		"ownerSwitchesSinceCheckpoint", "shardId", "startingHashKey", "streamName"}
	if names := attrNames(item); !reflect.DeepEqual(names, want) {
		t.Errorf("attributes %v, want %v (pending* removed, multi-stream kept)", names, want)
	}
	if numAttr(t, item, "checkpointSubSequenceNumber") != "3" || numAttr(t, item, "ownerSwitchesSinceCheckpoint") != "0" ||
		numAttr(t, item, "leaseCounter") != "1" {
		t.Errorf("stored %v", item)
	}

	// Retrying the same write after a lost answer is recognised as done.
	if again, err := CheckpointLease(ctx, ddb, table, seed, cp); err != nil || again.LeaseCounter != 1 {
		t.Fatalf("retry after lost answer: %v %v", again.LeaseCounter, err)
	}
	// A different checkpoint from the stale counter is a lost lease.
	if _, err := CheckpointLease(ctx, ddb, table, seed, SequenceNumber{SequenceNumber: "300"}); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("stale checkpoint: %v, want ErrLeaseLost", err)
	}
	if _, err := CheckpointLease(ctx, ddb, table, got, SequenceNumber{SequenceNumber: ""}); err == nil {
		t.Fatal("empty checkpoint must be refused")
	}
}

func TestReleaseLease(t *testing.T) {
	ddb, table := newLeaseTable(t, 1)
	ctx := context.Background()
	l, _, err := TakeLease(ctx, ddb, table, mustGet(t, ddb, table, shardKey(0)), "w1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReleaseLease(ctx, ddb, table, l, "w2"); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("release by a non-owner: %v, want ErrLeaseLost", err)
	}
	rel, err := ReleaseLease(ctx, ddb, table, l, "w1")
	if err != nil || rel.LeaseOwner != "" || rel.LeaseCounter != l.LeaseCounter+1 {
		t.Fatalf("release: %+v %v", rel, err)
	}
	item := rawItem(t, ddb, table, l.LeaseKey)
	if _, has := item["leaseOwner"]; has {
		t.Error("leaseOwner still present after release")
	}
	if numAttr(t, item, "leaseCounter") != "2" {
		t.Error("release must bump the counter so the old holder's next write fails")
	}
	if _, err := ReleaseLease(ctx, ddb, table, l, "w1"); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("second release: %v, want ErrLeaseLost", err)
	}
}

// A renewal cancelled by Stop may still be applied: the item shows this
// worker at counter N+1 while the worker holds N. The release must still
// give the lease up (a CI run left two leases owned by a worker that had
// stopped gracefully), and must not touch a lease another worker took.
func TestReleaseLeaseAfterOwnWriteLanded(t *testing.T) {
	ddb, table := newLeaseTable(t, 2)
	ctx := context.Background()
	l, _, err := TakeLease(ctx, ddb, table, mustGet(t, ddb, table, shardKey(0)), "w1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RenewLease(ctx, ddb, table, l, "w1"); err != nil { // the answer "lost": l keeps N
		t.Fatal(err)
	}
	rel, err := ReleaseLease(ctx, ddb, table, l, "w1")
	if err != nil || rel.LeaseOwner != "" || rel.LeaseCounter != l.LeaseCounter+2 {
		t.Fatalf("release after a renewal whose answer was lost: %+v %v", rel, err)
	}
	if _, has := rawItem(t, ddb, table, l.LeaseKey)["leaseOwner"]; has {
		t.Error("leaseOwner still present after release")
	}

	other, _, err := TakeLease(ctx, ddb, table, mustGet(t, ddb, table, shardKey(1)), "w1")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := TakeLease(ctx, ddb, table, other, "w2"); err != nil { // stolen
		t.Fatal(err)
	}
	if _, err := ReleaseLease(ctx, ddb, table, other, "w1"); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("release of a stolen lease: %v, want ErrLeaseLost", err)
	}
	if got := mustGet(t, ddb, table, shardKey(1)).LeaseOwner; got != "w2" {
		t.Fatalf("stolen lease now owned by %q, want w2", got)
	}
}

func TestMetaWritesNeverTouchNonLeaseItems(t *testing.T) {
	ddb, table := newLeaseTable(t, 1)
	ctx := context.Background()
	leader := map[string]types.AttributeValue{
		"leaseKey": &types.AttributeValueMemberS{Value: "Leader"}, "ownerName": &types.AttributeValueMemberS{Value: "w9"},
		"entityType": &types.AttributeValueMemberS{Value: "LEADER"},
	}
	if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: leader}); err != nil {
		t.Fatal(err)
	}
	key := shardKey(0)
	before := mustGet(t, ddb, table, key)
	if err := SetChildShardIDs(ctx, ddb, table, key, []string{"shardId-000000000002", "shardId-000000000003"}); err != nil {
		t.Fatal(err)
	}
	after := mustGet(t, ddb, table, key)
	if !reflect.DeepEqual(after.ChildShardIDs, []string{"shardId-000000000002", "shardId-000000000003"}) || after.LeaseCounter != before.LeaseCounter {
		t.Errorf("childShardIds %v counter %d→%d (must not bump)", after.ChildShardIDs, before.LeaseCounter, after.LeaseCounter)
	}
	if err := SetChildShardIDs(ctx, ddb, table, "Leader", []string{"shardId-000000000002"}); !errors.Is(err, ErrLeaseNotFound) {
		t.Errorf("childShardIds on the leader lock: %v, want ErrLeaseNotFound", err)
	}
	if err := SetChildShardIDs(ctx, ddb, table, "shardId-000000000099", []string{"shardId-000000000002"}); !errors.Is(err, ErrLeaseNotFound) {
		t.Errorf("childShardIds on a missing lease: %v, want ErrLeaseNotFound", err)
	}
	if err := SetChildShardIDs(ctx, ddb, table, key, nil); err != nil {
		t.Errorf("empty children must be a no-op: %v", err)
	}
	if _, has := rawItem(t, ddb, table, "shardId-000000000099")["leaseKey"]; has {
		t.Error("a meta update created an item")
	}
	if _, err := DeleteLease(ctx, ddb, table, "Leader"); err == nil {
		t.Error("DeleteLease deleted the leader lock")
	}
	if len(rawItem(t, ddb, table, "Leader")) == 0 {
		t.Fatal("leader lock gone")
	}
	if deleted, err := DeleteFinishedLease(ctx, ddb, table, key); err != nil || deleted {
		t.Errorf("deleted a lease not at SHARD_END: %v %v", deleted, err)
	}
	if deleted, err := DeleteLease(ctx, ddb, table, key); err != nil || !deleted {
		t.Errorf("delete lease: %v %v", deleted, err)
	}
	if deleted, err := DeleteLease(ctx, ddb, table, key); err != nil || deleted {
		t.Errorf("delete of a missing lease: deleted=%v err=%v, want false, nil", deleted, err)
	}
}

func TestDeleteFinishedLease(t *testing.T) {
	ddb, table := newLeaseTable(t, 0)
	ctx := context.Background()
	l := Lease{LeaseKey: shardKey(0), Checkpoint: SequenceNumber{SequenceNumber: SHARD_END}}
	if _, err := CreateLease(ctx, ddb, table, l); err != nil {
		t.Fatal(err)
	}
	if deleted, err := DeleteFinishedLease(ctx, ddb, table, l.LeaseKey); err != nil || !deleted {
		t.Fatalf("delete at SHARD_END: %v %v", deleted, err)
	}
}
