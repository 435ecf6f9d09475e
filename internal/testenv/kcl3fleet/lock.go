package kcl3fleet

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The leader lock as DynamoDB lock client 1.4.0 (AmazonDynamoDBLockClient.java
// at commit 1d3d999, "lock client" below) writes it for
// DynamoDBLockBasedLeaderDecider (leader/DynamoDBLockBasedLeaderDecider.java):
// ownerName, leaseDuration (milliseconds, as a string), recordVersionNumber
// (a random UUID, replaced at every heartbeat) and the additional attributes
// of LeaderLock.serialize (entityType LEADER).
const (
	lockOwnerName = "ownerName"
	lockDuration  = "leaseDuration"
	lockVersion   = "recordVersionNumber"
)

// LockItem is the lock item as read from the table.
type LockItem struct {
	Owner         string
	Version       string
	LeaseDuration string // as stored: milliseconds in an S
	EntityType    string
	Table         string
}

// ReadLock reads the Leader item where this layout keeps it; ok is false
// when there is none.
func (f *Fleet) ReadLock(ctx context.Context) (LockItem, bool, error) {
	table, keyAttr := f.lockLocation()
	out, err := f.DDB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{keyAttr: s(LeaderKey)},
	})
	if err != nil {
		return LockItem{}, false, fmt.Errorf("read lock: %w", err)
	}
	if len(out.Item) == 0 {
		return LockItem{}, false, nil
	}
	str := func(a string) string {
		v, _ := out.Item[a].(*ddbtypes.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	return LockItem{Owner: str(lockOwnerName), Version: str(lockVersion), LeaseDuration: str(lockDuration), EntityType: str(entityTypeAttr), Table: table}, true, nil
}

// newUUID is generateRecordVersionNumber (lock client lines 1326-1328,
// UUID.randomUUID: a version 4 UUID).
func newUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// acquireLock is the lock client's acquireLock for a lock that does not
// exist (lines 511-520 build the item: the additional attributes, the
// partition key, ownerName, leaseDuration as String.valueOf(millis) and
// recordVersionNumber; upsertAndMonitorNewLock, lines 727-768: a PutItem
// conditioned on attribute_not_exists(#pk), updateExistingLockRecord being
// false by default). The additional attributes are LeaderLock.serialize
// (DynamoDBLockBasedLeaderDecider.getLockAttributes, lines 182-187):
// entityType LEADER (CoordinatorState.serialize). It returns the version
// written.
func acquireLock(ctx context.Context, ddb API, table, keyAttr, owner string, leaseDuration time.Duration) (string, error) {
	version := newUUID()
	_, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item: map[string]ddbtypes.AttributeValue{
			entityTypeAttr: s(entityLeader),
			keyAttr:        s(LeaderKey),
			lockOwnerName:  s(owner),
			lockDuration:   s(strconv.FormatInt(leaseDuration.Milliseconds(), 10)),
			lockVersion:    s(version),
		},
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": keyAttr},
	})
	if err != nil {
		return "", wrapWrite("acquire lock", err)
	}
	return version, nil
}

// sendHeartbeat is the lock client's sendHeartbeat (lines 1146-1238):
// UpdateItem "SET #ld = :ld, #rvn = :newRvn" (UPDATE_LEASE_DURATION_AND_RVN)
// conditioned on "attribute_exists(#pk) AND #rvn = :rvn AND #on = :on"
// (PK_EXISTS_AND_OWNER_NAME_SAME_AND_RVN_SAME_CONDITION), with a new random
// version. It returns the new version.
func sendHeartbeat(ctx context.Context, ddb API, table, keyAttr, owner, version string, leaseDuration time.Duration) (string, error) {
	next := newUUID()
	_, err := ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(table),
		Key:                 map[string]ddbtypes.AttributeValue{keyAttr: s(LeaderKey)},
		ConditionExpression: aws.String("attribute_exists(#pk) AND #rvn = :rvn AND #on = :on"),
		UpdateExpression:    aws.String("SET #ld = :ld, #rvn = :newRvn"),
		ExpressionAttributeNames: map[string]string{
			"#pk": keyAttr, "#ld": lockDuration, "#rvn": lockVersion, "#on": lockOwnerName,
		},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":rvn": s(version), ":on": s(owner), ":newRvn": s(next),
			":ld": s(strconv.FormatInt(leaseDuration.Milliseconds(), 10)),
		},
	})
	if err != nil {
		return "", wrapWrite("lock heartbeat", err)
	}
	return next, nil
}

// releaseLock is the lock client's releaseLock with deleteLock true (the
// AcquireLockOptions default, AcquireLockOptions.java line 87; lines
// 844-894): DeleteItem conditioned on "attribute_exists(#pk) AND #rvn =
// :rvn AND #on = :on".
func releaseLock(ctx context.Context, ddb API, table, keyAttr, owner, version string) error {
	_, err := ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(table),
		Key:                       map[string]ddbtypes.AttributeValue{keyAttr: s(LeaderKey)},
		ConditionExpression:       aws.String("attribute_exists(#pk) AND #rvn = :rvn AND #on = :on"),
		ExpressionAttributeNames:  map[string]string{"#pk": keyAttr, "#rvn": lockVersion, "#on": lockOwnerName},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":rvn": s(version), ":on": s(owner)},
	})
	return wrapWrite("release lock", err)
}
