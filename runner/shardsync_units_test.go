package runner

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/runner/metrics"
)

// The periodic shard sync reads the lease taker's latest scan instead of
// the table: once the worker runs, shard sync consumes no read units (the
// table is complete, so nothing is missing and nothing is re-read), while
// the taker's scans go on. Before, every sync scanned the table with
// consistent reads, on every worker.
func TestShardSyncReusesTheTakersScan(t *testing.T) {
	s := newStack(t, 2)
	out := outFile(t)
	cfg := s.config(t, "w1", out)
	cfg.Metrics = metrics.New()
	cfg.Lease.FailoverTime = 3 * time.Second // the taker scans every 6 s at most
	cfg.ShardSyncInterval = 6500 * time.Millisecond
	r := start(t, s, cfg)
	eventually(t, 60*time.Second, "three periodic shard syncs", func() bool { return r.w.syncs.Load() >= 4 })
	if err := r.stop(t); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	var metrics bytes.Buffer
	if err := cfg.Metrics.WritePrometheus(&metrics); err != nil {
		t.Fatal(err)
	}
	value := func(op string) float64 {
		t.Helper()
		prefix := fmt.Sprintf(`kcltool_worker_lease_table_read_units_total{app="%s",worker="w1",op="%s"} `, s.table, op)
		v, ok := sampleValue(metrics.String(), prefix)
		if !ok {
			t.Fatalf("metrics lack %q:\n%s", prefix, metrics.String())
		}
		return v
	}
	// The first sync, before the coordinator starts, scans the empty table
	// (dynalite charges nothing for it) and creates the two leases.
	if got := value(leasecore.OpShardSync); got != 0 {
		t.Errorf("%d shard syncs read %v units; want 0 after the first, which read an empty table", r.w.syncs.Load(), got)
	}
	if got := value(leasecore.OpScan); got == 0 {
		t.Error("the taker's scans read no units")
	}
}
