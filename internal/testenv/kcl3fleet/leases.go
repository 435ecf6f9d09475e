package kcl3fleet

import (
	"context"
	"fmt"
	"math/big"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/leasecore"
)

// CreateLeases writes one lease per key as the KCL's shard sync creates a
// stream's initial leases: HierarchicalShardSyncer.newKCLLease (v3.5.1
// lines 755-769: leaseKey = shard id, no parents for a new stream's
// shards, ownerSwitchesSinceCheckpoint 0, the shard's hash key range) with
// the initial position TRIM_HORIZON as checkpoint, leaseCounter 0 (the
// Lease default, leases/Lease.java line 83) and no owner, written by
// DynamoDBLeaseRefresher.createLeaseIfNotExists (lines 758-789: PutItem,
// Expected leaseKey does not exist) through
// DynamoDBLeaseSerializer.toDynamoRecord (lines 68-132, which always adds
// entityType LEASE in 3.5). The keys get the even hash key ranges of a
// stream created with len(keys) shards, in order. Multi-stream keys
// ("account:stream:epoch:shardId") are written as plain keys: tests that
// need streamName/shardId attributes write their leases themselves.
func (f *Fleet) CreateLeases(ctx context.Context, keys ...string) error {
	ranges := evenHashRanges(len(keys))
	for i, k := range keys {
		l := leasecore.Lease{
			LeaseKey:        k,
			Checkpoint:      leasecore.SequenceNumber{SequenceNumber: "TRIM_HORIZON"},
			StartingHashKey: ranges[i][0],
			EndingHashKey:   ranges[i][1],
			EntityType:      leasecore.EntityTypeLease,
		}
		_, err := f.DDB.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(f.Tables.Lease),
			Item:      leasecore.EncodeLease(l),
			// getDynamoNonexistantExpectation (serializer lines 227-236).
			Expected: map[string]ddbtypes.ExpectedAttributeValue{leaseKeyAttr: {Exists: aws.Bool(false)}},
		})
		if err := wrapWrite("create lease "+k, err); err != nil {
			return err
		}
	}
	return nil
}

// evenHashRanges splits [0, 2^128-1] into n contiguous ranges, as Kinesis
// does for a stream created with n shards.
func evenHashRanges(n int) [][2]string {
	out := make([][2]string, n)
	if n == 0 {
		return out
	}
	space := new(big.Int).Lsh(big.NewInt(1), 128)
	step := new(big.Int).Div(space, big.NewInt(int64(n)))
	for i := 0; i < n; i++ {
		start := new(big.Int).Mul(step, big.NewInt(int64(i)))
		end := new(big.Int).Add(start, step)
		end.Sub(end, big.NewInt(1))
		if i == n-1 {
			end.Sub(space, big.NewInt(1))
		}
		out[i] = [2]string{start.String(), end.String()}
	}
	return out
}

// Lease reads one lease with a consistent read.
func (f *Fleet) Lease(ctx context.Context, key string) (leasecore.Lease, error) {
	out, err := f.DDB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(f.Tables.Lease), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{leaseKeyAttr: s(key)},
	})
	if err != nil {
		return leasecore.Lease{}, fmt.Errorf("read lease %s: %w", key, err)
	}
	if len(out.Item) == 0 {
		return leasecore.Lease{}, fmt.Errorf("read lease %s: %w", key, errNoLease)
	}
	return leasecore.DecodeLease(out.Item)
}

// Leases lists every lease of the table (consistent scan), skipping the
// coordination items a 3.5 application keeps beside them.
func (f *Fleet) Leases(ctx context.Context) ([]leasecore.Lease, error) {
	var out []leasecore.Lease
	var start map[string]ddbtypes.AttributeValue
	for {
		page, err := f.DDB.Scan(ctx, &dynamodb.ScanInput{
			TableName: aws.String(f.Tables.Lease), ConsistentRead: aws.Bool(true), ExclusiveStartKey: start,
		})
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", f.Tables.Lease, err)
		}
		for _, item := range page.Items {
			if !leasecore.IsLeaseItem(item) {
				continue
			}
			l, err := leasecore.DecodeLease(item)
			if err != nil {
				return nil, err
			}
			out = append(out, l)
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = page.LastEvaluatedKey
	}
}
