package coordination

import (
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

// Presence is what a describe told of a table.
type Presence int

const (
	PresenceAbsent Presence = iota
	PresencePresent
	// PresenceUnknown: the caller may not describe the table.
	PresenceUnknown
)

func (p Presence) String() string {
	switch p {
	case PresencePresent:
		return "present"
	case PresenceUnknown:
		return "unknown"
	}
	return "absent"
}

func (l Layout) String() string {
	switch l {
	case LayoutSideTables:
		return "side tables"
	case LayoutPending:
		return "pending (writes to the lease table, reads merged)"
	case LayoutLeaseTable:
		return "lease table"
	}
	return "none"
}

// Token names the layout in one word for JSON readers (String is prose for
// the log): none, side-tables, pending, lease-table.
func (l Layout) Token() string {
	switch l {
	case LayoutSideTables:
		return "side-tables"
	case LayoutPending:
		return "pending"
	case LayoutLeaseTable:
		return "lease-table"
	}
	return "none"
}

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
	// ClientVersionHistory is h, the earlier client versions as the item
	// keeps them, newest first (MigrationState.addHistoryEntry inserts at
	// index 0; MigrationState.HistoryEntry: cv, mb, mts).
	ClientVersionHistory []ClientVersionChange
	// TableMigration is tm of the TableMigration3.5 item, "" when none.
	TableMigration string
	// SideTables: the side tables exist.
	SideTables bool
	Layout     Layout
	// CoordinatorStateTable and WorkerMetricsTable: whether each side
	// table exists. A describe refused with AccessDenied is no evidence
	// either way (PresenceUnknown), unless a read of the table succeeds.
	CoordinatorStateTable Presence
	WorkerMetricsTable    Presence
	// ClientVersionIn and TableMigrationIn name the table each item was
	// read from.
	ClientVersionIn  string
	TableMigrationIn string
	// LeaderLockSeen: the "Leader" item was found. Detect looks for it
	// only when nothing else shows a KCL 3.x application.
	LeaderLockSeen bool
	// Reason says in one line why Assignment and Layout are what they
	// are, naming the evidence (the index, cv, tm), for the start-up log
	// and --print-config.
	Reason string
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

// ClientVersionChange is one entry of the Migration3.0 item's history h.
type ClientVersionChange struct {
	ClientVersion string    // cv
	By            string    // mb
	At            time.Time // mts
}

// MigrationWriteTable is where a KCL 3.5 worker creates Migration3.0 when
// there is none (CoordinatorStateDAO's write delegate): the side table
// while tm is INIT or DEPLOYED (which a side table without a
// TableMigration3.5 item counts as), else the lease table. ok is false
// when the side table's existence is unknown (it may not be described).
func (s State) MigrationWriteTable(t Tables) (table string, ok bool) {
	if s.CoordinatorStateTable == PresenceUnknown {
		return "", false
	}
	switch s.effectiveTableMigration() {
	case TableMigrationInit, TableMigrationDeployed:
		return t.CoordinatorState, true
	}
	return t.Lease, true
}
