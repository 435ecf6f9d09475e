package runner

import (
	"context"
	"sync"

	"github.com/kcltool/kcltool/coordination"
)

// kcl3Side runs this worker's worker-metrics item (coordination.Reporter)
// while the table's state asks for it: KCL 3.x and
// CLIENT_VERSION_UPGRADE_FROM_2X, where the leader waits for every
// worker's metrics. It starts at the first such state, start-up or a
// later re-detect; a KCL 2.x table never gets a write.
type kcl3Side struct {
	mu       sync.Mutex
	w        *Worker
	ctx      context.Context
	reporter *coordination.Reporter
}

func (k *kcl3Side) start(ctx context.Context, w *Worker, st coordination.State) {
	k.mu.Lock()
	k.w, k.ctx = w, ctx
	k.mu.Unlock()
	k.setState(ctx, st)
}

// setState passes a state read by Detect on to the reporter, starting it
// when the state first asks for metrics. A state that stops asking
// (CLIENT_VERSION_2X) keeps the reporter running idle: it writes nothing
// until metrics are asked for again, as the KCL stops its reporter on a
// rollback and starts it again on a roll-forward.
func (k *kcl3Side) setState(_ context.Context, st coordination.State) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.w == nil {
		return
	}
	if k.reporter == nil {
		if !st.ReportMetrics {
			return
		}
		w := k.w
		k.reporter = coordination.NewReporter(w.ddb, w.kcl3Tables(), w.cfg.WorkerID, w.clock, coordination.ReporterOptions{
			Samplers: w.cfg.KCL3.Samplers, Period: w.cfg.KCL3.WorkerMetricsInterval, Logger: w.log,
		})
		k.reporter.SetState(st)
		k.reporter.Start(k.ctx)
		w.log.Info("reporting worker metrics for the KCL 3.x leader", "table", k.reporter.Table(), "every", w.cfg.KCL3.WorkerMetricsInterval, "metrics", len(w.cfg.KCL3.Samplers))
		return
	}
	k.reporter.SetState(st)
}

// stop ends the reporter; its item stays for the leader to expire, as a
// stopped Java worker's does.
func (k *kcl3Side) stop(ctx context.Context) {
	k.mu.Lock()
	r := k.reporter
	k.mu.Unlock()
	if r != nil {
		_ = r.Stop(ctx)
	}
}
