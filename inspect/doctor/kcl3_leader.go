package doctor

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kcltool/kcltool/coordination"
)

// checkKCL3 reports the leader, stale worker metrics, handoffs and the
// migration state.
func checkKCL3(fc *facts) (out []Finding) {
	out = append(out, checkHandoffs(fc)...)
	if !fc.kcl3.present {
		return
	}
	out = append(out, checkLeader(fc)...)
	out = append(out, checkWorkerMetrics(fc)...)
	out = append(out, checkMigration(fc)...)
	return
}

// lockWhere names the table the lock was read in.
func (st kcl3State) lockWhere() string {
	if st.lockTable != "" {
		return st.lockTable
	}
	return "the lease table"
}

func checkLeader(fc *facts) (out []Finding) {
	st := fc.kcl3
	where := st.lockWhere()
	if st.leader == "" {
		if st.coord.ClientVersion == coordination.ClientVersion3X || st.coord.ClientVersion == coordination.ClientVersion3XWithRollback || len(st.metrics) > 0 {
			if st.lockTable == "" {
				where = lockPlace(fc)
			}
			out = append(out, Finding{
				ID: FindLeaderMissing, Severity: SeverityWarn,
				Summary:  "no KCL 3.x leader lock in " + where + ": nobody assigns leases",
				Evidence: Evidence{Lines: []string{fmt.Sprintf("client version %q, %s", st.coord.ClientVersion, plural(len(st.metrics), "worker-metrics item"))}},
				Cause:    "no worker holds the leader lock: the workers are down, or the last leader released it and no worker has acquired it yet (each checks every 30s)",
				Fix:      "check that the workers run and can write the lease table; a live fleet elects a leader within a heartbeat period",
			})
		}
		return
	}
	f := Finding{
		ID: FindLeader, Severity: SeverityInfo,
		Summary:  fmt.Sprintf("KCL 3.x leader: %s (lock in %s)", st.leader, where),
		Evidence: Evidence{Workers: []string{st.leader}, Lines: []string{fmt.Sprintf("client version %q", st.coord.ClientVersion)}},
		Cause:    "the leader runs lease assignment and balancing for the whole fleet",
		Fix:      "nothing",
	}
	alive := false
	if o := fc.view.owners[st.leader]; o != nil && o.alive() {
		alive = true
	}
	for _, m := range st.metrics {
		if m.WorkerID == st.leader && metricsFresh(m, fc.now) {
			alive = true
		}
	}
	unchanged := st.leaderUnchanged
	switch {
	case unchanged > st.lockDuration():
		// Issue #1803 (KCL 3.x with DynamoDB lock client 1.4.0):
		// DynamoDBLockBasedLeaderDecider.isLeader tries to take the lock
		// only when getLock returns none or an expired one, and a lock read
		// by getLock is never expired (its lookup time is the read's), so a
		// leader that died holding the lock is never replaced, restarts
		// included. Only a heartbeat changes recordVersionNumber: unchanged
		// for longer than leaseDuration, no holder is alive by the lock
		// client's own rule.
		f.ID, f.Severity = FindLeaderStale, SeverityCritical
		f.Summary = fmt.Sprintf("KCL 3.x leader lock held by %s has not been renewed for %s, longer than its leaseDuration %s: no live leader, and KCL workers will not take it over (KCL issue #1803)", st.leader, roundDur(unchanged), roundDur(st.lockDuration()))
		f.Cause = "the leader died holding the lock (kill -9, OOM kill, host loss). The lock has no timestamp: a contender must watch its version for leaseDuration, and the KCL's leader decider (DynamoDB lock client 1.4.0) never does, so no worker ever takes it and nothing is assigned or rebalanced, even after the fleet restarts"
		f.Fix = fmt.Sprintf("delete the Leader item, conditioned on the version doctor saw, so that a worker can take it at its next check (30s): aws dynamodb delete-item --table-name %s --key '%s' --condition-expression 'recordVersionNumber = :v' --expression-attribute-values '{\":v\":{\"S\":\"%s\"}}'. It is safe: the lock client heartbeats and releases only under the condition that recordVersionNumber and ownerName are unchanged, so a holder that was in fact alive loses the lock at its next heartbeat instead of sharing it, and the condition fails if it heartbeat meanwhile. Restarting the fleet alone does not help (the item survives)", where, leaderKeyJSON(fc), st.leaderVersion)
	case unchanged >= 2*leaderHeartbeat:
		f.ID, f.Severity = FindLeaderStale, SeverityWarn
		f.Summary = fmt.Sprintf("KCL 3.x leader lock held by %s has not been renewed for %s (heartbeats every %s)", st.leader, roundDur(unchanged), leaderHeartbeat)
		f.Cause = fmt.Sprintf("the leader stopped heartbeating: it is dead or stalled; once the version has not moved for the lock's leaseDuration (%s) no live leader holds it, and KCL 3.x workers do not take it over by themselves (KCL issue #1803)", roundDur(st.lockDuration()))
		f.Fix = fmt.Sprintf("restart the leader's worker if it hangs; if the version stays unchanged past %s, delete the Leader item as the critical leader-stale finding says (docs/doctor.md); a longer --window or --watch shows it", roundDur(st.lockDuration()))
	case !alive:
		f.ID, f.Severity = FindLeaderStale, SeverityWarn
		f.Summary = fmt.Sprintf("KCL 3.x leader %s renews no lease and has no fresh worker metrics", st.leader)
		f.Cause = "the leader looks gone; if its lock's version stops changing too, no worker takes it over (KCL issue #1803)"
		f.Fix = "check the leader's worker; restart it if it hangs"
	}
	if unchanged > 0 {
		f.Evidence.Lines = append(f.Evidence.Lines, fmt.Sprintf("recordVersionNumber %s unchanged for %s (lock leaseDuration %s)", st.leaderVersion, roundDur(unchanged), roundDur(st.lockDuration())))
		f.Evidence.Values = map[string]float64{"lockUnchangedMillis": float64(unchanged.Milliseconds()), "lockLeaseDurationMillis": float64(st.lockDuration().Milliseconds())}
	}
	out = append(out, f)
	return
}

