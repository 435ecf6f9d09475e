package runner

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/kcltool/kcltool/runner/metrics"
	"github.com/kcltool/kcltool/runner/processor"
)

// Issue 27's finding: a handler that fails every batch left
// kcltool_shard_handler_retries_total at 0 (counted once a batch finally
// finished) and millis_behind_latest at the last read's 0 (the reader
// waits on the batch), so no alert could fire. Now the retries count as
// they run, and the checkpoint age and the oldest record's age grow while
// the batch keeps failing; millis_behind_latest keeps the last read's
// figure.
func TestStuckShardShowsInMetrics(t *testing.T) {
	s := newStack(t, 1)
	s.put(t, func(k string) string { return k }, keys("k", 5)...)
	cfg := s.config(t, "w1", outFile(t), processor.ShellCommand(`cat >/dev/null; echo "cannot handle it" >&2; exit 1`)...)
	cfg.Metrics = metrics.New()
	start(t, s, cfg)

	shard := fmt.Sprintf(`{app=%q,stream=%q,shard="shardId-000000000000"} `, s.table, s.stream)
	// A sample not there yet (the lease not yet taken) reads as -1.
	sample := func(name string) float64 {
		var b bytes.Buffer
		if err := cfg.Metrics.WritePrometheus(&b); err != nil {
			t.Fatal(err)
		}
		if v, ok := sampleValue(b.String(), name+shard); ok {
			return v
		}
		return -1
	}
	// The backoff is 50-200 ms: a few retries come within a second or two.
	eventually(t, 30*time.Second, "retries counted while the batch keeps failing", func() bool {
		return sample("kcltool_shard_handler_retries_total") >= 3
	})
	if done := sample("kcltool_shard_batches_total"); done != 0 {
		t.Fatalf("%v batches done: the handler fails every run, so none should be", done)
	}
	first := sample("kcltool_shard_handler_retries_total")
	eventually(t, 30*time.Second, "more retries, the batch still failing", func() bool {
		return sample("kcltool_shard_handler_retries_total") > first
	})
	age := sample("kcltool_shard_last_checkpoint_age_seconds")
	oldest := sample("kcltool_shard_oldest_unprocessed_record_age_seconds")
	if age <= 0 || oldest <= 0 {
		t.Fatalf("checkpoint age %v s, oldest unprocessed record %v s: both should be above 0 while the batch fails", age, oldest)
	}
	eventually(t, 30*time.Second, "the ages growing", func() bool {
		return sample("kcltool_shard_last_checkpoint_age_seconds") > age &&
			sample("kcltool_shard_oldest_unprocessed_record_age_seconds") > oldest
	})
	// The KCL's meaning: the last GetRecords answer's figure. The five
	// records came in one read, which found the shard at its tip.
	if behind := sample("kcltool_shard_millis_behind_latest"); behind != 0 {
		t.Fatalf("millis_behind_latest %v, want the last read's 0", behind)
	}
	if n := sample("kcltool_shard_checkpoints_total"); n != 0 {
		t.Fatalf("%v checkpoints written by a handler that never succeeds", n)
	}
}
