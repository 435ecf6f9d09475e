package runner

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/coordination/assignment"
	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/runner/metrics"
)

// leaderSide is this worker's part in a KCL 3.x fleet's leadership (issue
// 26, points 1 and 2): while the table's state is KCL 3.x (AssignByLeader:
// cv 3X or 3X_WITH_ROLLBACK) every worker contends for the Leader lock at
// the lock's poll interval, as every Java worker's
// DynamoDBLockBasedLeaderDecider does; the one holding it runs the lease
// assignment (assignment.Manager, the KCL's LeaseAssignmentManager) every
// lease assignment interval and the shard-sync audit (leader_audit.go).
// Non-leaders do nothing more. Under the 2.x protocol (a table not
// migrated, UPGRADE_FROM_2X, a rollback to 2X) nobody contends: the KCL's
// workers elect no lock-based leader there either.
//
// A leadership is a term: it begins when Poll first reports the lock held
// and ends when a Poll no longer does (a takeover, heartbeats unconfirmed
// for the lock's validity), when the manager gives up (three failed runs:
// the lock is released, as LeaseAssignmentManager does with
// releaseLeadershipIfHeld), at a rollback out of KCL 3.x, or at the stop.
// Ending a term cancels the run in progress (its writes are conditional,
// the next leader redoes it) and resets the manager
// (prepareAfterLeaderSwitch).
type leaderSide struct {
	w    *Worker
	lock *coordination.LeaderLock
	mgr  *assignment.Manager
	// giveUp carries a term's request to release the lock.
	giveUp chan struct{}
	// quit asks loop to return between two polls; stopped closes when it
	// has. A poll is never cut short by the stop: a heartbeat cancelled in
	// flight may apply unseen, and the release's condition (the version
	// this worker knows) would then fail and leave the lock standing.
	quit, stopped chan struct{}
	quitOnce      sync.Once

	mu      sync.Mutex
	term    *leaderTerm
	lockSt  coordination.State // the state of the last Poll: where the lock is
	stats   LeaderStats
	started bool
}

// leaderTerm is one leadership's assignment goroutine.
type leaderTerm struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// LeaderStats are the leadership's counters (runner/metrics).
type LeaderStats = metrics.LeaderStats

// newLeaderSide makes the worker's leadership side; it writes nothing.
func newLeaderSide(w *Worker) *leaderSide {
	cfg := w.cfg
	lc := cfg.Lease.WithDefaults()
	lease := cfg.KCL3.LeaderLease
	if lease <= 0 {
		lease = 2 * lc.FailoverTime
	}
	lock := coordination.NewLeaderLock(w.leaseDDB, w.kcl3Tables(), coordination.LeaderLockConfig{
		Owner: cfg.WorkerID, LeaseDuration: lease,
	}, w.clock, w.log)
	acfg := cfg.KCL3.Assignment
	acfg.FailoverTime = lc.FailoverTime
	acfg.AssignmentInterval = cfg.KCL3.LeaseAssignmentInterval
	if acfg.AssignmentInterval <= 0 {
		acfg.AssignmentInterval = 2 * lc.FailoverTime
	}
	if acfg.HandoffTimeout <= 0 {
		acfg.HandoffTimeout = cfg.KCL3.HandoffTimeout
	}
	acfg.NoGracefulHandoff = !cfg.KCL3.GracefulHandoff
	if acfg.WorkerMetricsReporterFreq <= 0 {
		acfg.WorkerMetricsReporterFreq = cfg.KCL3.WorkerMetricsInterval
	}
	mgr := assignment.NewManager(w.leaseDDB, w.kcl3Tables(), acfg, w.clock, w.log)
	return &leaderSide{w: w, lock: lock, mgr: mgr, giveUp: make(chan struct{}, 1), quit: make(chan struct{}), stopped: make(chan struct{})}
}

// start runs the election loop until stop or ctx ends.
func (l *leaderSide) start(ctx context.Context) {
	if l.w.cfg.KCL3.NoLeader {
		return
	}
	l.mu.Lock()
	l.started = true
	l.mu.Unlock()
	go l.loop(ctx)
}

