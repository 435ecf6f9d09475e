package doctor

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/inspect"
)

// The KCL's own waits around its migrations (KCL v3.5.1):
const (
	// MigrationReadyMonitor checks readiness every minute
	// (MONITOR_INTERVAL_MILLIS) and flips cv only after it has held for
	// ten minutes (Scheduler gives MigrationStateMachineImpl a
	// flipTo3XStabilizerTimeInSeconds of 10 min).
	cvMonitorInterval = time.Minute
	cvStabilization   = 10 * time.Minute
	// MigrationAwareLAMDataManager trusts a worker's support code (sup)
	// when slu is within 3 × the 30s reporting period.
	supportCodeFreshness = 90 * time.Second
	// TableMigrationStatus: INIT bakes TableMigrationState
	// .DEFAULT_BAKE_TIME_SECONDS (1h) before DEPLOYED. (PENDING bakes
	// tableMigrationCompleteBakeTimeSeconds, CoordinatorConfig, 1 day by
	// default, clamped to 1h–7d, before COMPLETE; blockers there are acted
	// on at once, so doctor needs no bake for it.)
	tmDeployedBake = time.Hour
)

// TableMigration3.5's tm values (TableMigrationStatus names).
const (
	tmInit     = coordination.TableMigrationInit
	tmDeployed = coordination.TableMigrationDeployed
	tmPending  = coordination.TableMigrationPending
	tmComplete = coordination.TableMigrationComplete
)

// tmIs compares tm with a status, with or without the enum's prefix.
func tmIs(tm, status string) bool {
	return tm != "" && (tm == status || "TABLE_MIGRATION_STATUS_"+tm == status)
}

// migrationStep is the next step of one of the two migrations, with what
// holds it, as the leader judges it.
type migrationStep struct {
	name     string // "cv CLIENT_VERSION_UPGRADE_FROM_2X → CLIENT_VERSION_3X_WITH_ROLLBACK"
	blockers []string
	workers  []string
	// overdue: something blocks and the KCL's own wait since the state was
	// written has run out, so the blocker is what holds the fleet.
	overdue bool
	note    string // what happens next, or who acts
}

// checkMigration reports the client-version and table migrations: the cv
// and tm states and who blocks the leader's next step, by the rules of
// MigrationReadyMonitor (cv) and TableMigrationStateMachineImpl (tm).
func checkMigration(fc *facts) []Finding {
	st := fc.kcl3
	c := st.coord
	lines := []string{fmt.Sprintf("Migration3.0 cv: %s", orNone(c.ClientVersion))}
	if c.ClientVersion != "" && !c.ClientVersionAt.IsZero() {
		lines[0] += fmt.Sprintf(" (set by %s %s ago)", orNone(c.ClientVersionBy), roundDur(fc.now.Sub(c.ClientVersionAt)))
	}
	tmLine := "TableMigration3.5 tm: " + orNone(c.TableMigration)
	if !st.tmAt.IsZero() {
		tmLine += fmt.Sprintf(" (written %s ago)", roundDur(fc.now.Sub(st.tmAt)))
	}
	lines = append(lines, tmLine, "LeaseOwnerToLeaseKeyIndex: "+orNone(c.Index), fmt.Sprintf("side tables: %v", c.SideTables))
	var steps []migrationStep
	if s, ok := cvStep(fc); ok {
		steps = append(steps, s)
	}
	if s, ok := tmStep(fc); ok {
		steps = append(steps, s)
	}
	if len(steps) == 0 && c.ClientVersion != coordination.ClientVersion2X {
		return nil // a 3.x fleet with nothing to migrate: nothing to say
	}
	f := Finding{ID: FindKCL3Migration, Severity: SeverityInfo,
		Cause: "KCL 3.x moves a fleet in steps the leader takes when every worker is ready: the client version (cv, 2.x → 3.x) and, from KCL 3.5, the table migration (tm, side tables → lease table)",
		Fix:   "nothing",
	}
	blocked, overdue := 0, false
	var workers, next []string
	for _, s := range steps {
		line := "next: " + s.name
		if s.note != "" {
			line += "; " + s.note
		}
		lines = append(lines, line)
		for _, b := range s.blockers {
			lines = append(lines, "  blocked by "+b)
		}
		blocked += len(s.blockers)
		overdue = overdue || s.overdue
		workers = append(workers, s.workers...)
		next = append(next, s.name)
	}
	slices.Sort(workers)
	workers = slices.Compact(workers)
	f.Evidence = Evidence{Lines: lines, Workers: workers, Values: map[string]float64{"blockers": float64(blocked)}}
	switch {
	case len(steps) == 0:
		f.Summary = fmt.Sprintf("KCL 3.x migration: cv %s, rolled back to the 2.x protocol; no step pending", c.ClientVersion)
	case blocked == 0:
		f.Summary = fmt.Sprintf("KCL 3.x migration: next %s; nothing blocks it", strings.Join(next, "; "))
	default:
		f.Summary = fmt.Sprintf("KCL 3.x migration: next %s; %s blocks it", strings.Join(next, "; "), plural(blocked, "condition"))
		f.Fix = "make every lease owner report fresh worker metrics (a worker without them is dead, or not a 3.x worker: restart or upgrade it), wait for the index to become ACTIVE, and deploy the migration's configuration to every worker; docs/doctor.md, kcl3-migration"
		if overdue {
			f.Severity = SeverityWarn
			f.Cause = "the leader has been waiting longer than the KCL's own wait for this step; the blockers below are what holds it: " + f.Cause
		}
	}
	return []Finding{f}
}

