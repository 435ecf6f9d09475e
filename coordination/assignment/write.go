package assignment

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

// writeParallelism bounds the writes in flight, as the KCL's
// LEASE_ASSIGNMENT_CALL_THREAD_POOL (one thread per processor) does.
const writeParallelism = 8

// write is parallelyAssignLeases: every move decided, except those of
// leases blocked on a pending handoff, written at once, a graceful handoff
// for a live lease (when handoffs are enabled) and assignLease otherwise.
// Every write is attempted; an error (not a condition failure) fails the
// run afterwards, as the KCL's join does.
func (m *Manager) write(ctx context.Context, v *view, now time.Time, res *Result) {
	type job struct {
		l  *lease
		to string
	}
	var jobs []job
	for _, l := range v.order {
		if l.blockedOnPendingCheckpoint(now) {
			res.Blocked++
			continue
		}
		jobs = append(jobs, job{l, v.moves[l]})
	}
	sort.Slice(jobs, func(i, j int) bool { return jobs[i].l.seen.LeaseKey < jobs[j].l.seen.LeaseKey })
	moves := make([]Move, len(jobs))
	sem := make(chan struct{}, writeParallelism)
	var wg sync.WaitGroup
	for i, j := range jobs {
		moves[i] = Move{Key: j.l.seen.LeaseKey, From: j.l.actualOwner(), To: j.to}
		moves[i].Graceful = !m.cfg.NoGracefulHandoff && j.l.eligibleForGracefulShutdown()
		wg.Add(1)
		sem <- struct{}{}
		go func(mv *Move, l *lease) {
			defer wg.Done()
			defer func() { <-sem }()
			var got leasecore.Lease
			if mv.Graceful {
				got, mv.Done, mv.Err = leasecore.InitiateHandoff3(leasecore.WithCapacityOp(ctx, leasecore.OpHandoffStart), m.api, m.t.Lease, l.seen, mv.To)
			} else {
				got, mv.Done, mv.Err = leasecore.AssignLease3(leasecore.WithCapacityOp(ctx, leasecore.OpAssign), m.api, m.t.Lease, l.seen, mv.To)
			}
			if mv.Done {
				l.seen = got
			}
		}(&moves[i], j.l)
	}
	wg.Wait()
	done := m.clock.Now()
	for i, mv := range moves {
		l := jobs[i].l
		switch {
		case mv.Err != nil:
			m.log.Warn("lease assignment write failed", "lease", mv.Key, "to", mv.To, "handoff", mv.Graceful, "err", mv.Err)
		case !mv.Done:
			res.FailedAssignments++
		case mv.Graceful:
			res.HandedOff++
			// handleGracefulLeaseHandoff: the handoff's deadline starts.
			m.prev[mv.Key] = seenLease{counter: l.seen.LeaseCounter, lastMove: m.prev[mv.Key].lastMove,
				owner: l.seen.LeaseOwner, cpOwner: l.seen.CheckpointOwner,
				handoffDeadline: done.Add(m.cfg.HandoffTimeout + m.cfg.FailoverTime)}
		default:
			res.Assigned++
			// handleRegularLeaseAssignment: the counter moved now.
			m.prev[mv.Key] = seenLease{counter: l.seen.LeaseCounter, lastMove: done, owner: l.seen.LeaseOwner}
		}
	}
	res.Moves = moves
	if len(moves) > 0 {
		m.log.Info("lease assignment run", "leases", res.Leases, "active", res.Active, "expired", res.Expired,
			"assigned", res.Assigned, "handoffs", res.HandedOff, "failed", res.FailedAssignments, "rebalanced", res.Rebalanced)
	}
}
