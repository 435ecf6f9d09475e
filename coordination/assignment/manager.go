// Package assignment is the KCL 3.x leader's lease assignment: a port of
// KCL 3.5.1's LeaseAssignmentManager, its deciders
// (VarianceBasedLeaseAssignmentDecider, LeaseCountBasedLeaseAssignmentDecider)
// and MigrationAwareLAMDataManager (issue 26, point 2).
//
// One run (RunOnce), on the leader only:
//
//   - reads: one full scan of the lease table in parallel segments
//     (LeaseTableScanSegmentResolver), paced at Config.ScanRate, which
//     yields both the leases and the lease table's metrics items; until the
//     table migration is COMPLETE, also a scan of <app>-WorkerMetricStats;
//   - active workers: a valid metrics item at most 2 report periods old,
//     no metric failing;
//   - step 1, every run: expired leases (counter unchanged for longer than
//     the failover time, as this leader saw it across runs) and leases
//     with no actual owner go to the workers with the most room;
//   - step 2, every VarianceBalancingFrequency-th run, the first run of a
//     leadership included: rebalancing (variance.go, leasecount.go);
//   - writes: leasecore.AssignLease3 for unassigned and expired leases
//     and handoffs that timed out, leasecore.InitiateHandoff3 for live
//     ones, in parallel; nothing else is written.
//
// Where kcltool differs from the KCL (each said where it is done):
//
//   - when no lease has a throughput yet, every lease weighs 1 KBps
//     (view.go) where the KCL divides 0 by 0; ties between workers go to
//     the one with the fewest leases (queue.go);
//   - on the synthetic throughput metric of workers without CPU data,
//     the ±reBalanceThresholdPercentage band holds (a worker above the
//     average is not "above its operating range" of 100 for the trigger),
//     the excess is taken undampened and to the nearest lease
//     (variance.go), so that such a fleet stops moving once balanced;
//   - a new leader can judge expiry sooner: Observe takes counters seen
//     before the first run, and Result.NextRunIn asks for the second run
//     after the failover time rather than a whole interval (see Observe);
//   - metrics items are deduplicated per worker (the newest lut), where
//     the KCL's list may hold one worker twice during a table migration;
//   - stale metrics items are not deleted (the KCL deletes those older
//     than staleWorkerMetricsEntryCleanupDuration): the leader's only
//     writes are the two lease writes.
package assignment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/leasecore"
)

// ErrGiveUpLeadership: the run failed three times in a row (the KCL's
// DEFAULT_FAILURE_COUNT_TO_SWITCH_LEADER); the caller releases the lock so
// that another worker may lead, as LeaseAssignmentManager does with
// leaderDecider.releaseLeadershipIfHeld.
var ErrGiveUpLeadership = errors.New("lease assignment failed repeatedly: give up leadership")

// Move is one write of a run.
type Move struct {
	Key, From, To string
	Graceful      bool // initiateGracefulLeaseHandoff, else assignLease
	// Done: the write's condition held. A write whose condition failed
	// (the item changed since the scan) has neither Done nor Err, as the
	// KCL counts it in FailedAssignmentCount only.
	Done bool
	Err  error
}

// Result is what one run saw and wrote.
type Result struct {
	// Leases is TotalLeases, Active NumWorkers, Expired ExpiredLeases
	// (expired or unassigned), in the KCL's metric names.
	Leases, Active, Expired int
	Moves                   []Move
	// Rebalanced: step 2 ran in this run.
	Rebalanced bool
	// Reassigned is NumOfLeasesReassignment: moves step 2 decided.
	Reassigned int
	// Spillover is LeaseSpillover: expired or unassigned leases no worker
	// could take.
	Spillover int
	// Assigned and HandedOff count the writes that succeeded;
	// FailedAssignments (FailedAssignmentCount) those whose condition
	// failed; Blocked the moves not written because the lease waits on a
	// pending handoff.
	Assigned, HandedOff, FailedAssignments, Blocked int
	// Duration is the run's time; ScanReadUnits what its scans cost.
	Duration      time.Duration
	ScanReadUnits float64
	// NextRunIn is when the next run should come: the assignment
	// interval, or the failover time (plus a second) when this run met
	// leases it saw for the first time with an owner, which it could not
	// judge yet (see Observe).
	NextRunIn time.Duration
	// Failures is the count of failed runs in a row, this one included.
	Failures int
}

// Manager runs the assignment on the leader. It is not safe for
// concurrent use: one run at a time.
type Manager struct {
	api   coordination.WriteAPI
	t     coordination.Tables
	cfg   Config
	clock clock.Clock
	log   *slog.Logger
	rnd   *rand.Rand

	// prev is prevRunLeasesState: each lease as the last run (or Observe)
	// saw it.
	prev     map[string]seenLease
	runs     int // lamRunCounter
	failures int // noOfContinuousFailedAttempts
	segments segmentCache
	// departed are workers known dead (Departed) and when they were last
	// seen alive.
	departed map[string]time.Time
}

