package leasecore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/awserr"
)

// The KCL 3.x leader's two lease writes (DynamoDBLeaseRefresher.assignLease
// and initiateGracefulLeaseHandoff, KCL 3.5.1). The KCL writes them with the
// legacy Expected / AttributeUpdates maps; the expressions below state the
// same conditions and updates. Like the KCL, both make one attempt: a
// condition failure is an answer (ok = false), not an error, and nothing
// is read back: the leader's next run reads the whole table anyway.

// Value placeholders of the leader's writes.
const (
	valSeenOwner   = ":seenOwner"
	valSeenCpOwner = ":seenCpOwner"
	valNewOwner    = ":newOwner"
)

// AssignLease3 is the KCL's assignLease(seen, newOwner), the leader's write
// for an unassigned or expired lease (and for a handoff that timed out).
// seen is the lease as the leader's scan read it.
//
// Condition (DynamoDBLeaseSerializer.getDynamoLeaseOwnerExpectation plus
// getDynamoExistentExpectation): leaseOwner equals the owner seen, or is
// absent when none was seen; checkpointOwner likewise; leaseKey exists
// with its value. The counter is not part of it: a renewal by the owner
// the leader saw does not make the assignment fail.
//
// Update (getDynamoAssignLeaseUpdate, built on getDynamoTakeLeaseUpdate):
// leaseOwner = newOwner; checkpointOwner removed; leaseCounter + 1;
// ownerSwitchesSinceCheckpoint + 1 when the owner seen is another worker
// or the checkpoint owner seen is newOwner. ALL_NEW is returned, and
// ALL_OLD on a condition failure (kept for the log only, as the KCL).
//
// ok is false when the condition failed; the returned lease is then seen.
func AssignLease3(ctx context.Context, api UpdateItemAPI, table string, seen Lease, newOwner string) (assigned Lease, ok bool, err error) {
	if newOwner == "" {
		return seen, false, fmt.Errorf("assign lease %s: no new owner", seen.LeaseKey)
	}
	u := newUpdate()
	ownerExpectation(u, AttrLeaseOwner, valSeenOwner, seen.LeaseOwner)
	ownerExpectation(u, AttrCheckpointOwner, valSeenCpOwner, seen.CheckpointOwner)
	u.conds = append(u.conds, u.n(AttrLeaseKey)+" = "+u.v(valLeaseKey, &types.AttributeValueMemberS{Value: seen.LeaseKey}))
	u.setS(AttrLeaseOwner, valNewOwner, newOwner)
	u.remove = append(u.remove, u.n(AttrCheckpointOwner))
	u.add = append(u.add, u.n(AttrLeaseCounter)+" "+u.v(valOne, numberAV(1)))
	switched := (seen.LeaseOwner != "" && seen.LeaseOwner != newOwner) ||
		(seen.CheckpointOwner != "" && seen.CheckpointOwner == newOwner)
	if switched {
		u.add = append(u.add, u.n(AttrOwnerSwitchesSinceCheckpoint)+" "+valOne)
	}
	out, err := updateItemOld(ctx, api, table, seen.LeaseKey, u, types.ReturnValueAllNew)
	if awserr.ConditionFailed(err) {
		return seen, false, nil
	}
	if err != nil {
		return seen, false, fmt.Errorf("assign lease %s to %s: %w", seen.LeaseKey, newOwner, err)
	}
	next := seen
	next.LeaseOwner, next.CheckpointOwner = newOwner, ""
	next.LeaseCounter++
	if switched {
		next.OwnerSwitchesSinceCheckpoint++
	}
	return fromAttributes(out, next), true, nil
}

// InitiateHandoff3 is the KCL's initiateGracefulLeaseHandoff(seen,
// newOwner): the leader asks the live owner to hand the lease over.
//
// Condition: leaseOwner equals the owner seen, no checkpointOwner, and
// leaseKey exists with its value. Update: leaseOwner = newOwner and
// checkpointOwner = the owner seen; the counter is left alone, so that the
// owner's renewals go on until it has checkpointed and transferred the
// lease (the KCL's comment on the method). ALL_NEW is returned; the KCL
// asks for no item on a condition failure here.
//
// ok is false when the condition failed. A lease seen with no owner cannot
// be handed off (the KCL assigns those with assignLease).
func InitiateHandoff3(ctx context.Context, api UpdateItemAPI, table string, seen Lease, newOwner string) (handed Lease, ok bool, err error) {
	if seen.LeaseOwner == "" || newOwner == "" {
		return seen, false, fmt.Errorf("hand off lease %s: needs an owner seen (%q) and a new owner (%q)", seen.LeaseKey, seen.LeaseOwner, newOwner)
	}
	u := newUpdate()
	u.conds = append(u.conds,
		u.n(AttrLeaseOwner)+" = "+u.v(valSeenOwner, &types.AttributeValueMemberS{Value: seen.LeaseOwner}),
		"attribute_not_exists("+u.n(AttrCheckpointOwner)+")",
		u.n(AttrLeaseKey)+" = "+u.v(valLeaseKey, &types.AttributeValueMemberS{Value: seen.LeaseKey}))
	u.setS(AttrLeaseOwner, valNewOwner, newOwner)
	u.set = append(u.set, u.n(AttrCheckpointOwner)+" = "+valSeenOwner)
	out, err := updateItem(ctx, api, table, seen.LeaseKey, u, types.ReturnValueAllNew)
	if awserr.ConditionFailed(err) {
		return seen, false, nil
	}
	if err != nil {
		return seen, false, fmt.Errorf("hand off lease %s to %s: %w", seen.LeaseKey, newOwner, err)
	}
	next := seen
	next.LeaseOwner, next.CheckpointOwner = newOwner, seen.LeaseOwner
	return fromAttributes(out, next), true, nil
}

// ownerExpectation is buildExpectedAttributeValueIfExistsOrValue: the
// attribute equals v, or is absent when v is empty.
func ownerExpectation(u *update, attr, placeholder, v string) {
	if v == "" {
		u.conds = append(u.conds, "attribute_not_exists("+u.n(attr)+")")
		return
	}
	u.conds = append(u.conds, u.n(attr)+" = "+u.v(placeholder, &types.AttributeValueMemberS{Value: v}))
}
