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
	cancel   context.CancelFunc // ends ctx: the platform's detection and the reporter
	starter  sync.WaitGroup     // startReporter, which stop waits for
	reporter *coordination.Reporter
	starting bool               // startReporter runs
	pending  coordination.State // the state for the reporter it starts
	stopped  bool
}

// startReporter picks the metrics for the platform, then starts the
// reporter with the latest state.
func (k *kcl3Side) startReporter() {
	defer k.starter.Done()
	w := k.w
	var samplers []coordination.Sampler
	platform := "not detected"
	if w.cfg.KCL3.Samplers != nil {
		samplers, platform = w.cfg.KCL3.Samplers(k.ctx)
	}
	names := make([]string, len(samplers))
	for i, s := range samplers {
		names[i] = s.Name()
	}
	r := coordination.NewReporter(w.ddb, w.kcl3Tables(), w.cfg.WorkerID, w.clock, coordination.ReporterOptions{
		Samplers: samplers, Period: w.cfg.KCL3.WorkerMetricsInterval, Logger: w.log,
	})
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped || k.ctx.Err() != nil {
		return
	}
	r.SetState(k.pending)
	r.Start(k.ctx)
	k.reporter = r
	w.log.Info("reporting worker metrics for the KCL 3.x leader", "table", r.Table(), "every", w.cfg.KCL3.WorkerMetricsInterval,
		"platform", platform, "metrics", names)
}

func (k *kcl3Side) start(ctx context.Context, w *Worker, st coordination.State) {
	k.mu.Lock()
	k.w = w
	k.ctx, k.cancel = context.WithCancel(ctx)
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
		if !st.ReportMetrics || k.starting {
			k.pending = st
			return
		}
		// Finding the platform may take seconds (the EC2 metadata
		// service): not on the worker's start path.
		k.starting, k.pending = true, st
		k.starter.Add(1)
		go k.startReporter()
		return
	}
	k.reporter.SetState(st)
}

// stop ends the reporter. After a crash-like stop its item stays for the
// leader to expire, as a killed worker's would; a graceful stop has
// deleted it already (unlist). A platform detection still running (the
// EC2 metadata service may take seconds) is cut short and waited for, so
// that nothing of the worker outlives Run.
func (k *kcl3Side) stop(ctx context.Context) {
	k.mu.Lock()
	k.stopped = true
	cancel := k.cancel
	k.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	k.starter.Wait()
	k.mu.Lock()
	r := k.reporter
	k.mu.Unlock()
	if r != nil {
		_ = r.Stop(ctx)
	}
}

// unlist, at a graceful stop, stops the reporter for good and deletes
// this worker's metrics item (coordination.Reporter.Remove), so that the
// KCL 3.x leader stops counting the worker as active at its next run. It
// runs before the evict writes: with the item still fresh, the leader
// would give the evicted leases back to this worker, which no longer
// reads, and they would wait for the item to go stale (up to 60 s).
// Nothing happens when no reporter runs (a KCL 2.x table).
func (k *kcl3Side) unlist(ctx context.Context) {
	k.mu.Lock()
	r := k.reporter
	k.stopped = true // a reporter still being started never starts
	k.mu.Unlock()
	if r == nil {
		return
	}
	if err := r.Remove(ctx); err != nil {
		k.w.log.Warn("could not delete this worker's metrics item; the leader expires it after 2 reporter periods", "table", r.Table(), "err", err)
		return
	}
	k.w.log.Info("worker metrics item deleted, so that the leader assigns this worker nothing more", "table", r.Table())
}
