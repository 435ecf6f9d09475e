package kcl3fleet

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/leasecore"
)

// Move is one write of a round.
type Move struct {
	Key, From, To string
	// Graceful: written with initiateGracefulLeaseHandoff, else assignLease.
	Graceful bool
	Err      error // ErrConditionFailed when the write's condition failed
}

// Round is what one LeaseAssignmentManager round saw and wrote.
type Round struct {
	Leader  bool     // this worker held the lock and ran the round
	Active  []string // active workers, sorted
	Expired []string // expired or unassigned leases, oldest first
	Moves   []Move
}

// Run takes the lock if it is free and then does a round every
// AssignmentInterval until ctx ends (LeaseAssignmentManager.start, v3.5.1
// lines 118-129: scheduleWithFixedDelay, first round at once). A stalled
// leader does nothing. Round errors are kept for LastErr, and the loop
// goes on, as the KCL's does (it gives the lock up only after three
// failed rounds in a row, lines 260-273, which this port does not do).
func (l *Leader) Run(ctx context.Context) error {
	for {
		r, err := l.RunOnce(ctx)
		l.mu.Lock()
		l.lastErr, l.rounds = err, append(l.rounds, r)
		l.mu.Unlock()
		if err := clock.Sleep(ctx, l.clock, l.cfg.AssignmentInterval); err != nil {
			return err
		}
	}
}

// Rounds returns the rounds Run has done so far.
func (l *Leader) Rounds() []Round {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Round(nil), l.rounds...)
}

// LastErr is the error of Run's last round.
func (l *Leader) LastErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastErr
}

