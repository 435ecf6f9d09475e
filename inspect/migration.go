package inspect

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/leasecore"
)

// The KCL's own waits around its migrations (KCL v3.5.1), shared by
// doctor's kcl3-migration finding and `migration status`.
const (
	// MigrationReadyMonitor checks readiness every minute
	// (MONITOR_INTERVAL_MILLIS) and flips cv only after it has held for
	// ten minutes (Scheduler gives MigrationStateMachineImpl a
	// flipTo3XStabilizerTimeInSeconds of 10 min).
	CVMonitorInterval = time.Minute
	CVStabilization   = 10 * time.Minute
	// MigrationAwareLAMDataManager trusts a worker's support code (sup)
	// when slu is within 3 × the 30s reporting period.
	SupportCodeFreshness = 90 * time.Second
	// TableMigrationStatus: INIT bakes TableMigrationState
	// .DEFAULT_BAKE_TIME_SECONDS (1h) before DEPLOYED. (PENDING bakes
	// tableMigrationCompleteBakeTimeSeconds, CoordinatorConfig, 1 day by
	// default, clamped to 1h–7d, before COMPLETE; blockers there are acted
	// on at once, so no bake is modelled for it.)
	TMDeployedBake = time.Hour
	// WorkerMetricsFreshness: the 3.x leader counts a worker as active only
	// if its worker-metrics item is newer than 2 × the 30s reporting period.
	WorkerMetricsFreshness = 60 * time.Second
)

// MigrationFacts is what the readiness rules read.
type MigrationFacts struct {
	Coord coordination.State
	// TMAt is TableMigration3.5's mts: when tm was last written.
	TMAt    time.Time
	Metrics []coordination.WorkerMetrics
	// Leases is the last read of the lease table (every lease, expired
	// or not: the cv monitor counts them all).
	Leases []leasecore.Lease
	// UnexpiredOwners owns leases neither expired nor unassigned
	// (Lease.isExpiredOrUnassigned), as the caller could judge it.
	UnexpiredOwners []string
	// LegacyCoordKeys are <app>-CoordinatorState's keys other than the
	// lock and TableMigration3.5 (read during tm PENDING only).
	LegacyCoordKeys []string
	Tables          coordination.Tables
	Now             time.Time
}

// MigrationStep is the next step of one of the two migrations, with what
// holds it, as the leader judges it.
type MigrationStep struct {
	Name     string // "cv CLIENT_VERSION_UPGRADE_FROM_2X → CLIENT_VERSION_3X_WITH_ROLLBACK"
	Blockers []string
	Workers  []string
	// Overdue: something blocks and the KCL's own wait since the state was
	// written has run out, so the blocker is what holds the fleet.
	Overdue bool
	Note    string // what happens next, or who acts
	// WaitLeft is the time left of the KCL's own wait since the state was
	// written (the cv check and stabilisation, the tm INIT bake); zero
	// when it has run out or the step has none. The leader restarts the
	// cv stabilisation whenever a check fails, so with blockers the flip
	// comes at least CVStabilization after they clear.
	WaitLeft time.Duration
	// OperatorStep: the leader does not take this step; an operator does
	// (a deployment or the KCL's migration script).
	OperatorStep bool
}

// TMIs compares tm with a status, with or without the enum's prefix.
func TMIs(tm, status string) bool {
	return tm != "" && (tm == status || "TABLE_MIGRATION_STATUS_"+tm == status)
}

// MigrationSteps reports the next step of the client-version and table
// migrations and who blocks it, by the rules of MigrationReadyMonitor (cv)
// and TableMigrationStateMachineImpl (tm).
func MigrationSteps(f MigrationFacts) []MigrationStep {
	var steps []MigrationStep
	if s, ok := cvStep(f); ok {
		steps = append(steps, s)
	}
	if s, ok := tmStep(f); ok {
		steps = append(steps, s)
	}
	return steps
}

