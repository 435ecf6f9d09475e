package coordination

import (
	"context"
	"errors"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

// Tables names the tables of one KCL 3.x application.
type Tables struct {
	Lease            string
	CoordinatorState string // KCL 3.0-3.4 side table, hash key "key"
	WorkerMetrics    string // KCL 3.0-3.4 side table, hash key "wid"
}

// DefaultTables names the side tables after the application, as the KCL
// does (a custom lease table name does not change them).
func DefaultTables(leaseTable, app string) Tables {
	if app == "" {
		app = leaseTable
	}
	return Tables{Lease: leaseTable, CoordinatorState: app + "-CoordinatorState", WorkerMetrics: app + "-WorkerMetricStats"}
}

// Client versions, the cv attribute of the Migration3.0 item.
const (
	ClientVersion3X             = "CLIENT_VERSION_3X"
	ClientVersion3XWithRollback = "CLIENT_VERSION_3X_WITH_ROLLBACK"
	ClientVersionUpgradeFrom2X  = "CLIENT_VERSION_UPGRADE_FROM_2X"
	ClientVersion2X             = "CLIENT_VERSION_2X"
)

// Layout is where the coordination items live.
type Layout int

const (
	// LayoutNone: no KCL 3.x item anywhere (a KCL 2.x table).
	LayoutNone Layout = iota
	// LayoutSideTables: <app>-CoordinatorState and <app>-WorkerMetricStats
	// (KCL 3.0-3.4, or tm INIT / DEPLOYED).
	LayoutSideTables
	// LayoutPending: tm PENDING; writes go to the lease table, reads merge
	// both, the leader lock stays in the side table.
	LayoutPending
	// LayoutLeaseTable: everything in the lease table (tm COMPLETE, or a
	// new KCL 3.5 application).
	LayoutLeaseTable
)

// State is what a worker or an operator command needs to know of a
// table's KCL 3.x coordination, read by Detect.
type State struct {
	// Assignment is the lease protocol a worker must follow now.
	Assignment leasecore.Assignment
	// ReportMetrics: the worker must upsert its worker-metrics item (3.x,
	// and CLIENT_VERSION_UPGRADE_FROM_2X, where the leader waits for every
	// worker's metrics before it moves the fleet to 3.x).
	ReportMetrics bool
	// Index is the LeaseOwnerToLeaseKeyIndex's status ("ACTIVE",
	// "CREATING", ...), "" when the table has none.
	Index string
	// ClientVersion is cv, "" when there is no Migration3.0 item; By and
	// At are mb and mts.
	ClientVersion   string
	ClientVersionBy string
	ClientVersionAt time.Time
	// TableMigration is tm of the TableMigration3.5 item, "" when none.
	TableMigration string
	// SideTables: the side tables exist.
	SideTables bool
	Layout     Layout
	// Reason says in one line why Assignment and Layout are what they
	// are, naming the evidence (the index, cv, tm), for the start-up log
	// and --print-config.
	Reason string
}

// errNotYet marks functions declared before they are built.
var errNotYet = errors.New("coordination: not implemented yet")

// Detect reads the lease table's description, the Migration3.0 and
// TableMigration3.5 items and whether the side tables exist, and decides
// the State. Cheap enough to repeat every shard sync.
func Detect(ctx context.Context, api DetectAPI, t Tables) (State, error) {
	_, _, _ = ctx, api, t
	return State{}, errNotYet
}

// Lock is the leader lock item, "Leader".
type Lock struct {
	Found bool
	Owner string // ownerName
	// Version is recordVersionNumber, replaced at every heartbeat.
	Version string
	// LeaseDuration is the lock's lifetime (leaseDuration, milliseconds as
	// a string in the item).
	LeaseDuration time.Duration
	Table         string // where it was read
}

// ReadLock reads the leader lock where the state says it is.
func ReadLock(ctx context.Context, api ReadAPI, t Tables, st State) (Lock, error) {
	_, _, _, _ = ctx, api, t, st
	return Lock{}, errNotYet
}

// WorkerMetrics is one worker's metrics item (WorkerMetricStats).
type WorkerMetrics struct {
	WorkerID   string    // wid, or the leaseKey in the lease table
	LastUpdate time.Time // lut, epoch seconds
	// Samples is sts: metric name ("C", "M", "NI", "NO", "T") to the last
	// samples, -1 for a failed one. OperatingRange is opr: name to [max].
	Samples        map[string][]float64
	OperatingRange map[string][]int64
	// SupportsMigration is sup = 1; SupportsMigrationAt is slu.
	SupportsMigration   bool
	SupportsMigrationAt time.Time
	Table               string // where it was read
}

// ListWorkerMetrics reads every worker's metrics item, merged over both
// layouts as the KCL reads them (the newest lut wins per worker).
func ListWorkerMetrics(ctx context.Context, api ReadAPI, t Tables, st State) ([]WorkerMetrics, error) {
	_, _, _, _ = ctx, api, t, st
	return nil, errNotYet
}
