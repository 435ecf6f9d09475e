package leasecore

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/awserr"
)

// The single-item DynamoDB calls of the lease protocol, one interface each,
// with the SDK's own signatures so that *dynamodb.Client satisfies them.
type (
	GetItemAPI interface {
		GetItem(ctx context.Context, params *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	}
	PutItemAPI interface {
		PutItem(ctx context.Context, params *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	}
	UpdateItemAPI interface {
		UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	}
	DeleteItemAPI interface {
		DeleteItem(ctx context.Context, params *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	}
	// LeaseUpdateAPI is what the counter-conditioned writes need: the
	// update, and a read to tell a real condition failure from a "spurious"
	// one (the write was applied but its answer was lost, so the retry
	// found its own result).
	LeaseUpdateAPI interface {
		UpdateItemAPI
		GetItemAPI
	}
)

// The functions below each make one attempt (plus, on a condition failure,
// one read to recognise the writer's own earlier success). Retrying is the
// caller's policy: the coordinator bounds renewal retries by the failover
// time, an operator command by its own patience. When that read fails, they
// return an *UnresolvedError, never ErrLeaseLost: a lease is lost only when
// a read shows it (docs/run.md, lease protocol).

// CreateLease writes a new lease item, only if no item has its key (KCL's
// createLeaseIfNotExists). created is false, without error, when the key
// already exists: every worker runs shard sync and the first one wins.
func CreateLease(ctx context.Context, api PutItemAPI, table string, l Lease) (created bool, err error) {
	if err := l.Validate(); err != nil {
		return false, fmt.Errorf("create lease: %w", err)
	}
	_, err = api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(table),
		Item:                     EncodeLease(l),
		ConditionExpression:      aws.String("attribute_not_exists(#leaseKey)"),
		ExpressionAttributeNames: map[string]string{"#leaseKey": AttrLeaseKey},
		ReturnConsumedCapacity:   types.ReturnConsumedCapacityTotal,
	})
	if awserr.ConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("create lease %s: %w", l.LeaseKey, err)
	}
	return true, nil
}

// GetLease reads one lease. found is false when no item has the key. A
// non-lease item under the key is an error (*NotLeaseError).
func GetLease(ctx context.Context, api GetItemAPI, table, key string, consistent bool) (l Lease, found bool, err error) {
	out, err := api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:              aws.String(table),
		Key:                    keyOf(key),
		ConsistentRead:         aws.Bool(consistent),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return Lease{}, false, fmt.Errorf("get lease %s: %w", key, err)
	}
	if len(out.Item) == 0 {
		return Lease{}, false, nil
	}
	l, err = DecodeLease(out.Item)
	if err != nil {
		return Lease{}, false, fmt.Errorf("get lease %s: %w", key, err)
	}
	return l, true, nil
}

// RenewLease is KCL 2.x's renewLease: conditional on leaseCounter = N (the
// value the worker holds), it sets N+1. On a condition failure it reads the
// lease back and, like KCL, counts the renewal as done when the item shows
// this worker as owner with counter N+1: that is this very write, applied by
// an earlier attempt whose answer was lost. Otherwise the lease is lost.
func RenewLease(ctx context.Context, api LeaseUpdateAPI, table string, l Lease, worker string) (Lease, error) {
	u := newUpdate()
	u.expectCounter(l.LeaseCounter)
	u.setN(AttrLeaseCounter, valNextCounter, l.LeaseCounter+1)
	_, err := updateItem(ctx, api, table, l.LeaseKey, u, types.ReturnValueNone)
	next := l
	next.LeaseCounter++
	if err == nil {
		return next, nil
	}
	if !awserr.ConditionFailed(err) {
		return l, fmt.Errorf("renew lease %s: %w", l.LeaseKey, err)
	}
	cur, ok, gerr := GetLease(ctx, api, table, l.LeaseKey, true)
	if gerr != nil {
		return l, &UnresolvedError{LeaseKey: l.LeaseKey, Op: "renew", Err: gerr}
	}
	// On the actual owner, as the KCL's renewLease: in a 3.x handoff
	// leaseOwner already names the next owner.
	if ok && cur.ActualOwner() == worker && cur.LeaseCounter == l.LeaseCounter+1 {
		return cur, nil
	}
	return l, lostFromItem("renew", l, cur, ok, nil)
}

