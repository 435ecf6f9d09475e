package leasecore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/awserr"
)

// The single-item calls of the KCL 3.x follower protocol (docs/kcl3.md).
// Like protocol.go's they make one attempt each, plus one read on a
// condition failure; ErrLeaseLost only when that read shows it.

// QueryAPI is DynamoDB's Query with the SDK's signature.
type QueryAPI interface {
	Query(ctx context.Context, params *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Value placeholders of the 3.x writes.
const (
	valThroughput      = ":tput"
	valNextOwner       = ":nextOwner"
	valCheckpointOwner = ":cpOwner"
	valLeaseKey        = ":key"
)

// HandoffRequestedError says a 3.x renewal failed its condition because the
// leader started a graceful handoff away from this worker
// (initiateGracefulLeaseHandoff: leaseOwner = next owner, checkpointOwner =
// this worker, counter unchanged). Lease is the item as read. The caller
// adopts leaseOwner and checkpointOwner into its held lease, keeping its
// counter, and renews again without the checkpointOwner condition, as
// DynamoDBLeaseRefresher.handleGracefulShutdown does.
type HandoffRequestedError struct {
	Lease Lease
}

func (e *HandoffRequestedError) Error() string {
	return fmt.Sprintf("lease %s: the leader asked this worker (%s) to hand it to %s", e.Lease.LeaseKey, e.Lease.CheckpointOwner, e.Lease.LeaseOwner)
}

// ActualOwner is the worker that processes the lease: checkpointOwner
// while a handoff is pending, else leaseOwner (KCL's Lease.actualOwner).
func (l Lease) ActualOwner() string {
	if l.CheckpointOwner != "" {
		return l.CheckpointOwner
	}
	return l.LeaseOwner
}

// QueryOwnedKeys lists the keys of the leases the LeaseOwnerToLeaseKeyIndex
// shows owned by owner, every page (DynamoDBLeaseRefresher.
// listLeaseKeysForWorker). The index is eventually consistent: callers read
// each item before they trust it.
func QueryOwnedKeys(ctx context.Context, api QueryAPI, table, owner string) ([]string, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(table),
		IndexName:                 aws.String(KCL3IndexName),
		KeyConditionExpression:    aws.String("#leaseOwner = :owner"),
		ExpressionAttributeNames:  map[string]string{"#leaseOwner": AttrLeaseOwner},
		ExpressionAttributeValues: map[string]types.AttributeValue{valOwner: &types.AttributeValueMemberS{Value: owner}},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	}
	var keys []string
	for {
		out, err := api.Query(ctx, in)
		if err != nil {
			return keys, fmt.Errorf("query %s for the leases of %s: %w", KCL3IndexName, owner, err)
		}
		for _, item := range out.Items {
			if k, ok := item[AttrLeaseKey].(*types.AttributeValueMemberS); ok {
				keys = append(keys, k.Value)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return keys, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// RenewLease3 is KCL 3.x's renewLease (DynamoDBLeaseRefresher.renewLease):
// conditional on leaseCounter = N and, unless l is in handoff
// (l.CheckpointOwner set), on no checkpointOwner; it sets the counter to
// N+1 and throughputKBps when l carries one. On a condition failure it
// reads the item (the failure's ALL_OLD item where the server returns one,
// else GetItem):
//   - a handoff from worker (checkpointOwner = worker, leaseOwner another):
//     *HandoffRequestedError, as handleGracefulShutdown;
//   - actual owner worker at counter N+1: this very write, applied by an
//     earlier attempt whose answer was lost (the KCL's "spurious renewal
//     failure", compared on actualOwner);
//   - otherwise the lease is lost.
func RenewLease3(ctx context.Context, api LeaseUpdateAPI, table string, l Lease, worker string) (Lease, error) {
	u := newUpdate()
	u.expectCounter(l.LeaseCounter)
	if l.CheckpointOwner == "" {
		u.conds = append(u.conds, "attribute_not_exists("+u.n(AttrCheckpointOwner)+")")
	}
	u.setN(AttrLeaseCounter, valNextCounter, l.LeaseCounter+1)
	if t := l.ThroughputKBps; t != nil {
		u.set = append(u.set, u.n(AttrThroughputKBps)+" = "+u.v(valThroughput, &types.AttributeValueMemberN{Value: formatDynamoFloat(*t)}))
	}
	_, err := updateItemOld(ctx, api, table, l.LeaseKey, u, types.ReturnValueNone)
	next := l
	next.LeaseCounter++
	if err == nil {
		return next, nil
	}
	if !awserr.ConditionFailed(err) {
		return l, fmt.Errorf("renew lease %s: %w", l.LeaseKey, err)
	}
	cur, ok, gerr := itemOnFailure(ctx, api, table, l.LeaseKey, err)
	if gerr != nil {
		return l, &UnresolvedError{LeaseKey: l.LeaseKey, Op: "renew", Err: gerr}
	}
	if ok && l.CheckpointOwner == "" && cur.CheckpointOwner != "" {
		// handleGracefulShutdown: the same actual owner, and a next owner
		// that is not the checkpoint owner.
		if cur.CheckpointOwner == worker && cur.LeaseOwner != worker && l.ActualOwner() == worker {
			return l, &HandoffRequestedError{Lease: cur}
		}
		return l, lostFromItem("renew", l, cur, ok, nil)
	}
	// The KCL's spurious-renewal check, with one difference: a lease held
	// in handoff whose item no longer is in handoff (the leader assigned it
	// back to this worker, assignLease clearing checkpointOwner, at N+1) is
	// not this renewal. The KCL (renewLease compares actualOwner with the
	// item's leaseOwner) would count it as renewed while its shard consumer
	// has already shut down for the handoff; kcltool counts it lost, so the
	// shard's stopped run ends cleanly and the discoverer gains the lease
	// again from the table, with a new run.
	if ok && cur.ActualOwner() == worker && cur.LeaseCounter == l.LeaseCounter+1 &&
		(l.CheckpointOwner == "" || cur.CheckpointOwner == l.CheckpointOwner) {
		return cur, nil
	}
	return l, lostFromItem("renew", l, cur, ok, nil)
}

// HandoffLease writes the end of a graceful handoff from worker: KCL's
// assignLease(lease, lease.leaseOwner()) as LeaseGracefulShutdownHandler.
// attemptLeaseTransfer calls it. l is the held lease in handoff (leaseOwner
// = next owner, checkpointOwner = worker). The condition is the KCL's
// getDynamoLeaseOwnerExpectation plus getDynamoExistentExpectation:
// leaseOwner = next, checkpointOwner = worker, the item exists. The update
// (getDynamoAssignLeaseUpdate) sets leaseOwner = next, removes
// checkpointOwner and adds 1 to the counter; its ownerSwitchesSinceCheckpoint
// increment applies only when the old owner differs from the new one or the
// checkpoint owner is the new one, neither of which holds here (old owner =
// new owner = next, checkpoint owner = worker), so it never adds one.
//
// On a condition failure the item is read: if it shows the lease already
// with next and no checkpointOwner (an earlier attempt of this write
// applied, or the leader assigned it there), the transfer is done and the
// item is returned; otherwise the lease is lost.
func HandoffLease(ctx context.Context, api LeaseUpdateAPI, table string, l Lease, worker string) (Lease, error) {
	if l.CheckpointOwner != worker || l.LeaseOwner == "" || l.LeaseOwner == worker {
		return l, fmt.Errorf("hand off lease %s: not in a handoff from %s (leaseOwner %q, checkpointOwner %q)", l.LeaseKey, worker, l.LeaseOwner, l.CheckpointOwner)
	}
	u := newUpdate()
	u.conds = append(u.conds,
		u.n(AttrLeaseOwner)+" = "+u.v(valNextOwner, &types.AttributeValueMemberS{Value: l.LeaseOwner}),
		u.n(AttrCheckpointOwner)+" = "+u.v(valCheckpointOwner, &types.AttributeValueMemberS{Value: worker}),
		u.n(AttrLeaseKey)+" = "+u.v(valLeaseKey, &types.AttributeValueMemberS{Value: l.LeaseKey}))
	u.set = append(u.set, u.n(AttrLeaseOwner)+" = "+valNextOwner)
	u.add = append(u.add, u.n(AttrLeaseCounter)+" "+u.v(valOne, numberAV(1)))
	u.remove = append(u.remove, u.n(AttrCheckpointOwner))
	out, err := updateItemOld(ctx, api, table, l.LeaseKey, u, types.ReturnValueAllNew)
	if err == nil {
		next := l
		next.CheckpointOwner = ""
		next.LeaseCounter++
		return fromAttributes(out, next), nil
	}
	if !awserr.ConditionFailed(err) {
		return l, fmt.Errorf("hand off lease %s: %w", l.LeaseKey, err)
	}
	cur, ok, gerr := itemOnFailure(ctx, api, table, l.LeaseKey, err)
	if gerr != nil {
		return l, &UnresolvedError{LeaseKey: l.LeaseKey, Op: "handoff", Err: gerr}
	}
	if ok && cur.LeaseOwner == l.LeaseOwner && cur.CheckpointOwner == "" {
		return cur, nil
	}
	return l, lostFromItem("handoff", l, cur, ok, nil)
}

// EvictLease3 is KCL 3.x's evictLease: conditional on leaseOwner and
// checkpointOwner as l has them (each absent when l's is empty:
// getDynamoLeaseOwnerExpectation) and on the item existing, it removes
// leaseOwner unless l is in handoff (then the next owner keeps it and may
// start at once), always removes checkpointOwner, and adds 1 to the counter
// (getDynamoEvictLeaseUpdate). There is no counter condition.
//
// On a condition failure the item is read: a handoff from worker that l
// does not know of yet gives *HandoffRequestedError (adopt and evict
// again); an item already showing this eviction (no checkpointOwner, and
// no owner, or the next owner for a lease in handoff, at a later counter)
// is an earlier attempt applied; anything else is a lost lease.
func EvictLease3(ctx context.Context, api LeaseUpdateAPI, table string, l Lease, worker string) (Lease, error) {
	u := newUpdate()
	for _, c := range []struct{ attr, val, v string }{
		{AttrLeaseOwner, valOwner, l.LeaseOwner}, {AttrCheckpointOwner, valCheckpointOwner, l.CheckpointOwner},
	} {
		if c.v == "" {
			u.conds = append(u.conds, "attribute_not_exists("+u.n(c.attr)+")")
		} else {
			u.conds = append(u.conds, u.n(c.attr)+" = "+u.v(c.val, &types.AttributeValueMemberS{Value: c.v}))
		}
	}
	u.conds = append(u.conds, u.n(AttrLeaseKey)+" = "+u.v(valLeaseKey, &types.AttributeValueMemberS{Value: l.LeaseKey}))
	if l.CheckpointOwner == "" {
		u.remove = append(u.remove, u.n(AttrLeaseOwner))
	}
	u.remove = append(u.remove, u.n(AttrCheckpointOwner))
	u.add = append(u.add, u.n(AttrLeaseCounter)+" "+u.v(valOne, numberAV(1)))
	out, err := updateItemOld(ctx, api, table, l.LeaseKey, u, types.ReturnValueAllNew)
	if err == nil {
		next := l
		if l.CheckpointOwner == "" {
			next.LeaseOwner = ""
		}
		next.CheckpointOwner = ""
		next.LeaseCounter++
		return fromAttributes(out, next), nil
	}
	if !awserr.ConditionFailed(err) {
		return l, fmt.Errorf("evict lease %s: %w", l.LeaseKey, err)
	}
	cur, ok, gerr := itemOnFailure(ctx, api, table, l.LeaseKey, err)
	if gerr != nil {
		return l, &UnresolvedError{LeaseKey: l.LeaseKey, Op: "evict", Err: gerr}
	}
	switch {
	case !ok:
	case l.CheckpointOwner == "" && cur.CheckpointOwner == worker && cur.LeaseOwner != worker:
		return l, &HandoffRequestedError{Lease: cur}
	case cur.CheckpointOwner == "" && cur.LeaseCounter > l.LeaseCounter &&
		((l.CheckpointOwner == "" && cur.LeaseOwner == "") || (l.CheckpointOwner != "" && cur.LeaseOwner == l.LeaseOwner)):
		return cur, nil
	}
	return l, lostFromItem("evict", l, cur, ok, nil)
}

// updateItemOld is updateItem asking for the item as it was when the
// condition fails (ReturnValuesOnConditionCheckFailure ALL_OLD, as the
// KCL's renewLease and assignLease do), which saves the read where the
// server answers with it.
func updateItemOld(ctx context.Context, api UpdateItemAPI, table, key string, u *update, rv types.ReturnValue) (*dynamodb.UpdateItemOutput, error) {
	in := &dynamodb.UpdateItemInput{
		TableName:                           aws.String(table),
		Key:                                 keyOf(key),
		UpdateExpression:                    aws.String(u.updateExpression()),
		ConditionExpression:                 aws.String(u.conditionExpression()),
		ExpressionAttributeNames:            u.names,
		ExpressionAttributeValues:           u.valuesOrNil(),
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if rv != types.ReturnValueNone {
		in.ReturnValues = rv
	}
	return api.UpdateItem(ctx, in)
}

// itemOnFailure is the item a condition failure returned, or, when the
// server sent none (dynalite, DynamoDB Local: the KCL reads then too), a
// consistent read of it.
func itemOnFailure(ctx context.Context, api GetItemAPI, table, key string, err error) (Lease, bool, error) {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) && len(ccf.Item) > 0 {
		l, derr := DecodeLease(ccf.Item)
		if derr == nil {
			return l, true, nil
		}
	}
	return GetLease(ctx, api, table, key, true)
}