// cvStep is the client-version step: under CLIENT_VERSION_UPGRADE_FROM_2X
// the leader flips cv to 3X_WITH_ROLLBACK once the index is ACTIVE and
// every lease owner has fresh worker metrics, steadily for 10 minutes
// (MigrationReadyMonitor.isReadyForUpgradeTo3x).
func cvStep(fc *facts) (migrationStep, bool) {
	c := fc.kcl3.coord
	switch c.ClientVersion {
	case coordination.ClientVersionUpgradeFrom2X:
	case coordination.ClientVersion3XWithRollback:
		return migrationStep{name: "cv " + c.ClientVersion + " → " + coordination.ClientVersion3X, note: "the operator's step (the KCL migration script's rollforward); the leader does not take it"}, true
	default:
		return migrationStep{}, false
	}
	s := migrationStep{name: "cv " + c.ClientVersion + " → " + coordination.ClientVersion3XWithRollback,
		note: fmt.Sprintf("the leader checks every %s and flips once ready for %s", cvMonitorInterval, cvStabilization)}
	if c.Index != "ACTIVE" {
		s.blockers = append(s.blockers, "index LeaseOwnerToLeaseKeyIndex "+orNone(c.Index)+", not ACTIVE")
	}
	// Every owner of any lease, expired or not (leaseRefresher.listLeases);
	// an unassigned lease counts too: its null owner is in the owner set,
	// and no worker-metrics item answers for it.
	fresh := freshWorkers(fc, "")
	owners, unassigned := map[string]int{}, 0
	for _, l := range fc.last.leases {
		if l.LeaseOwner == "" {
			unassigned++
			continue
		}
		owners[l.LeaseOwner]++
	}
	for _, w := range slices.Sorted(maps.Keys(owners)) {
		if !fresh[w] {
			s.blockers = append(s.blockers, fmt.Sprintf("%s: owns %s, no worker metrics newer than %s", w, plural(owners[w], "lease"), workerMetricsFreshness))
			s.workers = append(s.workers, w)
		}
	}
	if unassigned > 0 {
		s.blockers = append(s.blockers, fmt.Sprintf("%s without an owner (the monitor counts the missing owner as a worker without metrics)", plural(unassigned, "lease")))
	}
	s.overdue = len(s.blockers) > 0 && !c.ClientVersionAt.IsZero() && fc.now.Sub(c.ClientVersionAt) > cvMonitorInterval+cvStabilization
	return s, true
}

