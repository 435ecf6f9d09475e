package assignment

import (
	"math"
	"sort"
	"time"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/leasecore"
)

const maxFloat = math.MaxFloat64

// lease is one lease of a run: the item as scanned (seen, what the writes
// are conditioned on) and what the leader knows of it.
type lease struct {
	seen leasecore.Lease
	// tput is throughputKBps, or the fleet's average lease throughput
	// when the item has none (loadInMemoryStorageView).
	tput float64
	// lastMove is lastCounterIncrementNanos: when this leader last saw the
	// counter move; zero for a lease first seen unassigned (sorted first).
	lastMove time.Time
	// handoffEnd is checkpointOwnerTimeoutTimestampMillis.
	handoffEnd          time.Time
	expiredOrUnassigned bool
	// owner is the worker the view holds it under: the actual owner as
	// scanned, then the new owner once the run moved it.
	owner string
}

func (l *lease) actualOwner() string { return l.seen.ActualOwner() }

// blockedOnPendingCheckpoint is Lease.blockedOnPendingCheckpoint: a lease in
// handoff whose timeout has not passed is not written, unless it is
// expired or at SHARD_END.
func (l *lease) blockedOnPendingCheckpoint(now time.Time) bool {
	return !(l.expiredOrUnassigned || l.seen.Checkpoint.IsShardEnd() ||
		l.seen.CheckpointOwner == "" || !now.Before(l.handoffEnd))
}

// eligibleForGracefulShutdown is Lease.isEligibleForGracefulShutdown: live,
// not at SHARD_END, not in handoff already. Other moves use assignLease.
func (l *lease) eligibleForGracefulShutdown() bool {
	return !l.expiredOrUnassigned && !l.seen.Checkpoint.IsShardEnd() && l.seen.CheckpointOwner == ""
}

// view is LeaseAssignmentManager.InMemoryStorageView: the leases by worker,
// the throughput each worker holds, and the moves decided in this run.
type view struct {
	leases   []*lease
	byWorker map[string][]*lease
	tput     map[string]float64
	moves    map[*lease]string
	order    []*lease // moves in the order decided

	active    []*worker // active workers, sorted by id
	activeSet map[string]bool
	// targetTput is targetAverageThroughput: the fleet's throughput per
	// active worker.
	targetTput float64

	maxTput   float64
	maxLeases int
}

// newView is loadInMemoryStorageView on a scan's leases and the workers'
// metrics. Active workers are those with a valid, fresh metrics item
// (MigrationAwareLAMDataManager.loadData) whose metrics are not failing.
//
// One rule differs from the KCL: when no lease has a throughput above zero
// (a new application, or a fleet reading nothing), the KCL's average lease
// throughput is 0, its targetAverageThroughput too, and the synthetic "T"
// metric of a worker without CPU data is 0/0 = NaN; its priority queue then
// hands out leases in the order of its heap, in effect to two workers. Here
// every lease then weighs 1 KBps, so that the same rules balance lease
// counts.
func newView(leases []*lease, metrics []coordination.WorkerMetrics, cfg Config, now time.Time) *view {
	v := &view{
		leases: leases, byWorker: map[string][]*lease{}, tput: map[string]float64{},
		moves: map[*lease]string{}, activeSet: map[string]bool{},
		maxTput: cfg.MaxThroughputPerHostKBps, maxLeases: cfg.MaxLeasesForWorker,
	}
	for _, m := range metrics {
		if !validMetrics(m) || metricsExpired(m, now, cfg.metricsExpiry()) || metricFailing(m) {
			continue
		}
		w := newWorker(m, cfg.WorkerMetricsEMAAlpha)
		w.order = len(v.active)
		v.active = append(v.active, w)
		v.activeSet[w.id] = true
	}
	sum, n := 0.0, 0
	for _, l := range leases {
		if t := l.seen.ThroughputKBps; t != nil {
			sum += *t
			n++
		}
	}
	avg := 0.0
	if n > 0 {
		avg = sum / float64(n)
	}
	unit := avg <= 0
	for _, l := range leases {
		switch {
		case unit:
			l.tput = 1
		case l.seen.ThroughputKBps != nil:
			l.tput = *l.seen.ThroughputKBps
		default:
			l.tput = avg
		}
		l.owner = l.actualOwner()
		v.byWorker[l.owner] = append(v.byWorker[l.owner], l)
		v.tput[l.owner] += l.tput
	}
	if unit {
		avg = 1
	}
	if len(leases) > 0 {
		v.targetTput = avg * float64(len(leases)) / float64(max(1, len(v.active)))
	}
	for _, w := range v.active {
		if w.usingDefaultMetric() {
			ratio := 0.0
			if v.targetTput > 0 {
				ratio = v.tput[w.id] / v.targetTput
			}
			w.setDefaultMetric(ratio)
		}
	}
	return v
}

// move is performLeaseAssignment: the lease goes from the worker the view
// holds it under to newOwner, with its throughput. (The KCL removes it
// from its actual owner as scanned; a lease moved twice in one run would
// stay counted there. The view tracks the owner it gave it.)
func (v *view) move(l *lease, newOwner string) {
	old := l.owner
	v.byWorker[old] = removeLease(v.byWorker[old], l)
	v.byWorker[newOwner] = append(v.byWorker[newOwner], l)
	v.tput[newOwner] += l.tput
	v.tput[old] -= l.tput
	l.owner = newOwner
	if _, ok := v.moves[l]; !ok {
		v.order = append(v.order, l)
	}
	v.moves[l] = newOwner
}

func removeLease(ls []*lease, l *lease) []*lease {
	for i, x := range ls {
		if x == l {
			return append(ls[:i], ls[i+1:]...)
		}
	}
	return ls
}

// hasRoom is isWorkerTotalThroughputLessThanMaxThroughput and
// isWorkerAssignedLeasesLessThanMaxLeases together.
func (v *view) hasRoom(id string) bool {
	return v.tput[id] <= v.maxTput && len(v.byWorker[id]) < v.maxLeases
}

// sortByLastMove orders expired or unassigned leases as the deciders take
// them: never-moved (unassigned) first, then the longest expired; by key
// on a tie, for a stable order.
func sortByLastMove(ls []*lease) {
	sort.SliceStable(ls, func(i, j int) bool {
		if !ls[i].lastMove.Equal(ls[j].lastMove) {
			return ls[i].lastMove.Before(ls[j].lastMove)
		}
		return ls[i].seen.LeaseKey < ls[j].seen.LeaseKey
	})
}
