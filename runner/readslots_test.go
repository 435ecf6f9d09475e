package runner

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// A worker holding more shards than it has read slots never has more
// reads open at once, counted by a recording proxy in front of
// kinesis-local, and still reads every shard.
func TestWorkerBoundsReadsInFlight(t *testing.T) {
	const shards, slots = 8, 2
	s := newStack(t, shards)
	rec, err := emulator.NewRecorder(emulator.KinesisEndpoint(t), emulator.NewCallLog(t.TempDir(), nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.Close)
	s.kin = kinesis.NewFromConfig(emulator.Config(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(rec.URL) })
	cfg := s.config(t, "w1", outFile(t))
	cfg.MaxReadsInFlight = slots
	start(t, s, cfg)
	eventually(t, time.Minute, "every shard read three times", func() bool {
		counts := rec.ShardCounts("GetShardIterator")
		return len(counts) == shards && rec.Count("GetRecords") >= 3*shards
	})
	// Shard sync's ListShards is the one other Kinesis call; it may
	// overlap the reads.
	if m := rec.MaxInFlight(); m > slots+1 {
		t.Errorf("%d Kinesis calls in flight at once, want at most %d reads and a ListShards", m, slots)
	}
}