// loop polls the lock at its poll interval and begins or ends terms.
func (l *leaderSide) loop(ctx context.Context) {
	defer close(l.stopped)
	defer l.endTerm("stopped")
	for {
		st := l.w.currentMode()
		if st.Assignment == leasecore.AssignByLeader {
			l.poll(ctx, st)
		} else if l.leading() {
			// A rollback to 2.x assignment: no lock-based leader any more.
			l.endTerm("the table left KCL 3.x assignment")
			l.release(ctx)
		}
		t := l.w.clock.NewTimer(l.lock.NextPoll())
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-l.quit:
			t.Stop()
			return
		case <-l.giveUp:
			t.Stop()
			l.endTerm("assignment failed repeatedly")
			l.release(ctx)
			l.count(func(s *LeaderStats) { s.GiveUps++ })
			l.w.cw.ForceLeaderRelease()
		case <-t.C():
		}
	}
}

// poll is one election step; it begins a term at the lock's acquisition
// and ends it at its loss.
func (l *leaderSide) poll(ctx context.Context, st coordination.State) {
	l.mu.Lock()
	l.lockSt = st
	l.mu.Unlock()
	leader, err := l.lock.Poll(ctx, st)
	if err != nil && ctx.Err() == nil && !errors.Is(err, coordination.ErrLockLost) {
		l.w.log.Debug("leader lock poll failed; trying again at the next poll", "err", err)
	}
	switch {
	case ctx.Err() != nil:
	case leader && !l.leading():
		l.beginTerm(ctx)
	case !leader && l.leading():
		l.endTerm("leader lock lost")
	}
}

func (l *leaderSide) leading() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.term != nil
}

// beginTerm starts the assignment goroutine of a new leadership.
func (l *leaderSide) beginTerm(ctx context.Context) {
	tctx, cancel := context.WithCancel(ctx)
	t := &leaderTerm{cancel: cancel, done: make(chan struct{})}
	l.mu.Lock()
	l.term = t
	l.stats.Leader = true
	l.stats.Terms++
	l.stats.Changes++
	l.mu.Unlock()
	// A stale lock taken over: its owner stopped heartbeating a lock lease
	// ago and is most likely dead; its metrics item, still fresh for up
	// to 2 reporter periods, must not count it active (Manager.Departed).
	// Set before the term's first run; Reset at the last term's end
	// cleared the previous one.
	if from, at := l.lock.TookOverFrom(); from != "" {
		l.mgr.Departed(from, at)
		l.w.log.Info("took a stale leader lock over: its owner is counted gone until it writes metrics again", "from", from)
	}
	l.w.log.Info("this worker leads the KCL 3.x fleet: assigning leases", "every", l.mgr.Config().AssignmentInterval,
		"strategy", l.mgr.Config().Strategy.String(), "leaderLease", l.lock.LeaseDuration())
	go func() {
		defer close(t.done)
		l.lead(tctx)
	}()
}

// endTerm drops the run in progress, waits for it, and resets the manager
// so that the next leadership starts afresh (prepareAfterLeaderSwitch).
func (l *leaderSide) endTerm(why string) {
	l.mu.Lock()
	t := l.term
	l.term = nil
	if t != nil {
		l.stats.Leader = false
		l.stats.Changes++
	}
	l.mu.Unlock()
	if t == nil {
		return
	}
	t.cancel()
	<-t.done
	l.mgr.Reset()
	l.w.log.Info("this worker no longer leads the KCL 3.x fleet", "why", why)
}

// lead runs the assignment at once, then every interval (or sooner when
// a run asks: assignment.Result.NextRunIn), while the term lasts.
func (l *leaderSide) lead(ctx context.Context) {
	interval := l.mgr.Config().AssignmentInterval
	var wait time.Duration
	for {
		if clock.Sleep(ctx, l.w.clock, wait) != nil {
			return
		}
		wait = interval
		// Heartbeats unconfirmed for the lock's validity: another worker
		// may lead already; the loop ends the term at its next poll.
		if !l.lock.IsLeader() {
			continue
		}
		st := l.w.currentMode()
		if st.Assignment != leasecore.AssignByLeader {
			continue
		}
		res, err := l.mgr.RunOnce(ctx, st)
		if ctx.Err() != nil {
			return // dropped: the next leader redoes it
		}
		l.record(res, err)
		if errors.Is(err, assignment.ErrGiveUpLeadership) {
			select {
			case l.giveUp <- struct{}{}:
			default:
			}
			return
		}
		if err != nil {
			l.w.log.Warn("lease assignment run failed; trying again at the next interval", "failures", res.Failures, "err", err)
		}
		if res.NextRunIn > 0 && res.NextRunIn < wait {
			wait = res.NextRunIn
		}
	}
}

