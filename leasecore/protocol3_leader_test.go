package leasecore

import (
	"context"
	"testing"
)

// TestAssignLease3 checks assignLease's condition and update
// (DynamoDBLeaseRefresher.assignLease, DynamoDBLeaseSerializer
// getDynamoLeaseOwnerExpectation, getDynamoExistentExpectation,
// getDynamoAssignLeaseUpdate) against the local server.
func TestAssignLease3(t *testing.T) {
	ctx := context.Background()
	ddb, table := newKCL3Table(t, 3, "", "a", "a")

	// Unassigned: the condition is "no leaseOwner"; no owner switch.
	un := mustGet(t, ddb, table, shardKey(0))
	got, ok, err := AssignLease3(ctx, ddb, table, un, "b")
	if err != nil || !ok || got.LeaseOwner != "b" || got.LeaseCounter != un.LeaseCounter+1 || got.OwnerSwitchesSinceCheckpoint != un.OwnerSwitchesSinceCheckpoint {
		t.Fatalf("assign unassigned: %+v ok=%v err=%v", got, ok, err)
	}
	// The same seen lease again: it has an owner now, the condition fails.
	if _, ok, err := AssignLease3(ctx, ddb, table, un, "c"); err != nil || ok {
		t.Fatalf("assign with a stale view: ok=%v err=%v, want a condition failure", ok, err)
	}

	// Owned by a, renewed since the scan: the counter is no condition.
	seen := mustGet(t, ddb, table, shardKey(1))
	if _, err := RenewLease3(ctx, ddb, table, seen, "a"); err != nil {
		t.Fatal(err)
	}
	got, ok, err = AssignLease3(ctx, ddb, table, seen, "b")
	if err != nil || !ok || got.LeaseOwner != "b" || got.LeaseCounter != seen.LeaseCounter+2 || got.OwnerSwitchesSinceCheckpoint != seen.OwnerSwitchesSinceCheckpoint+1 {
		t.Fatalf("assign from a to b: %+v ok=%v err=%v", got, ok, err)
	}
	if cur := mustGet(t, ddb, table, shardKey(1)); cur.LeaseOwner != "b" || cur.CheckpointOwner != "" {
		t.Fatalf("item after assign: %+v", cur)
	}

	// In handoff (a to b): seen with both owners, the assignment clears
	// checkpointOwner; to the checkpoint owner it counts an owner switch.
	seen = mustGet(t, ddb, table, shardKey(2))
	h, ok, err := InitiateHandoff3(ctx, ddb, table, seen, "b")
	if err != nil || !ok || h.LeaseOwner != "b" || h.CheckpointOwner != "a" || h.LeaseCounter != seen.LeaseCounter {
		t.Fatalf("handoff: %+v ok=%v err=%v", h, ok, err)
	}
	// Seen before the handoff, or with its leaseOwner but no
	// checkpointOwner: the condition fails.
	if _, ok, err := AssignLease3(ctx, ddb, table, seen, "c"); err != nil || ok {
		t.Fatalf("assign ignoring the handoff: ok=%v err=%v, want a condition failure", ok, err)
	}
	noCp := h
	noCp.CheckpointOwner = ""
	if _, ok, err := AssignLease3(ctx, ddb, table, noCp, "c"); err != nil || ok {
		t.Fatalf("assign seen with no checkpointOwner: ok=%v err=%v, want a condition failure", ok, err)
	}
	got, ok, err = AssignLease3(ctx, ddb, table, h, "a")
	if err != nil || !ok || got.LeaseOwner != "a" || got.CheckpointOwner != "" || got.OwnerSwitchesSinceCheckpoint != h.OwnerSwitchesSinceCheckpoint+1 {
		t.Fatalf("assign back to the checkpoint owner: %+v ok=%v err=%v", got, ok, err)
	}

	// A deleted lease is not recreated by the write.
	gone := mustGet(t, ddb, table, shardKey(0))
	if _, err := DeleteLease(ctx, ddb, table, gone.LeaseKey); err != nil {
		t.Fatal(err)
	}
	gone.LeaseOwner = ""
	if _, ok, err := AssignLease3(ctx, ddb, table, gone, "b"); err != nil || ok {
		t.Fatalf("assign a deleted lease: ok=%v err=%v, want a condition failure", ok, err)
	}
	if _, found, _ := GetLease(ctx, ddb, table, gone.LeaseKey, true); found {
		t.Fatal("assign recreated a deleted lease")
	}
}

// TestInitiateHandoff3 checks initiateGracefulLeaseHandoff's condition:
// the owner seen, no checkpointOwner, the item exists; the counter stays.
func TestInitiateHandoff3(t *testing.T) {
	ctx := context.Background()
	ddb, table := newKCL3Table(t, 2, "a", "a")
	seen := mustGet(t, ddb, table, shardKey(0))
	// The owner's renewal does not fail the handoff (no counter condition).
	if _, err := RenewLease3(ctx, ddb, table, seen, "a"); err != nil {
		t.Fatal(err)
	}
	h, ok, err := InitiateHandoff3(ctx, ddb, table, seen, "b")
	if err != nil || !ok {
		t.Fatalf("handoff: ok=%v err=%v", ok, err)
	}
	if cur := mustGet(t, ddb, table, shardKey(0)); cur.LeaseOwner != "b" || cur.CheckpointOwner != "a" || cur.LeaseCounter != seen.LeaseCounter+1 || h.LeaseCounter != cur.LeaseCounter {
		t.Fatalf("item after handoff: %+v (returned %+v)", cur, h)
	}
	// A second handoff of the same lease, from its new leaseOwner: the
	// checkpointOwner exists, the condition fails.
	again := h
	again.CheckpointOwner = ""
	if _, ok, err := InitiateHandoff3(ctx, ddb, table, again, "c"); err != nil || ok {
		t.Fatalf("second handoff: ok=%v err=%v, want a condition failure", ok, err)
	}
	// Another owner than seen.
	other := mustGet(t, ddb, table, shardKey(1))
	other.LeaseOwner = "z"
	if _, ok, err := InitiateHandoff3(ctx, ddb, table, other, "b"); err != nil || ok {
		t.Fatalf("handoff from a worker that does not own it: ok=%v err=%v", ok, err)
	}
	// No owner seen: not a handoff.
	other.LeaseOwner = ""
	if _, _, err := InitiateHandoff3(ctx, ddb, table, other, "b"); err == nil {
		t.Fatal("handoff of an unassigned lease: want an error")
	}
}
