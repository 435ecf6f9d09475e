package runner

import (
	"context"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
)

// metricsItemOf is worker id's metrics item in the fleet, or nil.
func metricsItemOf(t *testing.T, s kcl3Stack, id string) *kcl3fleet.WorkerMetricsReport {
	t.Helper()
	reps, err := s.fleet.WorkerMetricsReports(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := range reps {
		if reps[i].WorkerID == id {
			return &reps[i]
		}
	}
	return nil
}

// A crash-like stop (the context ends) deletes nothing, as a killed
// process would not: the metrics item stays for the leader to expire.
func TestKCL3StopNowKeepsMetricsItem(t *testing.T) {
	for _, kind := range []kcl3fleet.Kind{kcl3fleet.NewApp, kcl3fleet.SideTables} {
		t.Run(kind.String(), func(t *testing.T) {
			s := newKCL3Stack(t, 1, kcl3fleet.Layout{Kind: kind})
			r := start(t, s.stack, s.kcl3Config(t, "kcltool-1", outFile(t)))
			eventually(t, 30*time.Second, "the metrics item written", func() bool { return metricsItemOf(t, s, "kcltool-1") != nil })
			r.kill()
			<-r.done
			r.done <- nil // for the cleanup
			if metricsItemOf(t, s, "kcltool-1") == nil {
				t.Fatal("the metrics item was deleted at a crash-like stop")
			}
		})
	}
}