// lockPlace is where the KCL keeps the lock for the detected layout.
func lockPlace(fc *facts) string {
	switch fc.kcl3.coord.Layout {
	case coordination.LayoutSideTables, coordination.LayoutPending:
		return coordination.DefaultTables(fc.opt.Table, fc.opt.App).CoordinatorState
	}
	return "the lease table"
}

// leaderKeyJSON is the lock item's key for the aws CLI: "key" in the side
// table, "leaseKey" in the lease table.
func leaderKeyJSON(fc *facts) string {
	if fc.kcl3.lockTable != "" && fc.kcl3.lockTable != fc.opt.Table {
		return `{"key":{"S":"Leader"}}`
	}
	return `{"leaseKey":{"S":"Leader"}}`
}

// lockDuration is the lock's leaseDuration, the KCL's default when unreadable.
func (st kcl3State) lockDuration() time.Duration {
	if st.leaderLease > 0 {
		return st.leaderLease
	}
	return 2 * time.Minute
}

// metricsFresh is the leader's test of an active worker
// (WorkerMetricStats.isExpired with 2 × the 30s reporting period).
func metricsFresh(m coordination.WorkerMetrics, now time.Time) bool {
	return !m.LastUpdate.IsZero() && now.Sub(m.LastUpdate) <= workerMetricsFreshness
}

// checkWorkerMetrics finds workers the 3.x leader treats as inactive: a
// worker-metrics item older than 60s, or none at all for a worker holding
// leases. The leader assigns them nothing new. kcltool workers write the
// same items as Java ones, and are judged alike.
func checkWorkerMetrics(fc *facts) (out []Finding) {
	have := map[string]coordination.WorkerMetrics{}
	for _, m := range fc.kcl3.metrics {
		have[m.WorkerID] = m
	}
	held := map[string]int{}
	for _, l := range fc.last.leases {
		if o := actualOwner(l); o != "" {
			held[o]++
		}
	}
	sev := SeverityInfo
	var lines, workers []string
	for _, name := range slices.Sorted(maps.Keys(have)) {
		m := have[name]
		age := fc.now.Sub(m.LastUpdate)
		if metricsFresh(m, fc.now) {
			continue
		}
		workers = append(workers, name)
		line := fmt.Sprintf("%s: last update %s ago", name, roundDur(age))
		if m.LastUpdate.IsZero() {
			line = name + ": no last-update time (lut)"
		}
		if held[name] > 0 {
			sev = SeverityWarn
			line += fmt.Sprintf(", holds %s", plural(held[name], "lease"))
		}
		lines = append(lines, line)
	}
	if len(fc.kcl3.metrics) > 0 {
		for _, name := range slices.Sorted(maps.Keys(held)) {
			if _, ok := have[name]; !ok {
				sev = SeverityWarn
				workers = append(workers, name)
				lines = append(lines, fmt.Sprintf("%s: holds %s but has no worker-metrics item", name, plural(held[name], "lease")))
			}
		}
	}
	if len(lines) == 0 {
		return
	}
	out = append(out, Finding{
		ID: FindStaleMetrics, Severity: sev,
		Summary:  fmt.Sprintf("%s without fresh KCL 3.x worker metrics (older than %s): %s", plural(len(workers), "worker"), workerMetricsFreshness, listShort(workers)),
		Evidence: Evidence{Lines: lines, Workers: workers, Values: map[string]float64{"staleWorkers": float64(len(workers))}},
		Cause:    "the leader only assigns to workers whose worker-metrics item is fresh; a worker that stopped reporting (dead, or its reporter fails) gets no new leases, and a non-3.x worker in the fleet (for example a 2.x-protocol consumer) never has one",
		Fix:      "restart workers that stopped reporting; do not mix 2.x-protocol workers into a 3.x fleet; items of workers gone for good are deleted by the leader after a day",
	})
	return
}
