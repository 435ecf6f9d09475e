package kcl3fleet

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/leasecore"
)

var errNoLease = errors.New("no such lease")

// The lease writes of DynamoDBLeaseRefresher (leases/dynamodb/
// DynamoDBLeaseRefresher.java) and the maps DynamoDBLeaseSerializer builds
// for them, in the KCL's own legacy Expected / AttributeUpdates form. seen
// is the lease as the writer last read it: the expectations are built
// from it, as the KCL builds them from its in-memory Lease.

// ownerExpectation is DynamoDBLeaseSerializer.getDynamoLeaseOwnerExpectation
// (v3.5.1 lines 219-224) plus getDynamoExistentExpectation (lines
// 238-248): leaseOwner and checkpointOwner each equal to the value seen,
// or absent when none was seen (buildExpectedAttributeValueIfExistsOrValue,
// lines 492-498), and leaseKey exists with its value.
func ownerExpectation(seen leasecore.Lease) map[string]ddbtypes.ExpectedAttributeValue {
	ifExistsOrValue := func(v string) ddbtypes.ExpectedAttributeValue {
		if v == "" {
			return ddbtypes.ExpectedAttributeValue{Exists: aws.Bool(false)}
		}
		return ddbtypes.ExpectedAttributeValue{Value: s(v)}
	}
	return map[string]ddbtypes.ExpectedAttributeValue{
		leasecore.AttrLeaseOwner:      ifExistsOrValue(seen.LeaseOwner),
		leasecore.AttrCheckpointOwner: ifExistsOrValue(seen.CheckpointOwner),
		leasecore.AttrLeaseKey:        {Exists: aws.Bool(true), Value: s(seen.LeaseKey)},
	}
}

// assignUpdate is DynamoDBLeaseSerializer.getDynamoAssignLeaseUpdate
// (lines 306-311): getDynamoTakeLeaseUpdate (lines 268-298: PUT
// leaseOwner, DELETE checkpointOwner, ADD 1 to ownerSwitchesSinceCheckpoint
// when the owner seen is someone else or the checkpoint owner seen is the
// new owner) and ADD 1 to leaseCounter (getAttributeValueUpdateForAdd,
// lines 500-505).
func assignUpdate(seen leasecore.Lease, newOwner string) map[string]ddbtypes.AttributeValueUpdate {
	u := map[string]ddbtypes.AttributeValueUpdate{
		leasecore.AttrLeaseOwner:      {Action: ddbtypes.AttributeActionPut, Value: s(newOwner)},
		leasecore.AttrCheckpointOwner: {Action: ddbtypes.AttributeActionDelete},
		leasecore.AttrLeaseCounter:    {Action: ddbtypes.AttributeActionAdd, Value: n(1)},
	}
	if (seen.LeaseOwner != "" && seen.LeaseOwner != newOwner) || (seen.CheckpointOwner != "" && seen.CheckpointOwner == newOwner) {
		u[leasecore.AttrOwnerSwitchesSinceCheckpoint] = ddbtypes.AttributeValueUpdate{Action: ddbtypes.AttributeActionAdd, Value: n(1)}
	}
	return u
}

// assignLease is DynamoDBLeaseRefresher.assignLease (lines 1068-1148):
// UpdateItem with ownerExpectation(seen) and assignUpdate, ALL_NEW. The
// leader uses it for unassigned and expired leases; the old owner of a
// graceful handoff uses it to complete the handoff
// (LeaseGracefulShutdownHandler), with seen = {leaseOwner: next owner,
// checkpointOwner: itself} and newOwner = the next owner.
func assignLease(ctx context.Context, ddb API, table string, seen leasecore.Lease, newOwner string) (leasecore.Lease, error) {
	out, err := ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(table),
		Key:                                 map[string]ddbtypes.AttributeValue{leasecore.AttrLeaseKey: s(seen.LeaseKey)},
		Expected:                            ownerExpectation(seen),
		AttributeUpdates:                    assignUpdate(seen, newOwner),
		ReturnValues:                        ddbtypes.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		return leasecore.Lease{}, wrapWrite("assign lease "+seen.LeaseKey, err)
	}
	return leasecore.DecodeLease(out.Attributes)
}

// initiateHandoff is DynamoDBLeaseRefresher.initiateGracefulLeaseHandoff
// (lines 979-1062): PUT leaseOwner = newOwner and checkpointOwner = the
// owner seen, the counter untouched (so that the current owner's renewals
// go on, lines 994-999); expected leaseOwner = the owner seen, no
// checkpointOwner, and leaseKey exists (lines 1015-1023); ALL_NEW.
func initiateHandoff(ctx context.Context, ddb API, table string, seen leasecore.Lease, newOwner string) (leasecore.Lease, error) {
	out, err := ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(table),
		Key:       map[string]ddbtypes.AttributeValue{leasecore.AttrLeaseKey: s(seen.LeaseKey)},
		Expected: map[string]ddbtypes.ExpectedAttributeValue{
			leasecore.AttrLeaseOwner:      {Value: s(seen.LeaseOwner)},
			leasecore.AttrCheckpointOwner: {Exists: aws.Bool(false)},
			leasecore.AttrLeaseKey:        {Exists: aws.Bool(true), Value: s(seen.LeaseKey)},
		},
		AttributeUpdates: map[string]ddbtypes.AttributeValueUpdate{
			leasecore.AttrLeaseOwner:      {Action: ddbtypes.AttributeActionPut, Value: s(newOwner)},
			leasecore.AttrCheckpointOwner: {Action: ddbtypes.AttributeActionPut, Value: s(seen.LeaseOwner)},
		},
		ReturnValues: ddbtypes.ReturnValueAllNew,
	})
	if err != nil {
		return leasecore.Lease{}, wrapWrite("initiate handoff of "+seen.LeaseKey, err)
	}
	return leasecore.DecodeLease(out.Attributes)
}

// renewLease is DynamoDBLeaseRefresher.renewLease's write (lines 833-860):
// PUT leaseCounter = N+1 (getDynamoLeaseCounterUpdate, serializer lines
// 255-266) expecting leaseCounter = N (getDynamoLeaseCounterExpectation,
// lines 207-217) and, unless the worker already knows of a handoff
// (shutdownRequested), no checkpointOwner (lines 849-854);
// ReturnValuesOnConditionCheckFailure ALL_OLD. throughputKBps is not
// written (see the package doc).
func renewLease(ctx context.Context, ddb API, table, key string, counter int64, shutdownRequested bool) error {
	expected := map[string]ddbtypes.ExpectedAttributeValue{
		leasecore.AttrLeaseCounter: {Value: n(counter)},
	}
	if !shutdownRequested {
		expected[leasecore.AttrCheckpointOwner] = ddbtypes.ExpectedAttributeValue{Exists: aws.Bool(false)}
	}
	_, err := ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(table),
		Key:                                 map[string]ddbtypes.AttributeValue{leasecore.AttrLeaseKey: s(key)},
		Expected:                            expected,
		AttributeUpdates:                    map[string]ddbtypes.AttributeValueUpdate{leasecore.AttrLeaseCounter: {Action: ddbtypes.AttributeActionPut, Value: n(counter + 1)}},
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	})
	return wrapWrite("renew lease "+key, err)
}
