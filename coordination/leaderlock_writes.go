package coordination

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The leader lock's requests, as DynamoDB lock client 1.4.0
// (AmazonDynamoDBLockClient, the version KCL 3.5.1 depends on) sends them
// for DynamoDBLockBasedLeaderDecider. Each is conditional; the lock has no
// timestamp, only a recordVersionNumber that every write replaces.

// attrIsReleased is the lock client's released marker (IS_RELEASED): an
// item carrying it is free (LockItem.isReleased, getLock returns empty).
// The KCL never writes it (it deletes on release, deleteLockOnRelease's
// default), but a Java contender treats it as free, so kcltool does too.
const attrIsReleased = "isReleased"

// lockItem is the Leader item as a contender reads it.
type lockItem struct {
	owner, version string
	leaseDuration  time.Duration // the item's own, read from it
	released       bool
}

// readLockItem reads the Leader item with a consistent read, as the lock
// client's readFromDynamoDB does (consistentRead true). nil: no item.
func readLockItem(ctx context.Context, api WriteAPI, table, keyAttr string) (*lockItem, error) {
	item, err := getItem(ctx, api, table, keyAttr, keyLeaderLock)
	if err != nil || item == nil {
		return nil, err
	}
	_, released := item[attrIsReleased]
	return &lockItem{
		owner:         strAttr(item, attrOwnerName),
		version:       strAttr(item, attrRecordVersion),
		leaseDuration: lockDurationOf(item),
		released:      released,
	}, nil
}

// newRecordVersion is generateRecordVersionNumber: UUID.randomUUID, a
// version 4 UUID in its canonical text form.
func newRecordVersion() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// strAV is a string attribute value.
func strAV(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func millisString(d time.Duration) types.AttributeValue {
	return &types.AttributeValueMemberS{Value: strconv.FormatInt(d.Milliseconds(), 10)}
}

// putLock writes the whole item, as acquireLock builds it: the additional
// attributes (LeaderLock.serialize: entityType LEADER, in either table,
// since CoordinatorState.serialize does not depend on the table), the
// partition key, ownerName, leaseDuration as String.valueOf(millis) and
// a new recordVersionNumber; no data attribute (the decider passes none).
// observed "" is upsertAndMonitorNewLock's condition
// (ACQUIRE_LOCK_THAT_DOESNT_EXIST_PK_CONDITION, attribute_not_exists(#pk));
// otherwise it is upsertAndMonitorExpiredLock's
// (PK_EXISTS_AND_RVN_IS_THE_SAME_CONDITION): the version the contender saw
// go stale, whoever the owner.
func putLock(ctx context.Context, api WriteAPI, table, keyAttr, owner, observed, version string, leaseDuration time.Duration) error {
	in := &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item: map[string]types.AttributeValue{
			keyAttr:           strAV(keyLeaderLock),
			attrEntity:        strAV(EntityLeader),
			attrOwnerName:     strAV(owner),
			attrLeaseDuration: millisString(leaseDuration),
			attrRecordVersion: strAV(version),
		},
		ExpressionAttributeNames: map[string]string{"#pk": keyAttr},
		ReturnConsumedCapacity:   types.ReturnConsumedCapacityTotal,
	}
	if observed == "" {
		in.ConditionExpression = aws.String("attribute_not_exists(#pk)")
	} else {
		in.ConditionExpression = aws.String("attribute_exists(#pk) AND #rvn = :rvn")
		in.ExpressionAttributeNames["#rvn"] = attrRecordVersion
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":rvn": strAV(observed)}
	}
	_, err := api.PutItem(ctx, in)
	if err != nil {
		return fmt.Errorf("write leader lock in table %q: %w", table, err)
	}
	return nil
}

// heartbeatLock is sendHeartbeat: UpdateItem UPDATE_LEASE_DURATION_AND_RVN
// ("SET #ld = :ld, #rvn = :newRvn") conditioned on
// PK_EXISTS_AND_OWNER_NAME_SAME_AND_RVN_SAME_CONDITION.
func heartbeatLock(ctx context.Context, api WriteAPI, table, keyAttr, owner, version, next string, leaseDuration time.Duration) error {
	_, err := api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(table),
		Key:                 map[string]types.AttributeValue{keyAttr: strAV(keyLeaderLock)},
		ConditionExpression: aws.String("attribute_exists(#pk) AND #rvn = :rvn AND #on = :on"),
		UpdateExpression:    aws.String("SET #ld = :ld, #rvn = :newRvn"),
		ExpressionAttributeNames: map[string]string{
			"#pk": keyAttr, "#ld": attrLeaseDuration, "#rvn": attrRecordVersion, "#on": attrOwnerName,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":rvn": strAV(version), ":on": strAV(owner), ":newRvn": strAV(next), ":ld": millisString(leaseDuration),
		},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return fmt.Errorf("heartbeat leader lock in table %q: %w", table, err)
	}
	return nil
}

// deleteLock is releaseLock with deleteLock true (the decider's
// LockItem.close): DeleteItem conditioned on the same owner and version.
func deleteLock(ctx context.Context, api WriteAPI, table, keyAttr, owner, version string) error {
	_, err := api.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(table),
		Key:                       map[string]types.AttributeValue{keyAttr: strAV(keyLeaderLock)},
		ConditionExpression:       aws.String("attribute_exists(#pk) AND #rvn = :rvn AND #on = :on"),
		ExpressionAttributeNames:  map[string]string{"#pk": keyAttr, "#rvn": attrRecordVersion, "#on": attrOwnerName},
		ExpressionAttributeValues: map[string]types.AttributeValue{":rvn": strAV(version), ":on": strAV(owner)},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return fmt.Errorf("release leader lock in table %q: %w", table, err)
	}
	return nil
}
