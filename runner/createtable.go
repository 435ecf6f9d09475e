package runner

import (
	"context"

	"github.com/kcltool/kcltool/coordination"
)

// ensureTable makes sure the lease table exists; with CreateTable a
// missing one is created for KCLVersion (newApplication). A table that
// exists keeps its mode, whatever KCLVersion says.
func (w *Worker) ensureTable(ctx context.Context) error {
	app := w.newApplication()
	created, err := coordination.EnsureLeaseTable(ctx, w.ddb, w.kcl3Tables(), w.cfg.CreateTable, app, w.clock)
	if created {
		w.log.Info("created the lease table", "table", w.cfg.Table, "kclVersion", w.cfg.KCLVersion,
			"index", app.Index, "clientVersion", app.ClientVersion, "clientVersionConfig", w.cfg.KCL3.ClientVersionConfig)
	}
	return err
}

// newApplication is what KCL 3.5.1 makes of a new application at the
// first start of a worker with this clientVersionConfig, or KCL 2.x's
// table for KCLVersion 2. MigrationClientVersionStateInitializer
// .getNextClientVersionBasedOnConfigVersion picks the version a worker
// starts with when there is no Migration3.0 item: 3X starts
// CLIENT_VERSION_3X, COMPATIBLE_WITH_2X CLIENT_VERSION_UPGRADE_FROM_2X
// (both write the item and create the index: DynamicMigrationComponentsInitializer
// .initializeClientVersionFor3x, ...ForUpgradeFrom2x), and PHASE1
// CLIENT_VERSION_INIT, which writes nothing and creates no index: KCL
// 2.x's table.
func (w *Worker) newApplication() coordination.NewApplication {
	if w.cfg.KCLVersion == 2 {
		return coordination.NewApplication{}
	}
	switch w.cfg.KCL3.ClientVersionConfig {
	case ClientVersionConfigCompatible2X:
		return coordination.NewApplication{Index: true, ClientVersion: coordination.ClientVersionUpgradeFrom2X, ModifiedBy: w.cfg.WorkerID}
	case ClientVersionConfigCompatible2XPhase1:
		return coordination.NewApplication{}
	}
	return coordination.NewKCL3Application(w.cfg.WorkerID)
}