// RunOnce is one LeaseAssignmentManager.performAssignment (lines 156-279),
// simplified as the package doc says.
func (l *Leader) RunOnce(ctx context.Context) (Round, error) {
	l.mu.Lock()
	stalled := l.stalled
	l.mu.Unlock()
	if stalled {
		return Round{}, nil
	}
	// isLeader (lines 165-177): not the leader means no round, and the
	// next round as leader starts afresh (prepareAfterLeaderSwitch).
	if ok, err := l.IsLeader(ctx); err != nil || !ok {
		l.mu.Lock()
		l.prev = map[string]seenLease{}
		l.mu.Unlock()
		return Round{}, err
	}
	leases, err := l.scanLeases(ctx)
	if err != nil {
		return Round{Leader: true}, err
	}
	reports, err := l.f.WorkerMetricsReports(ctx)
	if err != nil {
		return Round{Leader: true}, err
	}
	now := l.clock.Now()
	r := Round{Leader: true}
	active := map[string]bool{}
	for _, w := range reports {
		if w.Active(now, l.cfg.MetricsReporterFreq) {
			active[w.WorkerID] = true
			r.Active = append(r.Active, w.WorkerID)
		}
	}
	sort.Strings(r.Active)

	views := l.observe(leases, now)

	// expiredOrUnAssignedLeases (lines 197-204): the counter has not moved
	// for leaseDurationMillis (Lease.isExpired, leases/Lease.java lines
	// 270-282) or no actual owner; oldest counter change first
	// (VarianceBasedLeaseAssignmentDecider.assignExpiredOrUnassignedLeases,
	// line 112).
	var expired []*leaseView
	owned := map[string]int{}
	for i := range views {
		v := &views[i]
		if v.lastMove.IsZero() || now.Sub(v.lastMove) > l.cfg.FailoverTime || actualOwner(v.lease) == "" {
			v.expiredOrUnassigned = true
			expired = append(expired, v)
		}
		owned[actualOwner(v.lease)]++
	}
	sort.SliceStable(expired, func(i, j int) bool { return expired[i].lastMove.Before(expired[j].lastMove) })
	newOwner := map[string]string{}
	if l.cfg.LeaseCount {
		newOwner = l.leaseCountRound(views, expired, r.Active, now)
		for _, v := range expired {
			r.Expired = append(r.Expired, v.lease.LeaseKey)
		}
		expired = nil
	}
	for _, v := range expired {
		r.Expired = append(r.Expired, v.lease.LeaseKey)
		// Simplified choice (package doc): the active worker with the
		// fewest leases; no active worker means no assignment (the
		// decider's queue is empty, lines 115-122).
		best := ""
		for _, w := range r.Active {
			if best == "" || owned[w] < owned[best] {
				best = w
			}
		}
		if best == "" {
			break
		}
		// InMemoryStorageView.performLeaseAssignment (lines 498-508).
		owned[actualOwner(v.lease)]--
		owned[best]++
		newOwner[v.lease.LeaseKey] = best
	}

	l.mu.Lock()
	forced := l.forced
	l.forced = nil
	l.mu.Unlock()
	var keep []forcedMove
	byKey := map[string]*leaseView{}
	for i := range views {
		byKey[views[i].lease.LeaseKey] = &views[i]
	}
	for _, fm := range forced {
		v := byKey[fm.key]
		if v == nil || (v.lease.LeaseOwner == fm.to && v.lease.CheckpointOwner == "") {
			continue // gone, or already there
		}
		newOwner[fm.key] = fm.to
		keep = append(keep, fm)
	}

	keys := make([]string, 0, len(newOwner))
	for k := range newOwner {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	done := map[string]bool{}
	for _, k := range keys {
		v := byKey[k]
		if v.blockedOnPendingCheckpoint(now) {
			continue
		}
		m := Move{Key: k, From: actualOwner(v.lease), To: newOwner[k]}
		// parallelyAssignLeases (lines 319-353): a graceful handoff for a
		// live lease when handoffs are enabled, assignLease otherwise.
		if !l.cfg.NoGracefulHandoff && v.eligibleForGracefulShutdown() {
			m.Graceful = true
			_, m.Err = l.HandoffSeen(ctx, v.lease, m.To)
			if m.Err == nil {
				// handleGracefulLeaseHandoff (lines 355-366) starts the
				// handoff's timeout.
				l.mu.Lock()
				p := l.prev[k]
				p.handoffFrom, p.handoffTo = v.lease.LeaseOwner, m.To
				p.handoffEnd = now.Add(l.cfg.HandoffTimeout + l.cfg.FailoverTime)
				l.prev[k] = p
				l.mu.Unlock()
			}
		} else {
			_, m.Err = l.AssignLeaseSeen(ctx, v.lease, m.To)
		}
		if m.Err != nil && !errors.Is(m.Err, ErrConditionFailed) {
			err = m.Err
		}
		if m.Err == nil {
			done[k] = true
		}
		r.Moves = append(r.Moves, m)
	}
	var still []forcedMove
	for _, fm := range keep {
		if !done[fm.key] {
			still = append(still, fm)
		}
	}
	l.mu.Lock()
	l.forced = append(still, l.forced...)
	l.mu.Unlock()
	return r, err
}

// leaseView is a lease with what the leader knows of its history.
type leaseView struct {
	lease               leasecore.Lease
	lastMove            time.Time
	handoffEnd          time.Time
	expiredOrUnassigned bool
}

// actualOwner is Lease.actualOwner (Lease.java lines 328-330): the
// checkpoint owner during a handoff, else the lease owner.
func actualOwner(l leasecore.Lease) string {
	if l.CheckpointOwner != "" {
		return l.CheckpointOwner
	}
	return l.LeaseOwner
}

// observe is updateLeasesLastCounterIncrementNanosAndLeaseShutdownTimeout
// (lines 392-427): a lease first seen with an owner counts as just renewed,
// without one as never renewed; afterwards the time moves when the counter
// grows. A handoff seen for the first time (or with other owners) gets the
// timeout now + gracefulLeaseHandoffTimeoutMillis + leaseDurationMillis
// (getCheckpointOwnerTimeoutTimestampMillis, lines 627-634).
func (l *Leader) observe(leases []leasecore.Lease, now time.Time) []leaseView {
	l.mu.Lock()
	defer l.mu.Unlock()
	next := make(map[string]seenLease, len(leases))
	views := make([]leaseView, 0, len(leases))
	for _, ls := range leases {
		p, seen := l.prev[ls.LeaseKey]
		var cur seenLease
		cur.counter = ls.LeaseCounter
		switch {
		case !seen:
			if actualOwner(ls) != "" {
				cur.lastMove = now
			}
		case ls.LeaseCounter > p.counter:
			cur.lastMove = now
		default:
			cur.lastMove = p.lastMove
		}
		if ls.CheckpointOwner != "" {
			cur.handoffFrom, cur.handoffTo = ls.CheckpointOwner, ls.LeaseOwner
			if seen && p.handoffFrom == ls.CheckpointOwner && p.handoffTo == ls.LeaseOwner && !p.handoffEnd.IsZero() {
				cur.handoffEnd = p.handoffEnd
			} else {
				cur.handoffEnd = now.Add(l.cfg.HandoffTimeout + l.cfg.FailoverTime)
			}
		}
		next[ls.LeaseKey] = cur
		views = append(views, leaseView{lease: ls, lastMove: cur.lastMove, handoffEnd: cur.handoffEnd})
	}
	l.prev = next
	return views
}

// blockedOnPendingCheckpoint is Lease.blockedOnPendingCheckpoint (lines
// 302-309): a lease in handoff whose timeout has not passed is left alone,
// unless it is expired or at SHARD_END.
func (v *leaseView) blockedOnPendingCheckpoint(now time.Time) bool {
	return !(v.expiredOrUnassigned || v.lease.Checkpoint.SequenceNumber == "SHARD_END" ||
		v.lease.CheckpointOwner == "" || !now.Before(v.handoffEnd))
}

// eligibleForGracefulShutdown is Lease.isEligibleForGracefulShutdown
// (lines 319-321): live, not at SHARD_END, not already in handoff.
func (v *leaseView) eligibleForGracefulShutdown() bool {
	return !v.expiredOrUnassigned && v.lease.Checkpoint.SequenceNumber != "SHARD_END" && v.lease.CheckpointOwner == ""
}