// TakeLease is KCL 2.x's takeLease, used both for expired or unowned leases
// and for stealing: conditional on leaseCounter = N only (no owner
// condition), it sets the owner to worker and the counter to N+1, and adds 1
// to ownerSwitchesSinceCheckpoint when the lease changes hands between two
// workers (not when it was unowned or already this worker's). taken is false
// when another write got there first.
func TakeLease(ctx context.Context, api LeaseUpdateAPI, table string, l Lease, worker string) (taken Lease, ok bool, err error) {
	if worker == "" {
		return l, false, errors.New("take lease: empty worker id")
	}
	u := newUpdate()
	u.expectCounter(l.LeaseCounter)
	u.setN(AttrLeaseCounter, valNextCounter, l.LeaseCounter+1)
	u.setS(AttrLeaseOwner, valOwner, worker)
	// KCL 3.x's takeLease (getDynamoTakeLeaseUpdate, used by its 2.x-mode
	// taker) ends any graceful handoff: a take is a fresh assignment, so
	// checkpointOwner goes, and taking a lease whose checkpoint owner is the
	// taker counts as an owner switch too. On a 2.x table there is no
	// checkpointOwner and this changes nothing.
	u.remove = append(u.remove, u.n(AttrCheckpointOwner))
	switched := (l.LeaseOwner != "" && l.LeaseOwner != worker) || (l.CheckpointOwner != "" && l.CheckpointOwner == worker)
	if switched {
		u.add = append(u.add, u.n(AttrOwnerSwitchesSinceCheckpoint)+" "+u.v(valOne, numberAV(1)))
	}
	out, err := updateItem(ctx, api, table, l.LeaseKey, u, types.ReturnValueAllNew)
	if err == nil {
		next := l
		next.LeaseOwner, next.LeaseCounter, next.CheckpointOwner = worker, l.LeaseCounter+1, ""
		if switched {
			next.OwnerSwitchesSinceCheckpoint++
		}
		return fromAttributes(out, next), true, nil
	}
	if !awserr.ConditionFailed(err) {
		return l, false, fmt.Errorf("take lease %s: %w", l.LeaseKey, err)
	}
	cur, found, gerr := GetLease(ctx, api, table, l.LeaseKey, true)
	if gerr != nil {
		// An earlier attempt may have taken it: ask again rather than
		// leave a lease this worker owns unheld until it expires.
		return l, false, &UnresolvedError{LeaseKey: l.LeaseKey, Op: "take", Err: gerr}
	}
	if found && cur.LeaseOwner == worker && cur.LeaseCounter == l.LeaseCounter+1 {
		return cur, true, nil
	}
	return l, false, nil
}

// CheckpointLease is KCL's updateLease as the checkpointer calls it:
// conditional on leaseCounter = N, it sets checkpoint and sub-sequence
// number, resets ownerSwitchesSinceCheckpoint, removes the pending
// checkpoint attributes and bumps the counter (so a checkpoint is also a
// renewal). Like updateLease it writes back childShardIds, the hash range
// and, for multi-stream leases, streamName and shardId when the lease
// carries them. A condition failure means the lease is lost (ErrLeaseLost),
// unless the item shows exactly this write already applied.
func CheckpointLease(ctx context.Context, api LeaseUpdateAPI, table string, l Lease, cp SequenceNumber) (Lease, error) {
	return checkpointLease(ctx, api, table, l, cp, nil)
}

