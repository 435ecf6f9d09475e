package runner

import (
	"context"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/leasecore"
)

// kcl3Tables: Config.KCL3Tables of the worker's configuration.
func (w *Worker) kcl3Tables() coordination.Tables { return w.cfg.KCL3Tables() }

// KCL3Tables names the tables of the application's KCL 3.x coordination:
// the side tables after the application unless configured.
func (c Config) KCL3Tables() coordination.Tables {
	table := c.Table
	if table == "" {
		table = c.App // as the defaults do
	}
	t := coordination.DefaultTables(table, c.App)
	if c.KCL3.CoordinatorStateTable != "" {
		t.CoordinatorState = c.KCL3.CoordinatorStateTable
	}
	if c.KCL3.WorkerMetricsTable != "" {
		t.WorkerMetrics = c.KCL3.WorkerMetricsTable
	}
	return t
}

// DetectMode is the mode decision a worker with cfg makes at start, read
// only (run --print-config shows it): the table's state with the
// worker's clientVersionConfig applied.
func DetectMode(ctx context.Context, api coordination.DetectAPI, cfg Config) (coordination.State, error) {
	st, err := coordination.Detect(ctx, api, cfg.KCL3Tables())
	if err != nil {
		return st, err
	}
	return withClientVersionConfig(st, cfg.KCL3.ClientVersionConfig), nil
}

// detectMode reads the table's KCL 3.x state (the index, cv, tm), which
// decides how this worker gets its leases: by taking (KCL 2.x, or a 3.x
// application under CLIENT_VERSION_UPGRADE_FROM_2X or rolled back to
// CLIENT_VERSION_2X) or from the leader (KCL 3.x).
func (w *Worker) detectMode(ctx context.Context) (coordination.State, error) {
	return DetectMode(ctx, w.ddb, w.cfg)
}

// withClientVersionConfig applies the worker's clientVersionConfig where
// the KCL lets it decide: only while a 3.x table has no Migration3.0 item
// (MigrationClientVersionStateInitializer.getNextClientVersionBasedOnConfigVersion).
// Detect assumes the default, CLIENT_VERSION_CONFIG_3X; COMPATIBLE_WITH_2X
// starts as CLIENT_VERSION_UPGRADE_FROM_2X (taking, with metrics), its
// PHASE1 as CLIENT_VERSION_INIT (taking, no metrics). Once the item exists
// its cv decides, whatever the configuration. A KCL 2.x table is left as it
// is: kcltool never starts a migration.
func withClientVersionConfig(st coordination.State, config string) coordination.State {
	if st.ClientVersion != "" || st.Layout == coordination.LayoutNone {
		return st
	}
	switch config {
	case ClientVersionConfigCompatible2X:
		st.Assignment, st.ReportMetrics = leasecore.AssignByTaking, true
		st.Reason += "; clientVersionConfig " + config + " with no Migration3.0 item: as " + coordination.ClientVersionUpgradeFrom2X
	case ClientVersionConfigCompatible2XPhase1:
		st.Assignment, st.ReportMetrics = leasecore.AssignByTaking, false
		st.Reason += "; clientVersionConfig " + config + " with no Migration3.0 item: 2.x compatible, no metrics"
	}
	return st
}

// modeLoop re-reads the table's state at every shard sync interval and
// follows it without a restart, as KCL workers follow the Migration3.0
// item (MigrationStateMachine polls it every minute): a 3.x application
// that appears mid-run, or a rollback to CLIENT_VERSION_2X, switches the
// coordinator's assignment (held leases stay held) and the worker-metrics
// reporter. A failed read is logged and retried at the next interval; the
// worker goes on in the mode it has.
func (w *Worker) modeLoop(ctx context.Context) {
	loop := w.health.Loop("kcl3-state", w.loopBound(w.cfg.ShardSyncInterval))
	defer loop.Close()
	ctx = leasecore.WithLoop(ctx, loop)
	for {
		loop.Beat()
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