// seenLease is what the leader keeps of a lease between runs.
type seenLease struct {
	counter         int64
	lastMove        time.Time
	owner, cpOwner  string
	handoffDeadline time.Time // checkpointOwnerTimeoutTimestampMillis
}

// NewManager makes the leader's assignment for the application's tables.
func NewManager(api coordination.WriteAPI, t coordination.Tables, cfg Config, clk clock.Clock, log *slog.Logger) *Manager {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Manager{
		api: api, t: t, cfg: cfg.WithDefaults(), clock: clk, log: log,
		// The order in which an overloaded worker's leases are
		// considered is random, as the KCL's shuffle; seeded, so that
		// a run is reproducible.
		rnd:  rand.New(rand.NewPCG(26, 2)),
		prev: map[string]seenLease{},
	}
}

// Config is the configuration in force, defaults filled in.
func (m *Manager) Config() Config { return m.cfg }

// Reset forgets what earlier runs saw: called when leadership is lost. It
// is the KCL's prepareAfterLeaderSwitch (and lamRunCounter = 0), done at
// the loss rather than at the next takeover, so that counters given to
// Observe before the next leadership's first run are kept.
func (m *Manager) Reset() {
	m.prev = map[string]seenLease{}
	m.runs, m.failures = 0, 0
	m.departed = nil
}

// Departed marks worker as dead since lastSeen: it is not counted active,
// whatever its metrics item says, until that item is written again after
// lastSeen. The runner calls it for the previous leader when it takes a
// stale lock over: that worker stopped heartbeating at least a lock lease
// ago. Without it a kill -9 of the leader leaves the dead worker active
// for up to 60 s more (its last metrics item is that fresh), and the
// decider keeps counting it in the fleet's average and giving some of
// its own expired leases back to it (a deviation from the KCL, whose new
// leader knows nothing of its predecessor).
func (m *Manager) Departed(worker string, lastSeen time.Time) {
	if worker == "" {
		return
	}
	if m.departed == nil {
		m.departed = map[string]time.Time{}
	}
	m.departed[worker] = lastSeen
}

// withoutDeparted drops the metrics items of departed workers not written
// since they were last seen alive; a newer item brings the worker back.
func (m *Manager) withoutDeparted(metrics []coordination.WorkerMetrics) []coordination.WorkerMetrics {
	if len(m.departed) == 0 {
		return metrics
	}
	out := metrics[:0:0]
	for _, wm := range metrics {
		if at, ok := m.departed[wm.WorkerID]; ok {
			if !wm.LastUpdate.After(at) {
				continue
			}
			delete(m.departed, wm.WorkerID)
		}
		out = append(out, wm)
	}
	return out
}

// Observe records leases as seen at time at, by this worker before it led
// (issue 26, point 1: "a new leader may judge expiry from counters it
// already saw while it was a follower"). A KCL 3.x follower reads only its
// own leases, so kcltool's followers have few counters to give; a worker
// that contends for a stale lock may scan once when it first sees the lock
// stale and pass the leases here: then its first run as leader judges
// expiry at once, where the KCL's new leader needs a second run, one
// interval later. The rule is the KCL's (counter unchanged for longer than
// the failover time), only started earlier; counters only grow, so an
// unchanged counter seen at two times was not renewed in between.
//
// Without Observe, kcltool still shortens the wait: a run that meets
// leases it sees for the first time with an owner asks, in
// Result.NextRunIn, for the next run one failover time (plus a second)
// later instead of a whole interval.
func (m *Manager) Observe(leases []leasecore.Lease, at time.Time) {
	for _, l := range leases {
		p, ok := m.prev[l.LeaseKey]
		if ok && (p.counter == l.LeaseCounter || !at.After(p.lastMove)) {
			continue
		}
		s := seenLease{counter: l.LeaseCounter, owner: l.LeaseOwner, cpOwner: l.CheckpointOwner}
		if l.ActualOwner() != "" {
			s.lastMove = at
		}
		m.prev[l.LeaseKey] = s
	}
}

// RunOnce is one assignment run (performAssignment) under state st. The
// caller runs it only while it holds the leader lock. An error that ends a
// run counts towards giving up; the third in a row wraps
// ErrGiveUpLeadership. A run cut by ctx (the lock lost, a stop) does not
// count, as the KCL does not count an interrupted run.
func (m *Manager) RunOnce(ctx context.Context, st coordination.State) (Result, error) {
	start := m.clock.Now()
	res, err := m.run(ctx, st)
	res.Duration = m.clock.Now().Sub(start)
	if err == nil {
		m.failures = 0
		return res, nil
	}
	if ctx.Err() != nil {
		return res, err
	}
	m.failures++
	res.Failures = m.failures
	if m.failures >= failuresToGiveUp {
		m.log.Error("lease assignment failed too often in a row, giving up leadership", "failures", m.failures, "err", err)
		return res, fmt.Errorf("%w (%d runs in a row): %w", ErrGiveUpLeadership, m.failures, err)
	}
	return res, err
}