// checkpointLease is CheckpointLease for the coordinator, which also knows
// unresolved, the checkpoints of earlier writes of its own whose outcome is
// unknown: an item at counter N+1 showing one of them was that write.
func checkpointLease(ctx context.Context, api LeaseUpdateAPI, table string, l Lease, cp SequenceNumber, unresolved []SequenceNumber) (Lease, error) {
	if !ValidCheckpoint(cp.SequenceNumber) {
		return l, fmt.Errorf("checkpoint lease %s: %q is not a sequence number or sentinel", l.LeaseKey, cp.SequenceNumber)
	}
	u := newUpdate()
	u.expectCounter(l.LeaseCounter)
	u.setN(AttrLeaseCounter, valNextCounter, l.LeaseCounter+1)
	u.setS(AttrCheckpoint, valCheckpoint, cp.SequenceNumber)
	u.setN(AttrCheckpointSubSequenceNumber, valCheckpointSub, cp.SubSequenceNumber)
	u.setN(AttrOwnerSwitchesSinceCheckpoint, valZero, 0)
	if children := nonEmpty(l.ChildShardIDs); len(children) > 0 {
		u.set = append(u.set, u.n(AttrChildShardIDs)+" = "+u.v(valChildren, &types.AttributeValueMemberSS{Value: children}))
	}
	if l.StartingHashKey != "" && l.EndingHashKey != "" {
		u.setS(AttrStartingHashKey, valStartingHashKey, l.StartingHashKey)
		u.setS(AttrEndingHashKey, valEndingHashKey, l.EndingHashKey)
	}
	if l.StreamName != "" && l.ShardID != "" {
		u.setS(AttrStreamName, valStreamName, l.StreamName)
		u.setS(AttrShardID, valShardID, l.ShardID)
	}
	u.remove = append(u.remove, u.n(AttrPendingCheckpoint), u.n(AttrPendingCheckpointSubSequenceNumber), u.n(AttrPendingCheckpointState))
	out, err := updateItem(ctx, api, table, l.LeaseKey, u, types.ReturnValueAllNew)
	if err == nil {
		next := l
		next.LeaseCounter++
		next.Checkpoint, next.OwnerSwitchesSinceCheckpoint = cp, 0
		next.PendingCheckpoint, next.PendingCheckpointState = nil, nil
		return fromAttributes(out, next), nil
	}
	if !awserr.ConditionFailed(err) {
		return l, fmt.Errorf("checkpoint lease %s: %w", l.LeaseKey, err)
	}
	cur, ok, gerr := GetLease(ctx, api, table, l.LeaseKey, true)
	if gerr != nil {
		return l, &UnresolvedError{LeaseKey: l.LeaseKey, Op: "checkpoint", Err: gerr}
	}
	// Compared on the actual owner: during a KCL 3.x handoff the old owner
	// still checkpoints (DynamoDBLeaseRefresher.updateLease conditions on
	// the counter only, and initiateGracefulLeaseHandoff leaves the counter
	// alone), while leaseOwner already names the next owner.
	mine := ok && cur.ActualOwner() == l.ActualOwner() && cur.LeaseCounter == l.LeaseCounter+1
	switch {
	case mine && cur.Checkpoint == cp && cur.OwnerSwitchesSinceCheckpoint == 0:
		return cur, nil // this checkpoint, applied by an earlier attempt
	case mine && (cur.Checkpoint == l.Checkpoint || slices.Contains(unresolved, cur.Checkpoint)):
		// One write conditioned on N was applied, and it was not this
		// checkpoint: it was the owner's renewal whose answer was lost
		// (nothing else bumps the counter and leaves owner and checkpoint
		// as they were), or its earlier checkpoint whose outcome was
		// unknown. Only one write conditioned on N can apply.
		return l, &OwnWriteError{Current: cur}
	}
	return l, lostFromItem("checkpoint", l, cur, ok, nil)
}

