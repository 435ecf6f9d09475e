package kcl3fleet

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ErrConditionFailed is returned when a conditional write's condition did
// not hold (the KCL's methods return false then).
var ErrConditionFailed = errors.New("kcl3fleet: condition failed")

func conditionFailed(err error) bool {
	var ccf *ddbtypes.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// wrapWrite maps a conditional-check failure to ErrConditionFailed.
func wrapWrite(what string, err error) error {
	if err == nil {
		return nil
	}
	if conditionFailed(err) {
		return fmt.Errorf("%s: %w", what, ErrConditionFailed)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func s(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
func n(v int64) ddbtypes.AttributeValue {
	return &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// historyEntry is MigrationState.HistoryEntry.serialize (MigrationState.java
// lines 231-239): cv S, mb S, mts N.
func historyEntry(cv, by string, ms int64) ddbtypes.AttributeValue {
	return &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{
		"cv": s(cv), "mb": s(by), "mts": n(ms),
	}}
}

// migrationItem is what Setup writes for Migration3.0: the state a worker
// builds with new MigrationState(workerId) (client version INIT, lines
// 82-90) and then update(cv, by) (lines 167-178, which moves the INIT
// version into the history), serialised by MigrationState.serialize
// (lines 92-109): entityType S (CoordinatorState.serialize lines 73-83:
// written in either table), cv S, mb S, mts N (epoch milliseconds) and h,
// an L of M, only when the history is not empty.
func migrationItem(keyAttr, cv, by string, now time.Time) map[string]ddbtypes.AttributeValue {
	ms := now.UnixMilli()
	return map[string]ddbtypes.AttributeValue{
		keyAttr:        s(MigrationKey),
		entityTypeAttr: s(entityClientMigration),
		"cv":           s(cv),
		"mb":           s(by),
		"mts":          n(ms),
		"h":            &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{historyEntry("CLIENT_VERSION_INIT", by, ms)}},
	}
}

// tableMigrationItem is TableMigrationState.serialize (TableMigrationState.java
// lines 98-115): entityType S, tm S, mb S, mts N; no history for a state
// written once.
func tableMigrationItem(keyAttr, tm, by string, now time.Time) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{
		keyAttr:        s(TableMigrationKey),
		entityTypeAttr: s(entityTableMigration),
		"tm":           s(tm),
		"mb":           s(by),
		"mts":          n(now.UnixMilli()),
	}
}

// createIfNotExists is CoordinatorStateDAODelegate.createCoordinatorStateIfNotExists
// (delegate/CoordinatorStateDAODelegate.java, v3.5.1 lines 265-289): a
// PutItem whose legacy Expected says the partition key does not exist
// (getDynamoNonExistentExpectation).
func createIfNotExists(ctx context.Context, ddb API, table, keyAttr string, item map[string]ddbtypes.AttributeValue) error {
	_, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item:      item,
		Expected:  map[string]ddbtypes.ExpectedAttributeValue{keyAttr: {Exists: aws.Bool(false)}},
	})
	return wrapWrite("create "+table, err)
}

// SetClientVersion changes cv of Migration3.0 as the KCL changes it
// (MigrationState.update, lines 167-178, then
// CoordinatorStateDAODelegate.updateCoordinatorStateWithExpectation with
// MigrationState.getDynamoClientVersionExpectation, lines 145-155): the
// old cv, mb and mts become the first history entry (at most 10 kept),
// cv, mb, mts and h are PUT, and the write expects the key to exist and
// cv to be the value read. It is how a test rolls an application back to
// CLIENT_VERSION_2X (the KCL's migration tool makes this same change; the
// workers' ClientVersionChangeMonitor sees it at its next poll). by is mb;
// empty means "kcl3fleet".
func (f *Fleet) SetClientVersion(ctx context.Context, cv, by string) error {
	if by == "" {
		by = defaultModifiedBy
	}
	table, keyAttr := f.migrationLocation()
	out, err := f.DDB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{keyAttr: s(MigrationKey)},
	})
	if err != nil {
		return fmt.Errorf("read %s: %w", MigrationKey, err)
	}
	if len(out.Item) == 0 {
		return fmt.Errorf("read %s in %s: no item", MigrationKey, table)
	}
	oldCV, _ := out.Item["cv"].(*ddbtypes.AttributeValueMemberS)
	oldBy, _ := out.Item["mb"].(*ddbtypes.AttributeValueMemberS)
	oldTS, _ := out.Item["mts"].(*ddbtypes.AttributeValueMemberN)
	if oldCV == nil || oldBy == nil || oldTS == nil {
		return fmt.Errorf("%s in %s lacks cv, mb or mts", MigrationKey, table)
	}
	oldMS, _ := strconv.ParseInt(oldTS.Value, 10, 64)
	return f.writeClientVersion(ctx, table, keyAttr, oldCV.Value, cv, by, historyAfter(out.Item, oldCV.Value, oldBy.Value, oldMS))
}

// historyAfter is the h an update writes: the replaced cv, mb and mts as
// the newest entry (addHistoryEntry, lines 180-186: at most 10 kept).
func historyAfter(item map[string]ddbtypes.AttributeValue, oldCV, oldBy string, oldMS int64) []ddbtypes.AttributeValue {
	history := []ddbtypes.AttributeValue{historyEntry(oldCV, oldBy, oldMS)}
	if h, ok := item["h"].(*ddbtypes.AttributeValueMemberL); ok {
		history = append(history, h.Value...)
	}
	if len(history) > 10 {
		history = history[:10]
	}
	return history
}

// writeClientVersion is the conditional write of SetClientVersion, with
// the cv expected given.
func (f *Fleet) writeClientVersion(ctx context.Context, table, keyAttr, expectCV, cv, by string, history []ddbtypes.AttributeValue) error {
	put := func(v ddbtypes.AttributeValue) ddbtypes.AttributeValueUpdate {
		return ddbtypes.AttributeValueUpdate{Action: ddbtypes.AttributeActionPut, Value: v}
	}
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(table),
		Key:       map[string]ddbtypes.AttributeValue{keyAttr: s(MigrationKey)},
		// getDynamoExistentExpectation of the delegate (lines 480-487) and
		// getDynamoClientVersionExpectation.
		Expected: map[string]ddbtypes.ExpectedAttributeValue{
			keyAttr: {Value: s(MigrationKey)},
			"cv":    {Value: s(expectCV)},
		},
		// MigrationState.getDynamoUpdate (lines 188-218): h only when the
		// history is not empty.
		AttributeUpdates: map[string]ddbtypes.AttributeValueUpdate{
			"cv":  put(s(cv)),
			"mb":  put(s(by)),
			"mts": put(n(f.Clock.Now().UnixMilli())),
		},
	}
	if len(history) > 0 {
		in.AttributeUpdates["h"] = put(&ddbtypes.AttributeValueMemberL{Value: history})
	}
	_, err := f.DDB.UpdateItem(ctx, in)
	return wrapWrite("update "+MigrationKey, err)
}