func (m *Manager) run(ctx context.Context, st coordination.State) (Result, error) {
	res := Result{NextRunIn: m.cfg.AssignmentInterval}
	leases, metrics, units, err := m.load(ctx, st)
	res.ScanReadUnits = units
	if err != nil {
		return res, err
	}
	now := m.clock.Now() // leaseTableScanTime
	metrics = m.withoutDeparted(metrics)
	firstSeen := m.track(leases, now)
	if firstSeen {
		res.NextRunIn = min(res.NextRunIn, m.cfg.FailoverTime+time.Second)
	}
	v := newView(leases, metrics, m.cfg, now)
	res.Leases, res.Active = len(leases), len(v.active)

	var expired []*lease
	for _, l := range leases {
		if l.actualOwner() == "" && l.seen.Checkpoint.IsShardEnd() {
			// A finished lease nobody holds needs no worker: it waits for
			// the cleanup that deletes it once its children have
			// started. The KCL assigns it all the same; a kcltool worker
			// given one releases it at once, so each run would write it
			// again (a deviation, as kcltool's 2.x taker makes).
			continue
		}
		if l.lastMove.IsZero() || now.Sub(l.lastMove) > m.cfg.FailoverTime || l.actualOwner() == "" {
			l.expiredOrUnassigned = true
			expired = append(expired, l)
		}
	}
	res.Expired = len(expired)

	var d decider
	if m.cfg.Strategy == ByLeaseCount {
		d = &leaseCount{v: v, cfg: m.cfg, now: now}
	} else {
		d = newVariance(v, m.cfg, m.rnd)
	}
	left := d.assignExpired(expired)
	if len(left) > 0 {
		res.Spillover = len(left)
		m.log.Warn("not every expired or unassigned lease could be assigned", "left", len(left))
	}
	if m.balanceThisRun() {
		before := len(v.order)
		d.balance()
		res.Rebalanced, res.Reassigned = true, len(v.order)-before
	}
	m.write(ctx, v, now, &res)
	for _, mv := range res.Moves {
		if mv.Err != nil {
			return res, fmt.Errorf("assignment writes: %w", mv.Err)
		}
	}
	return res, nil
}

// decider is LeaseAssignmentDecider.
type decider interface {
	assignExpired([]*lease) []*lease
	balance()
}

// balanceThisRun is shouldRunVarianceBalancing: true on the first run of
// a leadership and every VarianceBalancingFrequency-th after.
func (m *Manager) balanceThisRun() bool {
	ok := m.runs == 0
	m.runs = (m.runs + 1) % m.cfg.VarianceBalancingFrequency
	return ok
}

// track is updateLeasesLastCounterIncrementNanosAndLeaseShutdownTimeout:
// a lease first seen with an owner counts as moved now (and is reported,
// firstSeen), without one as never moved; afterwards the time moves when
// the counter does. A handoff seen for the first time, or with other
// owners, gets its deadline: now + the handoff timeout + the failover time
// (getCheckpointOwnerTimeoutTimestampMillis). The KCL compares counters
// with >; kcltool with != (a counter that went down is a lease recreated,
// not one left unrenewed).
func (m *Manager) track(leases []*lease, now time.Time) (firstSeen bool) {
	next := make(map[string]seenLease, len(leases))
	for _, l := range leases {
		p, ok := m.prev[l.seen.LeaseKey]
		s := seenLease{counter: l.seen.LeaseCounter, owner: l.seen.LeaseOwner, cpOwner: l.seen.CheckpointOwner}
		if l.seen.CheckpointOwner != "" {
			if ok && p.cpOwner != "" && p.owner == l.seen.LeaseOwner && p.cpOwner == l.seen.CheckpointOwner && !p.handoffDeadline.IsZero() {
				s.handoffDeadline = p.handoffDeadline
			} else {
				s.handoffDeadline = now.Add(m.cfg.HandoffTimeout + m.cfg.FailoverTime)
			}
		}
		switch {
		case !ok && l.actualOwner() != "":
			s.lastMove = now
			firstSeen = true
		case !ok:
		case l.seen.LeaseCounter != p.counter:
			s.lastMove = now
		default:
			s.lastMove = p.lastMove
		}
		l.lastMove, l.handoffEnd = s.lastMove, s.handoffDeadline
		next[l.seen.LeaseKey] = s
	}
	m.prev = next
	return firstSeen
}