// tmStep is the table-migration step of KCL 3.5
// (TableMigrationStateMachineImpl.handleLeaderLockResult); none when the
// application has no side tables and no tm, or tm is COMPLETE.
func tmStep(fc *facts) (migrationStep, bool) {
	st := fc.kcl3
	tm := st.coord.TableMigration
	if tmIs(tm, tmComplete) || (tm == "" && !st.coord.SideTables) {
		return migrationStep{}, false
	}
	since := time.Duration(0)
	if !st.tmAt.IsZero() {
		since = fc.now.Sub(st.tmAt)
	}
	owners := unexpiredOwners(fc)
	switch {
	case tm == "" || tmIs(tm, tmInit):
		// handleInitState: every owner of an unexpired lease reports the
		// support code SINGLE_TABLE_MIGRATION (sup = 1) with a fresh slu
		// (isMinSupportCodeMet); then INIT is written, and DEPLOYED after
		// a bake of 1h.
		s := migrationStep{name: "tm " + orNone(tm) + " → " + tmDeployed,
			note: "once every lease owner reports sup = 1, the leader writes INIT and, an hour later (the bake), DEPLOYED"}
		have := map[string]coordination.WorkerMetrics{}
		for _, m := range st.metrics {
			have[m.WorkerID] = m
		}
		for _, w := range owners {
			m, ok := have[w]
			switch {
			case !ok:
				s.blockers = append(s.blockers, w+": owns leases, no worker-metrics item (no support code)")
			case !m.SupportsMigration:
				s.blockers = append(s.blockers, w+": sup is not 1 (a KCL before 3.5 or a worker that does not follow the table migration)")
			case m.SupportsMigrationAt.IsZero() || fc.now.Sub(m.SupportsMigrationAt) > supportCodeFreshness:
				s.blockers = append(s.blockers, fmt.Sprintf("%s: sup = 1 but slu older than %s", w, supportCodeFreshness))
			default:
				continue
			}
			s.workers = append(s.workers, w)
		}
		s.overdue = len(s.blockers) > 0 && tmIs(tm, tmInit) && since > tmDeployedBake
		return s, true
	case tmIs(tm, tmDeployed):
		// handlePendingState with DDB = DEPLOYED, run by a leader deployed
		// with migrateAllEntitiesToLeaseTable = true: it moves the
		// coordinator state once no worker reports to the side table and
		// every lease owner reports fresh metrics (isLegacyWorkerMetricsEmpty).
		s := migrationStep{name: "tm " + tmDeployed + " → " + tmPending,
			note: "the operator's step first: deploy migrateAllEntitiesToLeaseTable = true to every worker; DEPLOYED is a steady state until then"}
		s.blockers, s.workers = legacyBlockers(fc, owners)
		return s, true
	case tmIs(tm, tmPending):
		// handlePendingState with DDB = PENDING: a side table in use again
		// makes the leader write DEPLOYED back (a rollback); otherwise
		// COMPLETE after tableMigrationCompleteBakeTimeSeconds.
		s := migrationStep{name: "tm " + tmPending + " → " + tmComplete,
			note: "after the bake time since PENDING was written (tableMigrationCompleteBakeTimeSeconds: 1 day by default, 1h to 7 days)"}
		s.blockers, s.workers = legacyBlockers(fc, owners)
		for _, k := range st.legacyCoordKeys {
			s.blockers = append(s.blockers, fmt.Sprintf("%s still holds %q (only the lock and TableMigration3.5 may stay)", coordination.DefaultTables(fc.opt.Table, fc.opt.App).CoordinatorState, k))
		}
		if len(s.blockers) > 0 {
			s.note = "the leader writes DEPLOYED back at its next run (a rollback): a worker still uses the side tables"
		}
		// The leader acts on these at its next run, not after a wait: seen
		// at all, they are a rollback under way, or no leader runs.
		s.overdue = len(s.blockers) > 0
		return s, true
	}
	return migrationStep{}, false
}

// legacyBlockers are TableMigrationStateMachineImpl.isLegacyWorkerMetricsEmpty's
// conditions: every owner of an unexpired lease has fresh metrics (in
// either table), and no worker has fresh metrics in the side table.
func legacyBlockers(fc *facts, owners []string) (blockers, workers []string) {
	fresh := freshWorkers(fc, "")
	for _, w := range owners {
		if !fresh[w] {
			blockers = append(blockers, fmt.Sprintf("%s: owns leases, no worker metrics newer than %s", w, workerMetricsFreshness))
			workers = append(workers, w)
		}
	}
	side := coordination.DefaultTables(fc.opt.Table, fc.opt.App).WorkerMetrics
	for _, w := range slices.Sorted(maps.Keys(freshWorkers(fc, side))) {
		blockers = append(blockers, fmt.Sprintf("%s: reports its worker metrics to %s (migrateAllEntitiesToLeaseTable is not true there)", w, side))
		workers = append(workers, w)
	}
	return blockers, workers
}

// freshWorkers are the workers with fresh metrics, read in table (any
// table when "").
func freshWorkers(fc *facts, table string) map[string]bool {
	out := map[string]bool{}
	for _, m := range fc.kcl3.metrics {
		if metricsFresh(m, fc.now) && (table == "" || m.Table == table) {
			out[m.WorkerID] = true
		}
	}
	return out
}

// unexpiredOwners are the owners of leases neither expired nor unassigned
// (Lease.isExpiredOrUnassigned), as the last read shows them.
func unexpiredOwners(fc *facts) []string {
	set := map[string]bool{}
	for _, r := range fc.rows {
		if r.LeaseOwner != "" && r.State != inspect.StateExpired {
			set[r.LeaseOwner] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