// ReleaseLease gives a lease up on graceful shutdown: conditional on
// leaseOwner = worker and leaseCounter = N, it removes leaseOwner and bumps
// the counter, so any worker's next taker run sees it unowned and takes it at
// once instead of waiting out the failover time. This is KCL's evictLease
// (which KCL itself never calls) plus the counter condition; a live KCL 2.x
// worker treats the result like any unowned lease. On a condition failure
// the item is read: still owned by worker at a later counter, it is
// released at that counter; otherwise the lease was no longer this
// worker's (ErrLeaseLost).
func ReleaseLease(ctx context.Context, api LeaseUpdateAPI, table string, l Lease, worker string) (Lease, error) {
	next, err := releaseAt(ctx, api, table, l, worker)
	if !awserr.ConditionFailed(err) {
		return next, err
	}
	cur, ok, gerr := GetLease(ctx, api, table, l.LeaseKey, true)
	// Still this worker's at a later counter: one of its own writes went
	// through after it stopped waiting for the answer, typically the
	// renewal in flight when Stop cancelled the renewer. In taking mode no
	// other worker writes this worker's name into leaseOwner, so the lease
	// is still its to give up; released at the counter read. Without this
	// the lease stays owned until it expires (a CI run saw two of them).
	if gerr == nil && ok && cur.LeaseOwner == worker && cur.CheckpointOwner == "" && cur.LeaseCounter > l.LeaseCounter {
		next, err = releaseAt(ctx, api, table, cur, worker)
		if !awserr.ConditionFailed(err) {
			return next, err
		}
		cur, ok, gerr = GetLease(ctx, api, table, l.LeaseKey, true)
	}
	return l, lostFromItem("release", l, cur, ok, gerr)
}

// releaseAt is the release write itself, conditioned on l's counter; a
// condition failure is returned as is.
func releaseAt(ctx context.Context, api UpdateItemAPI, table string, l Lease, worker string) (Lease, error) {
	u := newUpdate()
	u.conds = append(u.conds, u.n(AttrLeaseOwner)+" = "+u.v(valOwner, &types.AttributeValueMemberS{Value: worker}))
	u.expectCounter(l.LeaseCounter)
	u.setN(AttrLeaseCounter, valNextCounter, l.LeaseCounter+1)
	u.remove = append(u.remove, u.n(AttrLeaseOwner))
	out, err := updateItem(ctx, api, table, l.LeaseKey, u, types.ReturnValueAllNew)
	if awserr.ConditionFailed(err) {
		return l, err
	}
	if err != nil {
		return l, fmt.Errorf("release lease %s: %w", l.LeaseKey, err)
	}
	next := l
	next.LeaseOwner = ""
	next.LeaseCounter++
	return fromAttributes(out, next), nil
}

// SetChildShardIDs is KCL's updateLeaseWithMetaInfo(CHILD_SHARDS), written at
// SHARD_END: it sets childShardIds on an existing lease without bumping the
// counter, because it is metadata and a bump would make the holder lose the
// lease just as it has to checkpoint SHARD_END. Besides KCL's "key exists"
// condition it requires a lease item (leaseCounter present, entityType absent
// or LEASE), so it can never decorate a KCL 3.x non-lease item.
func SetChildShardIDs(ctx context.Context, api UpdateItemAPI, table, key string, children []string) error {
	children = nonEmpty(children)
	if len(children) == 0 {
		return nil // KCL never writes an empty set
	}
	u := newUpdate()
	u.conds = append(u.conds, "attribute_exists("+u.n(AttrLeaseKey)+")")
	u.onlyLeaseItems()
	u.set = append(u.set, u.n(AttrChildShardIDs)+" = "+u.v(valChildren, &types.AttributeValueMemberSS{Value: children}))
	_, err := updateItem(ctx, api, table, key, u, types.ReturnValueNone)
	if awserr.ConditionFailed(err) {
		return fmt.Errorf("write childShardIds on %s: %w", key, ErrLeaseNotFound)
	}
	if err != nil {
		return fmt.Errorf("write childShardIds on %s: %w", key, err)
	}
	return nil
}

