package top

import (
	"context"
	"math/big"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/leasecore"
)

// countLimit caps the records one counting read asks for. A lease does not
// say how many records a checkpoint covers, so the rate is counted: one
// GetRecords from the previous checkpoint, counting up to the new one.
// Past the cap the rate is shown as "at least". The read competes with the
// consumers for the shard's 5 reads a second, once per refresh and only
// where the checkpoint moved.
const countLimit = 1000

// rateLanes bounds the counting reads in flight.
const rateLanes = 8

// rates fills RecordsPerSec for the shards whose checkpoint moved since the
// previous refresh.
func (s *Sampler) rates(ctx context.Context, shards []Shard, leases []leasecore.Lease, at time.Time) {
	if s.kin == nil || s.prev == nil {
		return
	}
	elapsed := at.Sub(s.prevAt).Seconds()
	if elapsed <= 0 {
		return
	}
	byKey := map[string]*leasecore.Lease{}
	for i := range leases {
		byKey[leases[i].LeaseKey] = &leases[i]
	}
	var wg sync.WaitGroup
	lanes := make(chan struct{}, rateLanes)
	for i := range shards {
		sh := &shards[i]
		cur, prev, ok := byKey[sh.id], s.prev[sh.id], false
		if cur != nil {
			_, ok = s.prev[sh.id]
		}
		if !ok || sh.Stream == "" {
			continue
		}
		if cur.Checkpoint == prev.Checkpoint {
			zero := 0.0
			sh.RecordsPerSec = &zero
			continue
		}
		if !numeric(prev.Checkpoint.SequenceNumber) || !(numeric(cur.Checkpoint.SequenceNumber) || cur.Checkpoint.IsShardEnd()) {
			continue
		}
		wg.Add(1)
		lanes <- struct{}{}
		go func(from, to leasecore.SequenceNumber) {
			defer func() { <-lanes; wg.Done() }()
			n, capped, err := countRecords(ctx, s.kin, sh.Stream, sh.Key, from, to)
			if err != nil {
				return
			}
			r := float64(n) / elapsed
			sh.RecordsPerSec, sh.RecordsCapped = &r, capped
		}(prev.Checkpoint, cur.Checkpoint)
	}
	wg.Wait()
}

func numeric(seq string) bool { return seq != "" && !leasecore.IsSentinel(seq) }

// countRecords counts the records after from up to and including to (all
// of them when to is SHARD_END), reading at most countLimit.
func countRecords(ctx context.Context, kin interface {
	GetShardIterator(context.Context, *kinesis.GetShardIteratorInput, ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error)
	GetRecords(context.Context, *kinesis.GetRecordsInput, ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error)
}, stream, shard string, from, to leasecore.SequenceNumber) (n int, capped bool, err error) {
	it, err := kin.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{
		StreamName: aws.String(stream), ShardId: aws.String(shard),
		ShardIteratorType: types.ShardIteratorTypeAfterSequenceNumber, StartingSequenceNumber: aws.String(from.SequenceNumber),
	})
	if err != nil {
		return 0, false, err
	}
	out, err := kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it.ShardIterator, Limit: aws.Int32(countLimit)})
	if err != nil {
		return 0, false, err
	}
	limit, _ := new(big.Int).SetString(to.SequenceNumber, 10)
	for _, r := range out.Records {
		if limit != nil {
			seq, ok := new(big.Int).SetString(aws.ToString(r.SequenceNumber), 10)
			if !ok || seq.Cmp(limit) > 0 {
				return n, false, nil
			}
		}
		n++
	}
	return n, len(out.Records) == countLimit, nil
}