// cvStep is the client-version step: under CLIENT_VERSION_UPGRADE_FROM_2X
// the leader flips cv to 3X_WITH_ROLLBACK once the index is ACTIVE and
// every lease owner has fresh worker metrics, steadily for 10 minutes
// (MigrationReadyMonitor.isReadyForUpgradeTo3x).
func cvStep(f MigrationFacts) (MigrationStep, bool) {
	c := f.Coord
	switch c.ClientVersion {
	case coordination.ClientVersionUpgradeFrom2X:
	case coordination.ClientVersion3XWithRollback:
		return MigrationStep{Name: "cv " + c.ClientVersion + " → " + coordination.ClientVersion3X, OperatorStep: true,
			Note: "the operator's step (deploying the workers with CLIENT_VERSION_CONFIG_3X, or `kcltool migration finalize`); the leader does not take it"}, true
	default:
		return MigrationStep{}, false
	}
	s := MigrationStep{Name: "cv " + c.ClientVersion + " → " + coordination.ClientVersion3XWithRollback,
		Note: fmt.Sprintf("the leader checks every %s and flips once ready for %s", CVMonitorInterval, CVStabilization)}
	if c.Index != "ACTIVE" {
		s.Blockers = append(s.Blockers, "index LeaseOwnerToLeaseKeyIndex "+orNone(c.Index)+", not ACTIVE")
	}
	// Every owner of any lease, expired or not (leaseRefresher.listLeases);
	// an unassigned lease counts too: its null owner is in the owner set,
	// and no worker-metrics item answers for it.
	fresh := freshWorkers(f, "")
	owners, unassigned := map[string]int{}, 0
	for _, l := range f.Leases {
		if l.LeaseOwner == "" {
			unassigned++
			continue
		}
		owners[l.LeaseOwner]++
	}
	for _, w := range slices.Sorted(maps.Keys(owners)) {
		if !fresh[w] {
			s.Blockers = append(s.Blockers, fmt.Sprintf("%s: owns %s, no worker metrics newer than %s", w, plural(owners[w], "lease"), WorkerMetricsFreshness))
			s.Workers = append(s.Workers, w)
		}
	}
	if unassigned > 0 {
		s.Blockers = append(s.Blockers, fmt.Sprintf("%s without an owner (the monitor counts the missing owner as a worker without metrics)", plural(unassigned, "lease")))
	}
	if !c.ClientVersionAt.IsZero() {
		s.WaitLeft = max(0, CVMonitorInterval+CVStabilization-f.Now.Sub(c.ClientVersionAt))
	}
	s.Overdue = len(s.Blockers) > 0 && !c.ClientVersionAt.IsZero() && f.Now.Sub(c.ClientVersionAt) > CVMonitorInterval+CVStabilization
	return s, true
}

