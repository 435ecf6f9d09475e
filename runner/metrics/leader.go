package metrics

import (
	"sync"
	"time"
)

// LeaderStats are a worker's figures of the KCL 3.x leadership (issue 26,
// point 7): the runner's leader side keeps them, the Prometheus endpoint
// reads them.
type LeaderStats struct {
	// Leader: this worker leads now.
	Leader bool
	// Terms counts the leaderships begun; Changes counts begins and ends.
	Terms, Changes int64
	// Runs and RunFailures count assignment runs, and those that failed.
	Runs, RunFailures int64
	// Assigned and HandedOff count the moves written (assignLease,
	// initiateGracefulLeaseHandoff); Reassigned the moves step 2 decided
	// (the KCL's NumOfLeasesReassignment); FailedAssignments the writes
	// whose condition failed (FailedAssignmentCount).
	Assigned, HandedOff, Reassigned, FailedAssignments int64
	// Expired, Leases and Active are what the last run saw.
	Expired, Leases, Active int
	// LastRun is the last run's duration, RunSeconds the sum of all.
	LastRun    time.Duration
	RunSeconds float64
	// GiveUps counts leaderships given up after failed runs.
	GiveUps int64
}

// AssignmentRun is one run as the KCL's LeaseAssignmentManager publishes
// it to CloudWatch (Operation "LeaseAssignmentManager").
type AssignmentRun struct {
	Leases, Active, Expired, Spillover, FailedAssignments int
	// Reassigned is set when step 2 ran (NumOfLeasesReassignment is
	// published only then).
	Reassigned int
	Rebalanced bool
	Success    bool
	Duration   time.Duration
}

// handoffBuckets bound the handoff histogram, in seconds: a handler that
// finishes at once to the KCL's default 30 s timeout and beyond.
var handoffBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60}

// leaderMetrics holds the leadership's sources, bound by the runner.
type leaderMetrics struct {
	mu       sync.Mutex
	stats    func() LeaderStats
	handoffs *histogram
	timedOut int64
}

// BindLeader gives the leader side's counters.
func (m *Metrics) BindLeader(stats func() LeaderStats) {
	m.leader.mu.Lock()
	defer m.leader.mu.Unlock()
	m.leader.stats = stats
}

// HandedOver records a graceful handoff away from this worker: from the
// leader's request to the lease transferred; timedOut when the handler
// was stopped at the handoff timeout.
func (m *Metrics) HandedOver(d time.Duration, timedOut bool) {
	m.leader.mu.Lock()
	if m.leader.handoffs == nil {
		m.leader.handoffs = newHistogram(handoffBuckets)
	}
	h := m.leader.handoffs
	if timedOut {
		m.leader.timedOut++
	}
	m.leader.mu.Unlock()
	h.observe(d.Seconds())
}

// leaderSnapshot is what WritePrometheus writes.
func (m *Metrics) leaderSnapshot() (st LeaderStats, bound bool, handoffs *histogram, timedOut int64) {
	m.leader.mu.Lock()
	fn := m.leader.stats
	handoffs, timedOut = m.leader.handoffs, m.leader.timedOut
	m.leader.mu.Unlock()
	if fn != nil {
		st, bound = fn(), true
	}
	return st, bound, handoffs, timedOut
}

