package reset

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// boundary is where a point in time falls in one shard.
type boundary struct {
	// last is the last record that arrived before the time, nil when none.
	last *types.Record
	// atOrAfter says a record at or after the time exists: the one right
	// after last (or the shard's first record).
	atOrAfter bool
	// empty says the shard holds no record at all.
	empty bool
}

// shardScanner finds boundaries in one shard.
type shardScanner struct {
	kin    StreamAPI
	stream string
	shard  string
	calls  int
	// limit is the GetRecords page size (scanLimit when 0).
	limit int32
}

const (
	// scanLimit is the GetRecords page size of a boundary search. Small
	// enough that a busy shard's second of records is one or two pages.
	scanLimit = 1000
	// maxEmptyReads bounds the empty pages followed while Kinesis reports
	// records further on (it returns empty pages over stretches it skips).
	maxEmptyReads = 200
	// firstWindow is the first look back from the time; each next look
	// back is four times longer.
	firstWindow = time.Second
)

// find locates the time in the shard: the last record before it is the
// checkpoint that makes the first record at or after it the next one
// processed (a numeric checkpoint restarts AT_SEQUENCE_NUMBER and drops the
// checkpointed record, docs/kcl-compat.md, Where a reader starts).
//
// It reads the shard's first record, then gallops back from the time with
// AT_TIMESTAMP iterators (1s, 4s, 16s, ... before it) until a read starts
// at a record older than the time, and reads forward from there to the
// first record at or after it. The answer rests only on the arrival
// timestamps of records read contiguously, never on where an AT_TIMESTAMP
// iterator claims to start, so an imprecise iterator costs reads, not
// correctness. A shard with one record a day costs a dozen probes, a busy
// one about a second's worth of records.
func (s *shardScanner) find(ctx context.Context, at time.Time) (boundary, error) {
	first, _, _, err := s.read(ctx, s.iterator(types.ShardIteratorTypeTrimHorizon, time.Time{}), at, 1)
	if err != nil {
		return boundary{}, err
	}
	if first == nil {
		return boundary{empty: true}, nil
	}
	earliest := *first.ApproximateArrivalTimestamp
	if !earliest.Before(at) {
		return boundary{atOrAfter: true}, nil
	}
	for window := firstWindow; ; window *= 4 {
		start := at.Add(-window)
		fromStart := !start.After(earliest)
		in := s.iterator(types.ShardIteratorTypeAtTimestamp, start)
		if fromStart {
			in = s.iterator(types.ShardIteratorTypeTrimHorizon, time.Time{})
		}
		f, last, found, err := s.read(ctx, in, at, 0)
		if err != nil {
			return boundary{}, err
		}
		if fromStart || (f != nil && f.ApproximateArrivalTimestamp.Before(at)) {
			if fromStart && last == nil {
				// The first record was older than the time a moment ago:
				// only trimming in between explains this.
				return boundary{atOrAfter: found}, nil
			}
			return boundary{last: last, atOrAfter: found}, nil
		}
	}
}

func (s *shardScanner) iterator(typ types.ShardIteratorType, at time.Time) *kinesis.GetShardIteratorInput {
	in := &kinesis.GetShardIteratorInput{StreamName: aws.String(s.stream), ShardId: aws.String(s.shard), ShardIteratorType: typ}
	if typ == types.ShardIteratorTypeAtTimestamp {
		in.Timestamp = aws.Time(at)
	}
	return in
}

// read reads forward from an iterator until the first record at or after
// the time (found), the end of a closed shard, or the tip of an open one.
// first is the first record read, last the last one before the time. With
// stopAfter > 0 it returns as soon as it has read that many records.
func (s *shardScanner) read(ctx context.Context, in *kinesis.GetShardIteratorInput, at time.Time, stopAfter int) (first, last *types.Record, found bool, err error) {
	s.calls++
	it, err := s.kin.GetShardIterator(ctx, in)
	if err != nil {
		return nil, nil, false, fmt.Errorf("read shard %s: %w", s.shard, err)
	}
	next, seen, empties := it.ShardIterator, 0, 0
	limit := int32(scanLimit)
	if s.limit > 0 {
		limit = s.limit
	}
	if stopAfter > 0 {
		limit = int32(stopAfter)
	}
	for next != nil {
		s.calls++
		out, err := s.kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: next, Limit: aws.Int32(limit)})
		if err != nil {
			return nil, nil, false, fmt.Errorf("read shard %s: %w", s.shard, err)
		}
		for i := range out.Records {
			r := out.Records[i]
			if r.ApproximateArrivalTimestamp == nil {
				return nil, nil, false, fmt.Errorf("read shard %s: record %s has no ApproximateArrivalTimestamp", s.shard, aws.ToString(r.SequenceNumber))
			}
			if first == nil {
				first = &r
			}
			if !r.ApproximateArrivalTimestamp.Before(at) {
				return first, last, true, nil
			}
			last = &r
			if seen++; stopAfter > 0 && seen >= stopAfter {
				return first, last, false, nil
			}
		}
		next = out.NextShardIterator
		atTip := aws.ToInt64(out.MillisBehindLatest) == 0
		switch {
		case len(out.Records) == 0 && atTip, len(out.Records) < int(limit) && atTip:
			return first, last, false, nil
		case len(out.Records) == 0:
			if empties++; empties > maxEmptyReads {
				return nil, nil, false, fmt.Errorf("read shard %s: %d empty pages in a row while Kinesis reports %d ms of records ahead", s.shard, empties, aws.ToInt64(out.MillisBehindLatest))
			}
		default:
			empties = 0
		}
	}
	return first, last, false, nil // the end of a closed shard
}
