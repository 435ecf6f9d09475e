package runner

import (
	"context"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/clock"
)

// kcl3Tables names the tables of the application's KCL 3.x coordination:
// the side tables after the application unless configured.
func (w *Worker) kcl3Tables() coordination.Tables {
	t := coordination.DefaultTables(w.cfg.Table, w.cfg.App)
	if w.cfg.KCL3.CoordinatorStateTable != "" {
		t.CoordinatorState = w.cfg.KCL3.CoordinatorStateTable
	}
	if w.cfg.KCL3.WorkerMetricsTable != "" {
		t.WorkerMetrics = w.cfg.KCL3.WorkerMetricsTable
	}
	return t
}

// detectMode reads the table's KCL 3.x state (the index, cv, tm), which
// decides how this worker gets its leases: by taking (KCL 2.x, or a 3.x
// application under CLIENT_VERSION_UPGRADE_FROM_2X or rolled back to
// CLIENT_VERSION_2X) or from the leader (KCL 3.x).
func (w *Worker) detectMode(ctx context.Context) (coordination.State, error) {
	return coordination.Detect(ctx, w.ddb, w.kcl3Tables())
}

// modeLoop re-reads the table's state at every shard sync interval and
// follows it without a restart, as KCL workers follow the Migration3.0
// item (MigrationStateMachine polls it every minute): a 3.x application
// that appears mid-run, or a rollback to CLIENT_VERSION_2X, switches the
// coordinator's assignment (held leases stay held) and the worker-metrics
// reporter. A failed read is logged and retried at the next interval; the
// worker goes on in the mode it has.
func (w *Worker) modeLoop(ctx context.Context) {
	for {
		if clock.Sleep(ctx, w.clock, w.cfg.ShardSyncInterval) != nil {
			return
		}
		st, err := w.detectMode(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			w.log.Info("KCL 3.x state check failed; keeping the current mode, trying again later", "err", err)
			continue
		}
		w.follow(ctx, st)
	}
}

// follow applies a state read by modeLoop.
func (w *Worker) follow(ctx context.Context, st coordination.State) {
	w.mu.Lock()
	prev := w.mode
	w.mode = st
	w.mu.Unlock()
	w.kcl3.setState(ctx, st)
	if prev.Assignment != st.Assignment || prev.Layout != st.Layout || prev.ReportMetrics != st.ReportMetrics {
		w.log.Warn("the lease table's KCL 3.x state changed: following it", "from", prev.Assignment.String(), "assignment", st.Assignment.String(),
			"layout", st.Layout.String(), "reportMetrics", st.ReportMetrics, "reason", st.Reason)
	}
	if w.coord.Assignment() != st.Assignment {
		w.coord.SetAssignment(st.Assignment)
	}
}

// fatalErr is why the worker stopped by itself, nil after a requested stop.
func (w *Worker) fatalErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fatal
}
