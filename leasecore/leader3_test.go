package leasecore

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// A hand-written KCL 3.x leader for the tests: the two writes its lease
// assignment manager makes, as DynamoDBLeaseRefresher sends them, written
// here with plain UpdateItem calls (not with the code under test).

// newKCL3Table is a lease table with the LeaseOwnerToLeaseKeyIndex and n
// leases; owners[i] (when given) owns lease i, as a leader assigned it.
func newKCL3Table(t testing.TB, n int, owners ...string) (*dynamodb.Client, string) {
	t.Helper()
	ddb := emulator.DynamoDB(t)
	table := emulator.Name(t, "leases3")
	emulator.CreateKCL3LeaseTable(t, ddb, table)
	for i := range n {
		l := Lease{LeaseKey: shardKey(i), Checkpoint: SequenceNumber{SequenceNumber: TRIM_HORIZON}}
		if ok, err := CreateLease(context.Background(), ddb, table, l); err != nil || !ok {
			t.Fatalf("create lease %s: created=%v err=%v", l.LeaseKey, ok, err)
		}
		if i < len(owners) && owners[i] != "" {
			leaderAssign(t, ddb, table, l.LeaseKey, owners[i])
		}
	}
	return ddb, table
}

// leaderAssign is the leader's assignLease(lease, newOwner) on the lease as
// it reads it now: condition leaseOwner and checkpointOwner as read (absent
// when absent) and the item exists; PUT leaseOwner, DELETE checkpointOwner,
// ADD 1 to leaseCounter, ADD 1 to ownerSwitchesSinceCheckpoint when the
// owner changes or the checkpoint owner is the new owner
// (getDynamoAssignLeaseUpdate). It reports whether the condition held.
func leaderAssign(t testing.TB, ddb *dynamodb.Client, table, key, newOwner string) bool {
	t.Helper()
	cur := mustGetTB(t, ddb, table, key)
	names := map[string]string{"#o": AttrLeaseOwner, "#c": AttrCheckpointOwner, "#n": AttrLeaseCounter, "#k": AttrLeaseKey}
	vals := map[string]types.AttributeValue{":new": sAV(newOwner), ":one": numberAV(1), ":key": sAV(key)}
	cond := "#k = :key"
	if cur.LeaseOwner == "" {
		cond += " AND attribute_not_exists(#o)"
	} else {
		cond += " AND #o = :old"
		vals[":old"] = sAV(cur.LeaseOwner)
	}
	if cur.CheckpointOwner == "" {
		cond += " AND attribute_not_exists(#c)"
	} else {
		cond += " AND #c = :cpo"
		vals[":cpo"] = sAV(cur.CheckpointOwner)
	}
	update := "SET #o = :new REMOVE #c ADD #n :one"
	if (cur.LeaseOwner != "" && cur.LeaseOwner != newOwner) || cur.CheckpointOwner == newOwner {
		update += ", #s :one"
		names["#s"] = AttrOwnerSwitchesSinceCheckpoint
	}
	return leaderWrite(t, ddb, table, key, update, cond, names, vals)
}

// leaderHandoff is the leader's initiateGracefulLeaseHandoff(lease,
// newOwner): condition leaseOwner = the owner read, no checkpointOwner, the
// item exists; PUT leaseOwner = newOwner and checkpointOwner = the old
// owner; the counter is left alone.
func leaderHandoff(t testing.TB, ddb *dynamodb.Client, table, key, newOwner string) {
	t.Helper()
	cur := mustGetTB(t, ddb, table, key)
	if !leaderWrite(t, ddb, table, key, "SET #o = :new, #c = :old",
		"#o = :old AND attribute_not_exists(#c) AND #k = :key",
		map[string]string{"#o": AttrLeaseOwner, "#c": AttrCheckpointOwner, "#k": AttrLeaseKey},
		map[string]types.AttributeValue{":new": sAV(newOwner), ":old": sAV(cur.LeaseOwner), ":key": sAV(key)}) {
		t.Fatalf("leader: initiateGracefulLeaseHandoff of %s failed its condition (%+v)", key, cur)
	}
}

func leaderWrite(t testing.TB, ddb *dynamodb.Client, table, key, update, cond string, names map[string]string, vals map[string]types.AttributeValue) bool {
	t.Helper()
	_, err := ddb.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: keyOf(key),
		UpdateExpression: aws.String(update), ConditionExpression: aws.String(cond),
		ExpressionAttributeNames: names, ExpressionAttributeValues: vals,
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		t.Fatalf("leader write on %s: %v", key, err)
	}
	return err == nil
}

func sAV(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func mustGetTB(t testing.TB, ddb *dynamodb.Client, table, key string) Lease {
	t.Helper()
	l, ok, err := GetLease(context.Background(), ddb, table, key, true)
	if err != nil || !ok {
		t.Fatalf("get %s: found=%v err=%v", key, ok, err)
	}
	return l
}
