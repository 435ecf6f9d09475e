package reshard

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/internal/awserr"
)

// KinesisAPI is the part of the Kinesis client shard discovery uses.
type KinesisAPI interface {
	ListShards(ctx context.Context, params *kinesis.ListShardsInput, optFns ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error)
}

// Stream names the stream whose shards are leased.
type Stream struct {
	Name string // stream name; ARN wins when both are set, as in KCL
	ARN  string
	// ID is the serialized multi-stream identifier "account:name:epoch" of a
	// multi-stream lease table, whose lease keys are ID + ":" + shardId. Empty
	// for a single-stream table, whose lease keys are plain shard ids.
	ID string
}

// LeaseKey returns the lease key of shardID in this stream's lease table.
func (s Stream) LeaseKey(shardID string) string {
	if s.ID == "" {
		return shardID
	}
	return s.ID + ":" + shardID
}

// ListOptions tunes ListShards.
type ListOptions struct {
	// Filter is passed on the first page only. Leave it nil for the full list
	// (FROM_TRIM_HORIZON), which is what the lineage graph needs.
	Filter *types.ShardFilter
	// PageSize is ListShards' MaxResults (the service default of 1000 when 0).
	PageSize int32
	Retry    Retry
}

// ListShards returns every shard of the stream, following NextToken. Pages
// after the first carry only NextToken (and MaxResults): Kinesis rejects a
// NextToken together with StreamName, ShardFilter or ExclusiveStartShardId.
// An expired NextToken restarts the listing, because a token cannot be
// renewed and a partial list would look like vanished shards.
func ListShards(ctx context.Context, api KinesisAPI, s Stream, opt ListOptions) ([]types.Shard, error) {
	if s.Name == "" && s.ARN == "" {
		return nil, errors.New("reshard: ListShards needs a stream name or ARN")
	}
	for restarts := 0; ; restarts++ {
		shards, err := listAllPages(ctx, api, s, opt)
		if err != nil && awserr.Is(err, "ExpiredNextTokenException") && restarts < 2 {
			continue
		}
		return shards, err
	}
}

func listAllPages(ctx context.Context, api KinesisAPI, s Stream, opt ListOptions) ([]types.Shard, error) {
	in := &kinesis.ListShardsInput{ShardFilter: opt.Filter}
	if s.ARN != "" {
		in.StreamARN = aws.String(s.ARN)
	} else {
		in.StreamName = aws.String(s.Name)
	}
	if opt.PageSize > 0 {
		in.MaxResults = aws.Int32(opt.PageSize)
	}
	// A page cut off by its request deadline or a broken connection is
	// retried like a throttled one: ListShards only reads.
	retryable := func(err error) bool {
		return awserr.Retryable(err) || (ctx.Err() == nil && awserr.Transient(err))
	}
	var shards []types.Shard
	for {
		var out *kinesis.ListShardsOutput
		err := opt.Retry.do(ctx, "ListShards", retryable, func() error {
			var err error
			out, err = api.ListShards(ctx, in)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("list shards of %s: %w", streamLabel(s), err)
		}
		shards = append(shards, out.Shards...)
		if out.NextToken == nil || *out.NextToken == "" {
			return shards, nil
		}
		in = &kinesis.ListShardsInput{NextToken: out.NextToken, MaxResults: in.MaxResults}
	}
}

func streamLabel(s Stream) string {
	if s.ARN != "" {
		return s.ARN
	}
	return s.Name
}
