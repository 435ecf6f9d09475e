package inspect

import (
	"testing"
	"time"

	"github.com/kcltool/kcltool/coordination"
)

// `migration status` counts a worker's metrics fresh exactly when the
// migration-ready monitor does: lut + 60 > now in whole seconds. At exactly
// 60 s the monitor already counts the worker gone.
func TestMetricsFreshAgreesWithTheMonitor(t *testing.T) {
	lut := time.Unix(1_700_000_000, 0)
	m := coordination.WorkerMetrics{WorkerID: "w", LastUpdate: lut}
	for _, d := range []time.Duration{0, 59 * time.Second, 59*time.Second + 999*time.Millisecond, 60 * time.Second, 61 * time.Second} {
		now := lut.Add(d)
		want := coordination.MigrationMetricsActive(m, now, coordination.MigrationMetricsExpiry(30*time.Second))
		if got := MetricsFresh(m, now); got != want {
			t.Errorf("%s after lut: migration status says fresh=%v, the monitor %v", d, got, want)
		}
	}
	if MetricsFresh(coordination.WorkerMetrics{WorkerID: "w"}, lut) {
		t.Error("metrics without lut counted fresh")
	}
}
