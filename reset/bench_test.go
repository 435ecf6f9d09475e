package reset

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// TestBenchResolveTime is `make bench`'s figure for --at: finding the last
// record before a time in the middle of a 6,000-record shard, by the
// gallop of AT_TIMESTAMP probes against the obvious read from TRIM_HORIZON,
// alternately in the same run, in calls and time. It only runs with
// KCLTOOL_BENCH=1: timing belongs in benchmarks, never in unit tests.
func TestBenchResolveTime(t *testing.T) {
	if os.Getenv("KCLTOOL_BENCH") == "" {
		t.Skip("benchmark: run with KCLTOOL_BENCH=1 (make bench)")
	}
	const batches, perBatch, rounds = 12, 500, 5
	w := newWorld(t, 1)
	shard := shardID(0)
	var at time.Time
	start := time.Now()
	for b := range batches {
		if b == batches/2 {
			at = mark()
		}
		entries := make([]kintypes.PutRecordsRequestEntry, perBatch)
		for i := range entries {
			entries[i] = kintypes.PutRecordsRequestEntry{PartitionKey: aws.String("k"), Data: fmt.Appendf(nil, "%d-%d", b, i)}
		}
		out, err := w.kin.PutRecords(w.ctx, &kinesis.PutRecordsInput{StreamName: aws.String(w.stream), Records: entries})
		if err != nil || aws.ToInt32(out.FailedRecordCount) != 0 {
			t.Fatalf("put: %v", err)
		}
	}
	t.Logf("put %d records in %s", batches*perBatch, time.Since(start).Round(time.Millisecond))

	gallop := func() (int, string) {
		s := &shardScanner{kin: w.kin, stream: w.stream, shard: shard}
		b, err := s.find(context.Background(), at)
		if err != nil {
			t.Fatal(err)
		}
		return s.calls, aws.ToString(b.last.SequenceNumber)
	}
	scan := func() (int, string) {
		s := &shardScanner{kin: w.kin, stream: w.stream, shard: shard, limit: 10000}
		_, last, _, err := s.read(context.Background(), s.iterator(kintypes.ShardIteratorTypeTrimHorizon, time.Time{}), at, 0)
		if err != nil {
			t.Fatal(err)
		}
		return s.calls, aws.ToString(last.SequenceNumber)
	}
	gc, gs := gallop()
	sc, ss := scan()
	if gs != ss {
		t.Fatalf("the gallop found %s, the scan %s", gs, ss)
	}
	var gT, sT []time.Duration
	for range rounds {
		gT = append(gT, timed(func() { gallop() }))
		sT = append(sT, timed(func() { scan() }))
	}
	gM, sM := median(gT), median(sT)
	fmt.Printf("bench reset-at-time: %d records in one shard, time in the middle, %d rounds: gallop %d calls, median %s; read from TRIM_HORIZON (10,000 records a call) %d calls, median %s; ratio %.2fx\n",
		batches*perBatch, rounds, gc, gM.Round(time.Millisecond), sc, sM.Round(time.Millisecond), float64(gM)/float64(sM))
}

func timed(fn func()) time.Duration {
	s := time.Now()
	fn()
	return time.Since(s)
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