// tmStep is the table-migration step of KCL 3.5
// (TableMigrationStateMachineImpl.handleLeaderLockResult); none when the
// application has no side tables and no tm, or tm is COMPLETE.
func tmStep(f MigrationFacts) (MigrationStep, bool) {
	tm := f.Coord.TableMigration
	if TMIs(tm, coordination.TableMigrationComplete) || (tm == "" && !f.Coord.SideTables) {
		return MigrationStep{}, false
	}
	since := time.Duration(0)
	if !f.TMAt.IsZero() {
		since = f.Now.Sub(f.TMAt)
	}
	owners := f.UnexpiredOwners
	switch {
	case tm == "" || TMIs(tm, coordination.TableMigrationInit):
		// handleInitState: every owner of an unexpired lease reports the
		// support code SINGLE_TABLE_MIGRATION (sup = 1) with a fresh slu
		// (isMinSupportCodeMet); then INIT is written, and DEPLOYED after
		// a bake of 1h.
		s := MigrationStep{Name: "tm " + orNone(tm) + " → " + coordination.TableMigrationDeployed,
			Note: "once every lease owner reports sup = 1, the leader writes INIT and, an hour later (the bake), DEPLOYED"}
		have := map[string]coordination.WorkerMetrics{}
		for _, m := range f.Metrics {
			have[m.WorkerID] = m
		}
		for _, w := range owners {
			m, ok := have[w]
			switch {
			case !ok:
				s.Blockers = append(s.Blockers, w+": owns leases, no worker-metrics item (no support code)")
			case !m.SupportsMigration:
				s.Blockers = append(s.Blockers, w+": sup is not 1 (a KCL before 3.5 or a worker that does not follow the table migration)")
			case m.SupportsMigrationAt.IsZero() || f.Now.Sub(m.SupportsMigrationAt) > SupportCodeFreshness:
				s.Blockers = append(s.Blockers, fmt.Sprintf("%s: sup = 1 but slu older than %s", w, SupportCodeFreshness))
			default:
				continue
			}
			s.Workers = append(s.Workers, w)
		}
		if TMIs(tm, coordination.TableMigrationInit) && !f.TMAt.IsZero() {
			s.WaitLeft = max(0, TMDeployedBake-since)
		}
		s.Overdue = len(s.Blockers) > 0 && TMIs(tm, coordination.TableMigrationInit) && since > TMDeployedBake
		return s, true
	case TMIs(tm, coordination.TableMigrationDeployed):
		// handlePendingState with DDB = DEPLOYED, run by a leader deployed
		// with migrateAllEntitiesToLeaseTable = true: it moves the
		// coordinator state once no worker reports to the side table and
		// every lease owner reports fresh metrics (isLegacyWorkerMetricsEmpty).
		s := MigrationStep{Name: "tm " + coordination.TableMigrationDeployed + " → " + coordination.TableMigrationPending, OperatorStep: true,
			Note: "the operator's step first: deploy migrateAllEntitiesToLeaseTable = true to every worker; DEPLOYED is a steady state until then"}
		s.Blockers, s.Workers = legacyBlockers(f, owners)
		return s, true
	case TMIs(tm, coordination.TableMigrationPending):
		// handlePendingState with DDB = PENDING: a side table in use again
		// makes the leader write DEPLOYED back (a rollback); otherwise
		// COMPLETE after tableMigrationCompleteBakeTimeSeconds.
		s := MigrationStep{Name: "tm " + coordination.TableMigrationPending + " → " + coordination.TableMigrationComplete,
			Note: "after the bake time since PENDING was written (tableMigrationCompleteBakeTimeSeconds: 1 day by default, 1h to 7 days)"}
		s.Blockers, s.Workers = legacyBlockers(f, owners)
		for _, k := range f.LegacyCoordKeys {
			s.Blockers = append(s.Blockers, fmt.Sprintf("%s still holds %q (only the lock and TableMigration3.5 may stay)", f.Tables.CoordinatorState, k))
		}
		if len(s.Blockers) > 0 {
			s.Note = "the leader writes DEPLOYED back at its next run (a rollback): a worker still uses the side tables"
		}
		// The leader acts on these at its next run, not after a wait: seen
		// at all, they are a rollback under way, or no leader runs.
		s.Overdue = len(s.Blockers) > 0
		return s, true
	}
	return MigrationStep{}, false
}

// legacyBlockers are TableMigrationStateMachineImpl.isLegacyWorkerMetricsEmpty's
// conditions: every owner of an unexpired lease has fresh metrics (in
// either table), and no worker has fresh metrics in the side table.
func legacyBlockers(f MigrationFacts, owners []string) (blockers, workers []string) {
	fresh := freshWorkers(f, "")
	for _, w := range owners {
		if !fresh[w] {
			blockers = append(blockers, fmt.Sprintf("%s: owns leases, no worker metrics newer than %s", w, WorkerMetricsFreshness))
			workers = append(workers, w)
		}
	}
	side := f.Tables.WorkerMetrics
	for _, w := range slices.Sorted(maps.Keys(freshWorkers(f, side))) {
		blockers = append(blockers, fmt.Sprintf("%s: reports its worker metrics to %s (migrateAllEntitiesToLeaseTable is not true there)", w, side))
		workers = append(workers, w)
	}
	return blockers, workers
}

// MetricsFresh is the migration-ready monitor's test of an active worker
// (isWorkerMetricStatsActive: lut + 2 × the 30s reporting period > now, in
// whole seconds), so that `migration status` and the monitor that flips cv
// never disagree, not even at exactly 60 s.
func MetricsFresh(m coordination.WorkerMetrics, now time.Time) bool {
	return coordination.MigrationMetricsActive(m, now, WorkerMetricsFreshness)
}

// freshWorkers are the workers with fresh metrics, read in table (any
// table when "").
func freshWorkers(f MigrationFacts, table string) map[string]bool {
	out := map[string]bool{}
	for _, m := range f.Metrics {
		if MetricsFresh(m, f.Now) && (table == "" || m.Table == table) {
			out[m.WorkerID] = true
		}
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// plural writes "1 lease", "2 leases".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
