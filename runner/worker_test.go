package runner

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/runner/metrics"
)

// One worker reads every record of a 2-shard stream from TRIM_HORIZON, in
// shard order, checkpoints each shard at its last record, and on a graceful
// stop releases both leases.
func TestWorkerConsumesCheckpointsAndReleases(t *testing.T) {
	s := newStack(t, 2)
	out := outFile(t)
	for round := range 4 {
		s.put(t, func(k string) string { return fmt.Sprintf("%s:%d", k, round) }, keys("k", 40)...)
	}
	cfg := s.config(t, "w1", out)
	cfg.Metrics = metrics.New()
	r := start(t, s, cfg)
	eventually(t, 30*time.Second, "160 records handled", func() bool { return len(readHandled(t, out)) >= 160 })

	got := readHandled(t, out)
	if len(got) != 160 {
		t.Fatalf("handled %d records, want 160 (no duplicates without failures)", len(got))
	}
	lastOfShard := map[string]string{}
	round := map[string]int{}
	for _, h := range got {
		var key string
		var n int
		if _, err := fmt.Sscanf(strings.Replace(h.text(), ":", " ", 1), "%s %d", &key, &n); err != nil {
			t.Fatalf("record %q: %v", h.text(), err)
		}
		if key != h.PartitionKey || n != round[key] {
			t.Fatalf("key %s: got round %d, want %d (records out of order)", key, n, round[key])
		}
		round[key]++
		lastOfShard[h.ShardID] = h.SequenceNumber
	}
	eventually(t, 10*time.Second, "checkpoints at the last records", func() bool {
		for shard, seq := range lastOfShard {
			if leases(t, s)[shard].Checkpoint.SequenceNumber != seq {
				return false
			}
		}
		return true
	})

	var metrics bytes.Buffer
	if err := cfg.Metrics.WritePrometheus(&metrics); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`kcltool_worker_leases_held{app="` + s.table + `",worker="w1"} 2`,
		`kcltool_shard_records_total{app="` + s.table + `",stream="` + s.stream + `",shard="shardId-000000000000"}`,
		`kcltool_shard_handler_duration_seconds_bucket{`,
		`# TYPE kcltool_shard_handler_duration_seconds histogram`,
	} {
		if !strings.Contains(metrics.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, metrics.String())
		}
	}
	// CPU time: the handlers' per shard (they ran), this process's whole.
	for _, prefix := range []string{
		`kcltool_shard_handler_cpu_seconds_total{app="` + s.table + `",stream="` + s.stream + `",shard="shardId-000000000000"} `,
		`process_cpu_seconds_total `,
		`go_goroutines `,
	} {
		if v, ok := sampleValue(metrics.String(), prefix); !ok || v <= 0 {
			t.Errorf("metrics: %q is %v (found %v), want a positive number:\n%s", prefix, v, ok, metrics.String())
		}
	}

	if err := r.stop(t); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	for key, l := range leases(t, s) {
		if l.LeaseOwner != "" {
			t.Errorf("lease %s still owned by %s after a graceful stop", key, l.LeaseOwner)
		}
		if l.Checkpoint.SequenceNumber != lastOfShard[key] {
			t.Errorf("lease %s checkpoint %s, want the last record %s", key, l.Checkpoint.SequenceNumber, lastOfShard[key])
		}
	}
}

// sampleValue finds the Prometheus sample line that starts with prefix and
// returns its value.
func sampleValue(text, prefix string) (float64, bool) {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}
