package kcl3fleet

import (
	"context"
	"errors"
	"testing"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// TestCreateLeases checks the shard sync's lease items: TRIM_HORIZON, no
// owner, counter 0, hash ranges, entityType LEASE.
func TestCreateLeases(t *testing.T) {
	ctx := context.Background()
	f := Setup(t, emulator.DynamoDB(t), Layout{Kind: NewApp})
	if err := f.CreateLeases(ctx, "shardId-000000000000", "shardId-000000000001"); err != nil {
		t.Fatal(err)
	}
	item := getItem(t, f.DDB, f.Tables.Lease, "leaseKey", "shardId-000000000001")
	mustEqual(t, "lease attributes", types(item), map[string]string{
		"leaseKey": "S", "leaseCounter": "N", "ownerSwitchesSinceCheckpoint": "N", "checkpoint": "S",
		"checkpointSubSequenceNumber": "N", "startingHashKey": "S", "endingHashKey": "S", "entityType": "S"})
	mustEqual(t, "checkpoint", str(item, "checkpoint"), "TRIM_HORIZON")
	mustEqual(t, "leaseCounter", str(item, "leaseCounter"), "0")
	mustEqual(t, "endingHashKey", str(item, "endingHashKey"), "340282366920938463463374607431768211455")
	// createLeaseIfNotExists: a second create fails its condition.
	if err := f.CreateLeases(ctx, "shardId-000000000000"); !errors.Is(err, ErrConditionFailed) {
		t.Errorf("second create: %v, want ErrConditionFailed", err)
	}
	leases, err := f.Leases(ctx)
	if err != nil || len(leases) != 2 {
		t.Fatalf("Leases = %v, %v; want 2 leases and the Migration3.0 item skipped", leases, err)
	}
}

// TestAssignLease checks assignLease's expectation and updates: it
// succeeds on the lease as read, sets leaseOwner, removes checkpointOwner
// and adds 1 to the counter (and to ownerSwitchesSinceCheckpoint on a
// change of owner); a stale expectation (owner or checkpointOwner other
// than seen) or a deleted lease fails.
func TestAssignLease(t *testing.T) {
	ctx := context.Background()
	f := Setup(t, emulator.DynamoDB(t), Layout{Kind: NewApp})
	if err := f.CreateLeases(ctx, "shard-a"); err != nil {
		t.Fatal(err)
	}
	l := f.NewLeader(LeaderConfig{WorkerID: "leader"})

	stale, _ := f.Lease(ctx, "shard-a")
	got, err := l.AssignLease(ctx, "shard-a", "w1")
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "owner after assign", got.LeaseOwner, "w1")
	mustEqual(t, "counter after assign", got.LeaseCounter, int64(1))
	mustEqual(t, "owner switches (no previous owner)", got.OwnerSwitchesSinceCheckpoint, int64(0))

	// The leader's view is stale: it saw no owner, the item has w1.
	if _, err := l.AssignLeaseSeen(ctx, stale, "w2"); !errors.Is(err, ErrConditionFailed) {
		t.Errorf("assign with a stale owner: %v, want ErrConditionFailed", err)
	}
	// A checkpointOwner the leader did not see also fails the write.
	seen, _ := f.Lease(ctx, "shard-a")
	if _, err := l.HandoffSeen(ctx, seen, "w2"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AssignLeaseSeen(ctx, seen, "w3"); !errors.Is(err, ErrConditionFailed) {
		t.Errorf("assign without the checkpointOwner seen: %v, want ErrConditionFailed", err)
	}
	// Only the checkpointOwner differs from what the leader saw: it fails.
	ownerOnly := seen
	ownerOnly.LeaseOwner = "w2"
	if _, err := l.AssignLeaseSeen(ctx, ownerOnly, "w3"); !errors.Is(err, ErrConditionFailed) {
		t.Errorf("assign expecting no checkpointOwner during a handoff: %v, want ErrConditionFailed", err)
	}
	// With the handoff seen it succeeds, and clears checkpointOwner.
	got, err = l.AssignLease(ctx, "shard-a", "w3")
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "owner", got.LeaseOwner, "w3")
	mustEqual(t, "checkpointOwner", got.CheckpointOwner, "")
	mustEqual(t, "counter", got.LeaseCounter, int64(2))
	mustEqual(t, "owner switches (w2 -> w3)", got.OwnerSwitchesSinceCheckpoint, int64(1))

	// The lease must exist: a deleted lease is not recreated.
	ghost := leasecore.Lease{LeaseKey: "shard-gone"}
	if _, err := l.AssignLeaseSeen(ctx, ghost, "w1"); !errors.Is(err, ErrConditionFailed) {
		t.Errorf("assign of a missing lease: %v, want ErrConditionFailed", err)
	}
	if item := getItem(t, f.DDB, f.Tables.Lease, "leaseKey", "shard-gone"); len(item) != 0 {
		t.Errorf("assign created %v", item)
	}
}