// record counts a run's outcome.
func (l *leaderSide) record(res assignment.Result, err error) {
	l.count(func(s *LeaderStats) {
		s.Runs++
		if err != nil {
			s.RunFailures++
		}
		s.Assigned += int64(res.Assigned)
		s.HandedOff += int64(res.HandedOff)
		s.Reassigned += int64(res.Reassigned)
		s.FailedAssignments += int64(res.FailedAssignments)
		s.Expired, s.Leases, s.Active = res.Expired, res.Leases, res.Active
		s.LastRun = res.Duration
		s.RunSeconds += res.Duration.Seconds()
	})
	l.w.cw.AssignmentRun(metrics.AssignmentRun{
		Leases: res.Leases, Active: res.Active, Expired: res.Expired, Spillover: res.Spillover,
		FailedAssignments: res.FailedAssignments, Reassigned: res.Reassigned, Rebalanced: res.Rebalanced,
		Success: err == nil, Duration: res.Duration,
	})
	if n := res.Assigned + res.HandedOff; n > 0 {
		l.w.log.Info("lease assignment run", "leases", res.Leases, "activeWorkers", res.Active, "expired", res.Expired,
			"assigned", res.Assigned, "handoffs", res.HandedOff, "rebalanced", res.Rebalanced, "took", res.Duration.Round(time.Millisecond))
	}
}

func (l *leaderSide) count(f func(*LeaderStats)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(&l.stats)
}

// Stats returns the counters so far.
func (l *leaderSide) Stats() LeaderStats {
	if l == nil {
		return LeaderStats{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// release deletes the lock if this worker holds it (a conditional Delete:
// one taken over meanwhile is left alone).
func (l *leaderSide) release(ctx context.Context) {
	l.mu.Lock()
	st := l.lockSt
	l.mu.Unlock()
	if st.Layout == coordination.LayoutNone {
		return // never polled
	}
	if err := l.lock.Release(ctx, st); err != nil && ctx.Err() == nil {
		l.w.log.Warn("could not release the leader lock; other workers take it over after its leaseDuration", "leaseDuration", l.lock.LeaseDuration(), "err", err)
	}
}

// stopAssigning, at the start of a graceful stop, ends the election loop
// and the term: the run in progress is dropped (the KCL's graceful
// shutdown stops its LeaseAssignmentManager first of all,
// DynamicMigrationComponentsInitializer.shutdown). The lock itself is
// released later (releaseLock), after the leases.
func (l *leaderSide) stopAssigning() {
	if l == nil {
		return
	}
	l.mu.Lock()
	started := l.started
	l.mu.Unlock()
	if !started {
		return
	}
	l.quitOnce.Do(func() { close(l.quit) })
	<-l.stopped
}

// releaseLock deletes the lock at a graceful stop, after the worker's
// metrics item and leases are gone: the next leader, which takes the lock
// at its next poll, then finds those leases unowned and this worker no
// longer active, and assigns them in its first run. The KCL releases its
// lock at the same point (Scheduler.shutdown stops the lease coordinator,
// then PeriodicShardSyncManager.stop shuts the leader decider down).
func (l *leaderSide) releaseLock(ctx context.Context) {
	if l == nil {
		return
	}
	l.stopAssigning()
	l.release(ctx)
}

// currentMode is the table's state last read.
func (w *Worker) currentMode() coordination.State {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mode
}

// isLeader: this worker leads the KCL 3.x fleet now.
func (w *Worker) isLeader() bool {
	return w.leader != nil && w.leader.leading() && w.leader.lock.IsLeader()
}
