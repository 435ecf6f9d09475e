package emulator

import (
	"context"
	"math/big"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// SplitShard splits shard so that its upper child starts at
// newStartingHashKey, and waits until the stream is ACTIVE again.
func SplitShard(tb TB, c *kinesis.Client, stream, shard string, newStartingHashKey *big.Int) {
	tb.Helper()
	if _, err := c.SplitShard(context.Background(), &kinesis.SplitShardInput{StreamName: aws.String(stream),
		ShardToSplit: aws.String(shard), NewStartingHashKey: aws.String(newStartingHashKey.String())}); err != nil {
		tb.Fatalf("split %s of %s: %v", shard, stream, err)
	}
	WaitStreamActive(tb, c, stream)
}

// MergeShards merges shard with its adjacent shard, and waits until the
// stream is ACTIVE again.
func MergeShards(tb TB, c *kinesis.Client, stream, shard, adjacent string) {
	tb.Helper()
	if _, err := c.MergeShards(context.Background(), &kinesis.MergeShardsInput{StreamName: aws.String(stream),
		ShardToMerge: aws.String(shard), AdjacentShardToMerge: aws.String(adjacent)}); err != nil {
		tb.Fatalf("merge %s and %s of %s: %v", shard, adjacent, stream, err)
	}
	WaitStreamActive(tb, c, stream)
}

// MidHashKey is the middle of a shard's hash key range, (start+end)/2.
func MidHashKey(r *kintypes.HashKeyRange) *big.Int {
	lo, _ := new(big.Int).SetString(aws.ToString(r.StartingHashKey), 10)
	hi, _ := new(big.Int).SetString(aws.ToString(r.EndingHashKey), 10)
	return new(big.Int).Rsh(new(big.Int).Add(lo, hi), 1)
}
