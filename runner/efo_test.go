package runner

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/emulator"
)

// fanOut is a test worker's fan-out setting through the EFOProxy (the
// harness makes up kinesis-local's missing initial-response event).
func fanOut(t *testing.T, max time.Duration) *FanOut {
	return &FanOut{API: emulator.KinesisEFO(t), ConsumerName: "efo-test", SubscriptionMax: max}
}

func shardStatsOf(w *Worker, shard string) *shardStats {
	w.metrics.mu.Lock()
	defer w.metrics.mu.Unlock()
	return w.metrics.shards[shard]
}

// TestFanOutResubscribesWithoutLossOrRepeat: subscriptions cut short
// (every 1.5 s, and kinesis-local then holds the shard for about 3 s) are
// continued from the last event's continuation sequence number: across at
// least five resubscriptions, with records put all along, every record is
// handled exactly once and in order.
func TestFanOutResubscribesWithoutLossOrRepeat(t *testing.T) {
	s := newStack(t, 1)
	out := outFile(t)
	cfg := s.config(t, "A", out)
	cfg.FanOut = fanOut(t, 1500*time.Millisecond)
	cfg.Metrics = NewMetrics()
	r := start(t, s, cfg)

	const shard = "shardId-000000000000"
	resubs := func() int64 {
		if st := shardStatsOf(r.w, shard); st != nil {
			return st.resubscriptions.Load()
		}
		return 0
	}
	n := 0
	deadline := time.Now().Add(90 * time.Second)
	for resubs() < 5 || n < 200 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d resubscriptions after 90s", resubs())
		}
		batch := make([]string, 10)
		for i := range batch {
			batch[i] = "k" + strconv.Itoa(n)
			n++
		}
		s.put(t, func(k string) string { return k }, batch...)
		time.Sleep(300 * time.Millisecond)
	}
	eventually(t, 30*time.Second, fmt.Sprintf("all %d records handled", n), func() bool { return len(readHandled(t, out)) >= n })
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	got := readHandled(t, out)
	if len(got) != n {
		t.Errorf("%d records handled, want %d (each once)", len(got), n)
	}
	for i, h := range got {
		if want := "k" + strconv.Itoa(i); h.text() != want {
			t.Fatalf("record %d is %q, want %q: lost, repeated or out of order", i, h.text(), want)
		}
	}
	st := shardStatsOf(r.w, shard)
	t.Logf("%d records, %d subscriptions, %d resubscriptions", n, st.subscriptions.Load(), st.resubscriptions.Load())
	var sb strings.Builder
	if err := r.w.metrics.WritePrometheus(&sb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), `kcltool_shard_resubscriptions_total{`) || !strings.Contains(sb.String(), "kcltool_shard_delivery_seconds_count{") {
		t.Errorf("metrics lack the fan-out counters:\n%s", sb.String())
	}
}
