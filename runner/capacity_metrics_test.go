package runner

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/runner/metrics"
)

// A worker's metrics give the lease table's read and write units per
// operation, as dynalite answered them: on a 2-shard stream, shard sync's
// two lease creations, two takes, one write unit per renewal, checkpoint
// and release (lease items are far below 1 KB), and the scans' reads.
func TestWorkerMetricsCountCapacityUnits(t *testing.T) {
	s := newStack(t, 2)
	out := outFile(t)
	s.put(t, func(k string) string { return k }, keys("k", 20)...)
	cfg := s.config(t, "w1", out)
	cfg.Metrics = metrics.New()
	// Renewals every 975ms with as long to be answered: no retries on a
	// busy machine, whose failed writes would add estimated units.
	cfg.Lease.FailoverTime = 3 * time.Second
	r := start(t, s, cfg)
	eventually(t, 30*time.Second, "20 records handled and leases renewed", func() bool {
		return len(readHandled(t, out)) >= 20 && r.w.coord != nil && r.w.coord.Stats().Renewals >= 4
	})
	if err := r.stop(t); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	var metrics bytes.Buffer
	if err := cfg.Metrics.WritePrometheus(&metrics); err != nil {
		t.Fatal(err)
	}
	text := metrics.String()
	value := func(kind, op string) float64 {
		t.Helper()
		prefix := fmt.Sprintf(`kcltool_worker_lease_table_%s_units_total{app="%s",worker="w1",op="%s"} `, kind, s.table, op)
		v, ok := sampleValue(text, prefix)
		if !ok {
			t.Fatalf("metrics lack %q:\n%s", prefix, text)
		}
		return v
	}
	st := r.w.coord.Stats()
	for _, c := range []struct {
		op   string
		want int64
	}{
		{leasecore.OpTake, st.Taken}, {leasecore.OpRenew, st.Renewals}, {leasecore.OpCheckpoint, st.Checkpoints},
		{leasecore.OpRelease, st.Released}, {leasecore.OpShardSync, 2}, {leasecore.OpSteal, 0},
	} {
		if got := value("write", c.op); got != float64(c.want) || (c.want == 0 && c.op != leasecore.OpSteal) {
			t.Errorf("op %s: %v write units, want %d", c.op, got, c.want)
		}
	}
	if st.Taken != 2 || st.Released != 2 {
		t.Errorf("taken %d, released %d: want 2 each", st.Taken, st.Released)
	}
	// The taker's scans read half a unit a page at least (dynalite charges
	// nothing for an empty table, such as the first shard sync's scan).
	if got := value("read", leasecore.OpScan); got < float64(st.TakerRuns)/2 {
		t.Errorf("%d taker scans: %v read units", st.TakerRuns, got)
	}
	value("read", leasecore.OpShardSync)
	if got := value("read", leasecore.OpRenew); got != 0 {
		t.Errorf("renewals read %v units; they read only after a failed condition", got)
	}
}