// writeLeader writes the leadership's families.
func (p *promWriter) writeLeader(m *Metrics, wl []string) {
	st, bound, handoffs, timedOut := m.leaderSnapshot()
	if bound {
		leader := 0.0
		if st.Leader {
			leader = 1
		}
		p.single("kcltool_leader_is_leader", "gauge", "1 while this worker leads the KCL 3.x fleet (holds the Leader lock), else 0.", wl, leader)
		p.single("kcltool_leader_changes_total", "counter", "Times this worker became leader or stopped being leader.", wl, float64(st.Changes))
		p.single("kcltool_leader_assignment_runs_total", "counter", "Lease assignment runs done as leader.", wl, float64(st.Runs))
		p.single("kcltool_leader_assignment_run_failures_total", "counter", "Lease assignment runs that failed.", wl, float64(st.RunFailures))
		p.single("kcltool_leader_assignment_run_seconds_total", "counter", "Time spent in lease assignment runs.", wl, st.RunSeconds)
		p.single("kcltool_leader_giveups_total", "counter", "Leaderships given up after three failed runs in a row (the KCL's ForceLeaderRelease).", wl, float64(st.GiveUps))
		const moved = "kcltool_leader_leases_moved_total"
		p.family(moved, "counter", "Leases the leader gave to a worker: how=assign (assignLease: unowned, expired, or a handoff that timed out), how=handoff (initiateGracefulLeaseHandoff of a live lease).")
		p.sample(moved, append(append([]string{}, wl...), "how", "assign"), float64(st.Assigned))
		p.sample(moved, append(append([]string{}, wl...), "how", "handoff"), float64(st.HandedOff))
		p.single("kcltool_leader_leases_reassigned_total", "counter", "Moves decided by rebalancing (the KCL's NumOfLeasesReassignment).", wl, float64(st.Reassigned))
		p.single("kcltool_leader_failed_assignments_total", "counter", "Assignment writes whose condition failed: the lease changed since the scan (the KCL's FailedAssignmentCount).", wl, float64(st.FailedAssignments))
		p.single("kcltool_leader_expired_leases", "gauge", "Expired or unassigned leases the leader's last run saw (the KCL's ExpiredLeases).", wl, float64(st.Expired))
	}
	const hist = "kcltool_worker_handoff_seconds"
	p.family(hist, "histogram", "Graceful handoffs away from this worker: from the leader's request to the lease transferred to its next owner.")
	h := handoffs
	if h == nil {
		h = newHistogram(handoffBuckets)
	}
	writeHistogram(p, hist, wl, h, handoffBuckets)
	p.single("kcltool_worker_handoff_timeouts_total", "counter", "Graceful handoffs whose handler was stopped at the handoff timeout (its batch is handled again by the next owner).", wl, float64(timedOut))
}

// opLeaseAssignmentManager is the KCL's Operation of the leader's run.
const opLeaseAssignmentManager = "LeaseAssignmentManager"

// AssignmentRun adds one assignment run under the KCL's names
// (LeaseAssignmentManager.performAssignment and
// publishLeaseAndWorkerCountMetrics): TotalLeases, NumWorkers,
// ExpiredLeases, LeaseSpillover when some could not be placed,
// NumOfLeasesReassignment when step 2 ran, FailedAssignmentCount, Success
// and Time. The KCL gives them the Operation dimension only.
func (p *CloudWatch) AssignmentRun(r AssignmentRun) {
	if p == nil {
		return
	}
	k := func(name, unit string) cwKey { return cwKey{op: opLeaseAssignmentManager, name: name, unit: unit} }
	success := 0.0
	if r.Success {
		success = 1
		p.observe(k("TotalLeases", unitCount), float64(r.Leases))
		p.observe(k("NumWorkers", unitCount), float64(r.Active))
		p.observe(k("ExpiredLeases", unitCount), float64(r.Expired))
		if r.Spillover > 0 {
			p.observe(k("LeaseSpillover", unitCount), float64(r.Spillover))
		}
		if r.Rebalanced {
			p.observe(k("NumOfLeasesReassignment", unitCount), float64(r.Reassigned))
		}
		p.observe(k("FailedAssignmentCount", unitCount), float64(r.FailedAssignments))
	}
	p.observe(k("Success", unitCount), success)
	p.observe(k("Time", unitMillis), float64(r.Duration.Milliseconds()))
}

// ForceLeaderRelease adds the KCL's ForceLeaderRelease: the leader gave
// its lock up after failed runs.
func (p *CloudWatch) ForceLeaderRelease() {
	if p == nil {
		return
	}
	p.observe(cwKey{op: opLeaseAssignmentManager, name: "ForceLeaderRelease", unit: unitCount}, 1)
}
