package reset

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/kinesisrec"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// resolution is the checkpoint a shard gets, and why.
type resolution struct {
	cp     leasecore.SequenceNumber
	reason string
}

func (r resolution) isShardEnd() bool { return r.cp.IsShardEnd() }

// timeResolver turns a point in time into a checkpoint per shard.
type timeResolver struct {
	kin         StreamAPI
	stream      string
	g           *reshard.Graph
	at          time.Time
	concurrency int
	// progress, when set, hears of each shard decided: done of total.
	progress func(done, total int)
	// Calls counts the Kinesis calls made.
	calls int
}

// resolve decides every shard in ids (a set closed under "parent of", as
// Ancestors gives it) by the rules of issue 6:
//
//   - a closed shard with no record at or after the time was closed before
//     it (or nothing arrived between the time and its closing, which reads
//     the same): SHARD_END;
//   - a shard with a record before the time: the last such record, so
//     that the next one processed is the first at or after the time;
//   - a shard without one (created after the time, or quiet until then):
//     TRIM_HORIZON.
//
// A closed shard without any record is told apart by its children: if one
// of them holds a record before the time, the shard had closed before it.
func (r *timeResolver) resolve(ctx context.Context, ids []string) (map[string]resolution, error) {
	bounds, err := r.findAll(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]resolution, len(ids))
	closedBefore := map[string]bool{}
	order := r.g.TopoOrder()
	for i := len(order) - 1; i >= 0; i-- { // children first
		id := order[i]
		b, ok := bounds[id]
		if !ok {
			continue
		}
		node, _ := r.g.Node(id)
		childBefore := false
		for _, c := range node.ChildShardIDs {
			if cb, ok := bounds[c]; ok && (cb.last != nil || closedBefore[c]) {
				childBefore = true
			}
		}
		switch {
		case !node.Open && !b.atOrAfter && (b.last != nil || childBefore):
			closedBefore[id] = true
			why := "closed, and every record arrived before " + stamp(r.at)
			if b.last == nil {
				why = "closed before " + stamp(r.at) + " without records (its children hold records from before it)"
			}
			out[id] = resolution{cp: leasecore.SequenceNumber{SequenceNumber: leasecore.SHARD_END}, reason: why}
		case b.last != nil:
			out[id] = resolution{cp: checkpointAt(id, *b.last), reason: "last record before " + stamp(r.at) +
				" arrived at " + stamp(*b.last.ApproximateArrivalTimestamp)}
		case b.empty:
			out[id] = resolution{cp: trimHorizon, reason: "no records: starts at the first one"}
		default:
			out[id] = resolution{cp: trimHorizon, reason: "no record before " + stamp(r.at) + ": every record is replayed"}
		}
	}
	return out, nil
}

var trimHorizon = leasecore.SequenceNumber{SequenceNumber: leasecore.TRIM_HORIZON}

// findAll searches every shard, a few at a time: each search is sequential
// calls on one shard, and Kinesis limits reads per shard, not per stream.
func (r *timeResolver) findAll(ctx context.Context, ids []string) (map[string]boundary, error) {
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
		out  = make(map[string]boundary, len(ids))
		sem  = make(chan struct{}, max(r.concurrency, 1))
		done int
	)
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			s := &shardScanner{kin: r.kin, stream: r.stream, shard: id}
			b, err := s.find(ctx, r.at)
			mu.Lock()
			defer mu.Unlock()
			r.calls += s.calls
			if done++; r.progress != nil {
				r.progress(done, len(ids))
			}
			if err != nil {
				errs = append(errs, err)
				return
			}
			out[id] = b
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// checkpointAt is the checkpoint that marks rec as processed. For a KPL
// aggregate that is its last sub-record: all of them arrived with it, so
// all of them are before the time, and KCL drops only sub-records at or
// below the checkpoint's sub-sequence number.
func checkpointAt(shard string, rec types.Record) leasecore.SequenceNumber {
	cp := leasecore.SequenceNumber{SequenceNumber: aws.ToString(rec.SequenceNumber)}
	subs, _ := kinesisrec.Deaggregate(kinesisrec.FromKinesis(shard, []types.Record{rec}), leasecore.HashRange{})
	if n := len(subs); n > 0 {
		cp.SubSequenceNumber = subs[n-1].SubSequenceNumber
	}
	return cp
}