// DeleteLease deletes a lease item. KCL's deleteLease is unconditional; this
// one only refuses non-lease items (a KCL 3.x leader lock or migration record
// under the same key space). deleted is false when there was nothing to
// delete.
func DeleteLease(ctx context.Context, api DeleteItemAPI, table, key string) (deleted bool, err error) {
	u := newUpdate()
	u.conds = append(u.conds, "attribute_not_exists("+u.n(AttrEntityType)+") OR "+u.n(AttrEntityType)+" = "+
		u.v(valEntityLease, &types.AttributeValueMemberS{Value: EntityTypeLease}))
	return deleteItem(ctx, api, table, key, u)
}

// DeleteFinishedLease deletes a lease only while its checkpoint is
// SHARD_END, the cleanup of a completed parent (docs/kcl-compat.md,
// SHARD_END, lineage and cleanup). The condition
// keeps an operator's checkpoint reset made after the caller's read from
// being thrown away. deleted is false when the condition failed or there was
// no item.
func DeleteFinishedLease(ctx context.Context, api DeleteItemAPI, table, key string) (deleted bool, err error) {
	u := newUpdate()
	u.conds = append(u.conds, u.n(AttrCheckpoint)+" = "+u.v(valShardEnd, &types.AttributeValueMemberS{Value: SHARD_END}))
	deleted, err = deleteItem(ctx, api, table, key, u)
	if awserr.ConditionFailed(err) {
		return false, nil
	}
	return deleted, err
}

func deleteItem(ctx context.Context, api DeleteItemAPI, table, key string, u *update) (bool, error) {
	out, err := api.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(table),
		Key:                       keyOf(key),
		ConditionExpression:       aws.String(u.conditionExpression()),
		ExpressionAttributeNames:  u.names,
		ExpressionAttributeValues: u.valuesOrNil(),
		ReturnValues:              types.ReturnValueAllOld,
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return false, fmt.Errorf("delete lease %s: %w", key, err)
	}
	return len(out.Attributes) > 0, nil
}

func updateItem(ctx context.Context, api UpdateItemAPI, table, key string, u *update, rv types.ReturnValue) (*dynamodb.UpdateItemOutput, error) {
	in := &dynamodb.UpdateItemInput{
		TableName:                 aws.String(table),
		Key:                       keyOf(key),
		UpdateExpression:          aws.String(u.updateExpression()),
		ConditionExpression:       aws.String(u.conditionExpression()),
		ExpressionAttributeNames:  u.names,
		ExpressionAttributeValues: u.valuesOrNil(),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	}
	if rv != types.ReturnValueNone {
		in.ReturnValues = rv
	}
	return api.UpdateItem(ctx, in)
}

// fromAttributes prefers the item DynamoDB returned (ALL_NEW): it also shows
// metadata written since the caller's read, such as childShardIds.
func fromAttributes(out *dynamodb.UpdateItemOutput, fallback Lease) Lease {
	if out == nil || len(out.Attributes) == 0 {
		return fallback
	}
	l, err := DecodeLease(out.Attributes)
	if err != nil {
		return fallback
	}
	return l
}

// lostFromItem explains a condition failure from the item read back.
func lostFromItem(op string, held, cur Lease, found bool, readErr error) error {
	reason := "leaseCounter changed"
	switch {
	case readErr != nil:
		reason = "leaseCounter changed (read back failed: " + readErr.Error() + ")"
	case !found:
		reason = "lease deleted"
	case cur.LeaseOwner != held.LeaseOwner:
		owner := cur.LeaseOwner
		if owner == "" {
			owner = "nobody"
		}
		reason = fmt.Sprintf("now owned by %s (counter %d, had %d)", owner, cur.LeaseCounter, held.LeaseCounter)
	default:
		reason = fmt.Sprintf("leaseCounter is %d, had %d", cur.LeaseCounter, held.LeaseCounter)
	}
	return &LeaseLostError{LeaseKey: held.LeaseKey, Op: op, Reason: reason}
}

func nonEmpty(ids []string) []string {
	var out []string
	for _, id := range ids {
		if id != "" {
			out = append(out, id)
		}
	}
	return out
}
