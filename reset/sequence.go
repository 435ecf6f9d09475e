package reset

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/leasecore"
)

// ParseCheckpoint reads a checkpoint given on the command line: a sequence
// number (decimal digits) or TRIM_HORIZON, LATEST or SHARD_END. AT_TIMESTAMP
// is refused: KCL stores it without the time, and each worker substitutes
// its own configured timestamp (docs/kcl-compat.md, Sentinel checkpoints).
func ParseCheckpoint(s string, sub int64) (leasecore.SequenceNumber, error) {
	v := strings.TrimSpace(s)
	switch {
	case v == leasecore.AT_TIMESTAMP:
		return leasecore.SequenceNumber{}, inputErrorf("AT_TIMESTAMP cannot be written as a reset: the lease does not store the time and each KCL worker would use its own configured timestamp; use %s TIME, which resolves the time to a sequence number per shard", SettingAt)
	case !leasecore.ValidCheckpoint(v):
		return leasecore.SequenceNumber{}, errors.New("\"" + s + "\" is not a sequence number (decimal digits) or TRIM_HORIZON, LATEST, SHARD_END")
	case sub < 0:
		return leasecore.SequenceNumber{}, errors.New("the sub-sequence number must not be negative")
	case sub != 0 && leasecore.IsSentinel(v):
		return leasecore.SequenceNumber{}, errors.New("a sub-sequence number goes only with a sequence number")
	}
	return leasecore.SequenceNumber{SequenceNumber: v, SubSequenceNumber: sub}, nil
}

// checkSequenceInShard makes sure seq is a record of the shard: an
// AT_SEQUENCE_NUMBER iterator must start exactly at it. Some Kinesis
// implementations (kinesis-local) hand out an iterator for another shard's
// sequence number, so the record read back is what decides.
func checkSequenceInShard(ctx context.Context, kin StreamAPI, stream, shard, seq string) error {
	notHere := func() error {
		return inputErrorf("sequence number %s is not a record of shard %s (a sequence number of another shard, trimmed past the retention, or mistyped)", seq, shard)
	}
	it, err := kin.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{
		StreamName: aws.String(stream), ShardId: aws.String(shard),
		ShardIteratorType: types.ShardIteratorTypeAtSequenceNumber, StartingSequenceNumber: aws.String(seq),
	})
	if isBadSequence(err) {
		return notHere()
	}
	if err != nil {
		return err
	}
	next := it.ShardIterator
	for range maxEmptyReads {
		if next == nil {
			break
		}
		out, err := kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: next, Limit: aws.Int32(1)})
		if err != nil {
			return err
		}
		if len(out.Records) > 0 {
			if aws.ToString(out.Records[0].SequenceNumber) != seq {
				return notHere()
			}
			return nil
		}
		if aws.ToInt64(out.MillisBehindLatest) == 0 {
			break
		}
		next = out.NextShardIterator
	}
	return notHere()
}

func isBadSequence(err error) bool {
	return awserr.BadSequence(err) || awserr.NotFound(err)
}
