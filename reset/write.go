package reset

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/leasecore"
)

// errChanged means a conditional write found the item no longer as read.
var errChanged = errors.New("the lease changed")

// guardedAttrs are the attributes some writer of the lease protocol changes:
// every KCL write that bumps leaseCounter, and the three that do not
// (childShardIds at SHARD_END, KCL 3.x's handoff initiation of leaseOwner
// and checkpointOwner). A write conditioned on all of them being as read
// cannot overwrite anything a worker or another operator did meanwhile.
var guardedAttrs = []string{
	leasecore.AttrLeaseCounter, leasecore.AttrLeaseOwner, leasecore.AttrCheckpointOwner,
	leasecore.AttrCheckpoint, leasecore.AttrCheckpointSubSequenceNumber, leasecore.AttrPendingCheckpoint,
	leasecore.AttrOwnerSwitchesSinceCheckpoint, leasecore.AttrChildShardIDs,
}

// expr builds the expressions of one conditional write. Attribute names go
// through #placeholders (several KCL names are close to reserved words) and
// only names and values in use are sent: DynamoDB rejects unused ones.
type expr struct {
	names              map[string]string
	values             map[string]types.AttributeValue
	conds, set, remove []string
}

func newExpr() *expr {
	return &expr{names: map[string]string{}, values: map[string]types.AttributeValue{}}
}

func (e *expr) name(attr string) string {
	e.names["#"+attr] = attr
	return "#" + attr
}

func (e *expr) value(av types.AttributeValue) string {
	ph := ":v" + strconv.Itoa(len(e.values))
	e.values[ph] = av
	return ph
}

// guard conditions the write on the item being exactly as read in every
// guarded attribute: equal where it had the attribute, absent where not.
func (e *expr) guard(read map[string]types.AttributeValue) {
	e.conds = append(e.conds, "attribute_exists("+e.name(leasecore.AttrLeaseKey)+")")
	for _, attr := range guardedAttrs {
		av, ok := read[attr]
		if !ok {
			e.conds = append(e.conds, "attribute_not_exists("+e.name(attr)+")")
			continue
		}
		e.conds = append(e.conds, e.name(attr)+" = "+e.value(av))
	}
}

func (e *expr) condition() *string { return aws.String(strings.Join(e.conds, " AND ")) }

func (e *expr) valuesOrNil() map[string]types.AttributeValue {
	if len(e.values) == 0 {
		return nil
	}
	return e.values
}

func keyOf(key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{leasecore.AttrLeaseKey: &types.AttributeValueMemberS{Value: key}}
}

func numberAV(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// counterOf reads leaseCounter from a lease item (0 when absent, which a
// lease item never is).
func counterOf(item map[string]types.AttributeValue) int64 {
	if n, ok := item[leasecore.AttrLeaseCounter].(*types.AttributeValueMemberN); ok {
		v, _ := strconv.ParseInt(n.Value, 10, 64)
		return v
	}
	return 0
}

// writeCheckpoint sets a lease's checkpoint the way an operator should
// (docs/kcl-compat.md, Rules for a tool that shares the table): conditioned on
// the lease as read, leaseCounter + 1, the checkpoint and sub-sequence number,
// ownerSwitchesSinceCheckpoint 0, the pending checkpoint removed, like a KCL
// checkpoint. It also removes leaseOwner and checkpointOwner (KCL's evict): a
// stopped application's workers then take the lease at once instead of after
// the failover time, and a live holder cannot mistake the new counter for its
// own renewal (KCL 2.x treats a failed renew as done when the item shows it as
// owner with the counter it meant to write).
func writeCheckpoint(ctx context.Context, api leasecore.UpdateItemAPI, table string, read map[string]types.AttributeValue, cp leasecore.SequenceNumber) error {
	if !leasecore.ValidCheckpoint(cp.SequenceNumber) || cp.SubSequenceNumber < 0 {
		// KCL throws on anything else the first time it compares checkpoints.
		return fmt.Errorf("set checkpoint of %s: refusing %q, which KCL could not read", leasecore.ItemKey(read), cp.SequenceNumber)
	}
	e := newExpr()
	e.guard(read)
	e.set = append(e.set,
		e.name(leasecore.AttrCheckpoint)+" = "+e.value(&types.AttributeValueMemberS{Value: cp.SequenceNumber}),
		e.name(leasecore.AttrCheckpointSubSequenceNumber)+" = "+e.value(numberAV(cp.SubSequenceNumber)),
		e.name(leasecore.AttrOwnerSwitchesSinceCheckpoint)+" = "+e.value(numberAV(0)),
		e.name(leasecore.AttrLeaseCounter)+" = "+e.value(numberAV(counterOf(read)+1)),
	)
	for _, a := range checkpointRemoves {
		e.remove = append(e.remove, e.name(a))
	}
	_, err := api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(table),
		Key:                       keyOf(leasecore.ItemKey(read)),
		UpdateExpression:          aws.String("SET " + strings.Join(e.set, ", ") + " REMOVE " + strings.Join(e.remove, ", ")),
		ConditionExpression:       e.condition(),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.valuesOrNil(),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	})
	return writeError(err, "set checkpoint of", leasecore.ItemKey(read))
}

// checkpointRemoves are the attributes writeCheckpoint removes.
var checkpointRemoves = []string{leasecore.AttrPendingCheckpoint, leasecore.AttrPendingCheckpointSubSequenceNumber,
	leasecore.AttrPendingCheckpointState, leasecore.AttrLeaseOwner, leasecore.AttrCheckpointOwner}

// putItem writes a whole lease item: a create when read is nil (only if no
// item has the key), otherwise a replacement conditioned on the item as
// read. The item must decode as a lease KCL reads.
func putItem(ctx context.Context, api leasecore.PutItemAPI, table string, read, item map[string]types.AttributeValue) error {
	key := leasecore.ItemKey(item)
	if _, err := leasecore.DecodeLease(item); err != nil {
		return fmt.Errorf("write lease %s: refusing an item KCL could not read: %w", key, err)
	}
	e := newExpr()
	if read == nil {
		e.conds = append(e.conds, "attribute_not_exists("+e.name(leasecore.AttrLeaseKey)+")")
	} else {
		e.guard(read)
	}
	_, err := api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(table),
		Item:                      item,
		ConditionExpression:       e.condition(),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.valuesOrNil(),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	})
	return writeError(err, "write lease", key)
}

// deleteLease deletes a lease conditioned on the item as read.
func deleteLease(ctx context.Context, api leasecore.DeleteItemAPI, table string, read map[string]types.AttributeValue) error {
	e := newExpr()
	e.guard(read)
	_, err := api.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(table),
		Key:                       keyOf(leasecore.ItemKey(read)),
		ConditionExpression:       e.condition(),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.valuesOrNil(),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	})
	return writeError(err, "delete lease", leasecore.ItemKey(read))
}

func writeError(err error, op, key string) error {
	switch {
	case err == nil:
		return nil
	case awserr.ConditionFailed(err):
		return errChanged
	}
	return fmt.Errorf("%s %s: %w", op, key, err)
}

// getItem reads one item strongly consistently; nil when absent.
func getItem(ctx context.Context, api leasecore.GetItemAPI, table, key string) (map[string]types.AttributeValue, error) {
	out, err := api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: keyOf(key), ConsistentRead: aws.Bool(true),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	if err != nil {
		return nil, fmt.Errorf("read lease %s: %w", key, err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}
