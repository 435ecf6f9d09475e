package coordination

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

// The rules of the KCL's MigrationReadyMonitor (KCL 3.5.1), the check
// that, under CLIENT_VERSION_UPGRADE_FROM_2X, flips cv to
// CLIENT_VERSION_3X_WITH_ROLLBACK on the fleet's leader. The runner runs
// them (runner/migration_monitor.go); they are pure here so that they can
// be tested with a fake clock.

// MigrationMonitorInterval is MigrationReadyMonitor.MONITOR_INTERVAL_MILLIS:
// the first check a minute after the monitor starts, then a minute after
// each check ends (scheduleWithFixedDelay).
const MigrationMonitorInterval = time.Minute

// MigrationFlipStabilization is flipTo3XStabilizerTimeInSeconds as the
// Scheduler of KCL 3.5.1 hard-codes it (no configuration key).
const MigrationFlipStabilization = 10 * time.Minute

// MigrationMetricsExpiry is the monitor's workerMetricsExpirySeconds:
// DEFAULT_NO_OF_SKIP_STAT_FOR_DEAD_WORKER_THRESHOLD (2) × the reporting
// period, in whole seconds (DynamicMigrationComponentsInitializer).
func MigrationMetricsExpiry(reporterFreq time.Duration) time.Duration {
	return (2 * reporterFreq).Truncate(time.Second)
}

// MigrationMetricsActive is isWorkerMetricStatsActive: lut + expiry >
// now, both in whole seconds.
func MigrationMetricsActive(m WorkerMetrics, now time.Time, expiry time.Duration) bool {
	return !m.LastUpdate.IsZero() && m.LastUpdate.Unix()+int64(expiry/time.Second) > now.Unix()
}

// MigrationReadiness is one check of isReadyForUpgradeTo3x.
type MigrationReadiness struct {
	// Index is LeaseOwnerToLeaseKeyIndex's status ("" when absent).
	Index string
	// Owners are the leases' distinct owners, sorted; Unowned counts the
	// leases without one. Java's owner set holds null for them, which no
	// metrics item answers: an unowned lease holds the flip.
	Owners  []string
	Unowned int
	// WithoutMetrics are the owners without an active metrics item.
	WithoutMetrics []string
	// MetricsChecked: the index was ACTIVE, so the leases and the metrics
	// were read (the monitor skips them otherwise).
	MetricsChecked bool
}

// Ready: the index is ACTIVE and every lease owner has active metrics.
func (r MigrationReadiness) Ready() bool {
	return r.Index == "ACTIVE" && r.MetricsChecked && len(r.WithoutMetrics) == 0 && r.Unowned == 0
}

// Failed names the checks that failed, for the log ("" when ready).
func (r MigrationReadiness) Failed() string {
	var out []string
	if r.Index != "ACTIVE" {
		out = append(out, "index "+leasecore.KCL3IndexName+" is "+orAbsent(r.Index)+", not ACTIVE")
	}
	if len(r.WithoutMetrics) > 0 {
		out = append(out, "lease owners without fresh worker metrics: "+strings.Join(r.WithoutMetrics, ", "))
	}
	if r.Unowned > 0 {
		out = append(out, "leases without an owner (the monitor counts the missing owner as a worker without metrics)")
	}
	return strings.Join(out, "; ")
}

// CheckMigrationReady judges one check from what it read: the index
// status, then (only when ACTIVE, as the monitor skips them otherwise)
// every lease and every worker's metrics. now is the monitor's clock.
func CheckMigrationReady(index string, leases []leasecore.Lease, metrics []WorkerMetrics, now time.Time, expiry time.Duration) MigrationReadiness {
	r := MigrationReadiness{Index: index}
	if index != "ACTIVE" {
		return r
	}
	r.MetricsChecked = true
	active := map[string]bool{}
	for _, m := range metrics {
		if MigrationMetricsActive(m, now, expiry) {
			active[m.WorkerID] = true
		}
	}
	seen := map[string]bool{}
	for _, l := range leases {
		if l.LeaseOwner == "" {
			r.Unowned++
			continue
		}
		if !seen[l.LeaseOwner] {
			seen[l.LeaseOwner] = true
			r.Owners = append(r.Owners, l.LeaseOwner)
		}
	}
	slices.Sort(r.Owners)
	for _, o := range r.Owners {
		if !active[o] {
			r.WithoutMetrics = append(r.WithoutMetrics, o)
		}
	}
	return r
}

// MigrationStabilizer is MonitorTriggerStabilizer: the flip is due once
// the checks have passed continuously for Window; a failed check (or a
// worker that stops leading: Reset) starts the window again.
type MigrationStabilizer struct {
	Window time.Duration
	ready  bool
	since  time.Time
}

// Observe records a check's outcome at now and says whether the flip is
// due, and for how long the checks have passed. The window is judged in
// whole seconds, as the KCL's deltaSeconds >= stabilizationDurationInSeconds.
func (s *MigrationStabilizer) Observe(ready bool, now time.Time) (due bool, held time.Duration) {
	if ready != s.ready {
		s.ready, s.since = ready, now
	}
	if !s.ready {
		return false, 0
	}
	held = now.Sub(s.since)
	return held.Truncate(time.Second) >= s.Window, held
}

// Reset forgets the passing checks (MonitorTriggerStabilizer.reset).
func (s *MigrationStabilizer) Reset() { s.ready = false }

// FlipTo3XWithRollback is the monitor's callback
// (MigrationClientVersionUpgradeFrom2xState.updateDynamoStateForTransition):
// Migration3.0 becomes cv CLIENT_VERSION_3X_WITH_ROLLBACK, mb the worker,
// mts now, the replaced state first in h (MigrationState.update →
// addHistoryEntry). st is the state read (Detect): the write goes where
// Migration3.0 was read and is conditioned on the cv read (the KCL's
// getDynamoClientVersionExpectation) and, as kcltool's other cv writes,
// on its mts: a rollback, or another worker's flip, made since the read
// is never overwritten (ErrMigrationStateChanged).
func FlipTo3XWithRollback(ctx context.Context, api WriteAPI, t Tables, st State, workerID string, now time.Time) error {
	w := MigrationWrite{
		Action: ActionUpdateCV, Table: st.ClientVersionIn, KeyAttr: attrLeaseKey,
		From: st.ClientVersion, FromAt: st.ClientVersionAt, FromBy: st.ClientVersionBy, History: st.ClientVersionHistory,
		To: ClientVersion3XWithRollback, By: workerID,
	}
	if w.Table == "" {
		w.Table = t.Lease
	}
	if w.Table == t.CoordinatorState {
		w.KeyAttr = attrCoordKey
	}
	return writeClientVersion(ctx, api, w, now)
}
