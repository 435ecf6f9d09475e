package runner

import (
	"context"
	"errors"
	"fmt"
	"github.com/kcltool/kcltool/internal/clock"

	"github.com/kcltool/kcltool/leasecore"
)

// KCL3AppearedError ends a worker that found a KCL 3.x application on its
// lease table while it ran. errors.Is(err, leasecore.ErrKCL3Table) holds.
type KCL3AppearedError struct {
	Err *leasecore.KCL3TableError
}

func (e *KCL3AppearedError) Error() string {
	return fmt.Sprintf("a KCL 3.x application appeared on lease table %q while this worker ran (%s): "+
		"it stopped taking and stealing leases, released the leases it held and stopped, because KCL 3.x assigns leases "+
		"through an elected leader and a worker using the KCL 2.x protocol would fight it for every lease; "+
		"stop this application's kcltool workers, or give the KCL 3.x application its own lease table (tableName)",
		e.Err.Table, e.Err.Evidence)
}

func (e *KCL3AppearedError) Unwrap() error { return e.Err }

// kcl3Loop repeats the KCL 3.x check made at start at every shard sync
// interval, with ProbeKCL3's cheap reads, and stops the worker gracefully
// when a 3.x application has appeared: nothing more is taken or stolen,
// running handlers finish within the grace, every lease is released, and
// Run returns a *KCL3AppearedError. Errors of the probe itself are only
// logged: the check is repeated.
func (w *Worker) kcl3Loop(ctx context.Context) {
	for {
		if clock.Sleep(ctx, w.clock, w.cfg.ShardSyncInterval) != nil {
			return
		}
		err := leasecore.ProbeKCL3(ctx, w.ddb, w.cfg.Table, w.cfg.App)
		var kcl3 *leasecore.KCL3TableError
		switch {
		case ctx.Err() != nil:
			return
		case errors.As(err, &kcl3):
			w.coord.StopTaking()
			w.mu.Lock()
			w.fatal = &KCL3AppearedError{Err: kcl3}
			w.mu.Unlock()
			w.log.Error("a KCL 3.x application appeared on the lease table: stopping, releasing every lease", "evidence", kcl3.Evidence)
			w.Shutdown()
			return
		case err != nil:
			w.log.Info("KCL 3.x check failed; trying again later", "err", err)
		}
	}
}

// fatalErr is why the worker stopped by itself, nil after a requested stop.
func (w *Worker) fatalErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fatal
}
