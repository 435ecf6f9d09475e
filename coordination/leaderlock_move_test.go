package coordination_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
)

// TestLeaderLockTableMove: at the table migration's step from PENDING to
// COMPLETE the lock's place moves from <app>-CoordinatorState to the
// lease table (CoordinatorStateDAO.getDDBLockClient). The holder takes
// the lock in the lease table and keeps heartbeating the one in the side
// table, as the KCL's legacy lock client keeps heartbeating its lock
// until shutdown, so that a worker that has not seen the step yet (the
// Java port, still routed to the side table) finds it held. Release
// deletes both.
func TestLeaderLockTableMove(t *testing.T) {
	ctx := context.Background()
	ddb := emulator.DynamoDB(t)
	f := kcl3fleet.Setup(t, ddb, kcl3fleet.Layout{Kind: kcl3fleet.Pending})
	clk := clocktest.New(time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC))
	f.Clock = clk
	pending, err := coordination.Detect(ctx, ddb, f.Tables)
	if err != nil {
		t.Fatal(err)
	}
	if table, _ := pending.LockTable(f.Tables); table != f.Tables.CoordinatorState {
		t.Fatalf("PENDING puts the lock in %s", table)
	}
	complete := pending
	complete.Layout = coordination.LayoutLeaseTable

	a := coordination.NewLeaderLock(ddb, f.Tables, coordination.LeaderLockConfig{Owner: "kcltool-a"}, clk, slog.New(slog.NewTextHandler(t.Output(), nil)))
	if ok, err := a.Poll(ctx, pending); err != nil || !ok {
		t.Fatalf("Poll under PENDING = %v, %v", ok, err)
	}
	side := lockVersion(t, ddb, f.Tables.CoordinatorState, "key")
	clk.Advance(a.PollInterval())
	if ok, err := a.Poll(ctx, complete); err != nil || !ok {
		t.Fatalf("Poll under COMPLETE = %v, %v", ok, err)
	}
	if lockVersion(t, ddb, f.Tables.Lease, "leaseKey") == "" {
		t.Fatal("no lock in the lease table after the move")
	}
	if now := lockVersion(t, ddb, f.Tables.CoordinatorState, "key"); now == side || now == "" {
		t.Fatalf("the side table's lock was not heartbeaten (version %q, was %q)", now, side)
	}
	if s := a.Stats(); s != (coordination.LeaderLockStats{Acquired: 1}) {
		t.Errorf("Stats = %+v: the move is no change of leader", s)
	}
	j := f.NewLeader(kcl3fleet.LeaderConfig{WorkerID: "java-1", HeartbeatPeriod: 1000 * time.Hour})
	t.Cleanup(j.Stall)
	if ok, err := j.TakeLock(ctx); err != nil || ok {
		t.Fatalf("a worker still routed to the side table took the lock: %v, %v", ok, err)
	}
	if err := a.Release(ctx, complete); err != nil {
		t.Fatal(err)
	}
	if lockVersion(t, ddb, f.Tables.Lease, "leaseKey") != "" || lockVersion(t, ddb, f.Tables.CoordinatorState, "key") != "" {
		t.Error("Release left a lock behind")
	}
}

// TestLeaderLockReleasedMarker: an item marked isReleased (the lock
// client's release without delete; the KCL never writes one) is free, as
// the lock client's getLock reports it: a contender takes it at once.
func TestLeaderLockReleasedMarker(t *testing.T) {
	forEachLayout(t, func(t *testing.T, r *lockRig) {
		ctx := context.Background()
		_, err := r.ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(r.f.LockTable()), Item: map[string]types.AttributeValue{
			r.keyAttr:             &types.AttributeValueMemberS{Value: "Leader"},
			"ownerName":           &types.AttributeValueMemberS{Value: "someone-else"},
			"leaseDuration":       &types.AttributeValueMemberS{Value: "120000"},
			"recordVersionNumber": &types.AttributeValueMemberS{Value: "00000000-0000-4000-8000-000000000000"},
			"isReleased":          &types.AttributeValueMemberS{Value: "1"},
		}})
		if err != nil {
			t.Fatal(err)
		}
		a := r.lock("kcltool-a", 0)
		if !r.poll(a) {
			t.Fatal("a released lock was not taken at once")
		}
		if _, released := r.item()["isReleased"]; released || r.read().Owner != "kcltool-a" {
			t.Errorf("after taking a released lock: %v", r.item())
		}
	})
}

// lockVersion is the recordVersionNumber of the Leader item in table, ""
// when there is none.
func lockVersion(t *testing.T, ddb *dynamodb.Client, table, keyAttr string) string {
	t.Helper()
	out, err := ddb.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{keyAttr: &types.AttributeValueMemberS{Value: "Leader"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := out.Item["recordVersionNumber"].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// TestLeaderLockNextPoll: a holder polls every heartbeat period; a
// contender every ContendPeriod, but no later than the moment the lock it
// watches turns stale.
func TestLeaderLockNextPoll(t *testing.T) {
	forEachLayout(t, func(t *testing.T, r *lockRig) {
		a := r.lock("kcltool-a", 0)
		b := r.lockWith(r.api, coordination.LeaderLockConfig{Owner: "kcltool-b", ContendPeriod: 15 * time.Second})
		r.poll(a)
		r.poll(b)
		if d := a.NextPoll(); d != 5*time.Second {
			t.Errorf("holder's NextPoll = %v, want 5s", d)
		}
		if d := b.NextPoll(); d != 15*time.Second {
			t.Errorf("contender's NextPoll = %v, want its ContendPeriod 15s", d)
		}
		r.clk.Advance(15 * time.Second)
		r.poll(b)
		if d := b.NextPoll(); d != 5*time.Second+time.Millisecond {
			t.Errorf("contender's NextPoll 15 s after first sight = %v, want 5.001s", d)
		}
		r.clk.Advance(b.NextPoll())
		if !r.poll(b) {
			t.Error("no takeover at the time NextPoll named")
		}
	})
}