// TestHandoff checks initiateGracefulLeaseHandoff: leaseOwner = next,
// checkpointOwner = the old owner, counter unchanged; it fails when the
// owner is not the one seen, when a handoff is already under way, and for
// a missing lease. The old owner's completion (assignLease with
// leaseOwner = next and checkpointOwner = itself) clears checkpointOwner.
func TestHandoff(t *testing.T) {
	ctx := context.Background()
	f := Setup(t, emulator.DynamoDB(t), Layout{Kind: SideTables})
	if err := f.CreateLeases(ctx, "shard-a"); err != nil {
		t.Fatal(err)
	}
	l := f.NewLeader(LeaderConfig{WorkerID: "leader"})
	if _, err := l.AssignLease(ctx, "shard-a", "w1"); err != nil {
		t.Fatal(err)
	}
	seen, _ := f.Lease(ctx, "shard-a")
	wrong := seen
	wrong.LeaseOwner = "w9"
	if _, err := l.HandoffSeen(ctx, wrong, "w2"); !errors.Is(err, ErrConditionFailed) {
		t.Errorf("handoff from the wrong owner: %v, want ErrConditionFailed", err)
	}
	got, err := l.HandoffSeen(ctx, seen, "w2")
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "owner", got.LeaseOwner, "w2")
	mustEqual(t, "checkpointOwner", got.CheckpointOwner, "w1")
	mustEqual(t, "counter unchanged", got.LeaseCounter, seen.LeaseCounter)
	// A second handoff while the first is pending fails (checkpointOwner
	// must not exist), even from the right owner's point of view.
	again := got
	again.LeaseOwner = "w2"
	if _, err := l.HandoffSeen(ctx, again, "w3"); !errors.Is(err, ErrConditionFailed) {
		t.Errorf("handoff during a handoff: %v, want ErrConditionFailed", err)
	}
	if _, err := l.HandoffSeen(ctx, leasecore.Lease{LeaseKey: "shard-gone", LeaseOwner: "w1"}, "w2"); !errors.Is(err, ErrConditionFailed) {
		t.Errorf("handoff of a missing lease: %v, want ErrConditionFailed", err)
	}
	// The old owner completes it as LeaseGracefulShutdownHandler does.
	done, err := assignLease(ctx, f.DDB, f.Tables.Lease, leasecore.Lease{LeaseKey: "shard-a", LeaseOwner: "w2", CheckpointOwner: "w1"}, "w2")
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "owner after completion", done.LeaseOwner, "w2")
	mustEqual(t, "checkpointOwner after completion", done.CheckpointOwner, "")
	mustEqual(t, "counter after completion", done.LeaseCounter, seen.LeaseCounter+1)
}

// TestSetClientVersion checks the rollback write: cv, mb, mts replaced,
// the old values first in h, conditioned on the cv read.
func TestSetClientVersion(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []Kind{NewApp, SideTables} {
		t.Run(kind.String(), func(t *testing.T) {
			f := Setup(t, emulator.DynamoDB(t), Layout{Kind: kind, ClientVersion: coordination.ClientVersion3XWithRollback})
			if err := f.SetClientVersion(ctx, coordination.ClientVersion2X, "migration-tool"); err != nil {
				t.Fatal(err)
			}
			table, keyAttr := f.migrationLocation()
			item := getItem(t, f.DDB, table, keyAttr, MigrationKey)
			mustEqual(t, "cv", str(item, "cv"), coordination.ClientVersion2X)
			mustEqual(t, "mb", str(item, "mb"), "migration-tool")
			mustEqual(t, "attributes", types(item), map[string]string{
				keyAttr: "S", "entityType": "S", "cv": "S", "mb": "S", "mts": "N", "h": "L"})
			h, _ := item["h"].(*ddbtypes.AttributeValueMemberL)
			if h == nil || len(h.Value) != 2 {
				t.Fatalf("h = %v, want the setup's entry and the one this change added", item["h"])
			}
			first, _ := h.Value[0].(*ddbtypes.AttributeValueMemberM)
			if first == nil || str(first.Value, "cv") != coordination.ClientVersion3XWithRollback {
				t.Errorf("newest history entry = %v, want the replaced cv %s", h.Value[0], coordination.ClientVersion3XWithRollback)
			}
			// The write expects the cv it read: with the item changed under it
			// (here: a cv no writer expects) it fails.
			if err := f.SetClientVersion(ctx, coordination.ClientVersion3X, ""); err != nil {
				t.Fatal(err)
			}
			if err := updateMigrationExpecting(ctx, f, "CLIENT_VERSION_UPGRADE_FROM_2X", coordination.ClientVersion2X); !errors.Is(err, ErrConditionFailed) {
				t.Errorf("update expecting a stale cv: %v, want ErrConditionFailed", err)
			}
		})
	}
}

// updateMigrationExpecting writes cv expecting expectCV, to check the
// write's condition.
func updateMigrationExpecting(ctx context.Context, f *Fleet, expectCV, cv string) error {
	table, keyAttr := f.migrationLocation()
	return f.writeClientVersion(ctx, table, keyAttr, expectCV, cv, "test", nil)
}
