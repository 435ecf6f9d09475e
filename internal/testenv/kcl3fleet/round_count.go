package kcl3fleet

import (
	"sort"
	"time"
)

// leaseCountRound is one run of LeaseCountBasedLeaseAssignmentDecider
// (coordinator/assignment/, KCL 3.5.1) on the leases as seen: expired or
// unassigned leases (oldest counter change first) fill the active workers
// with the fewest leases up to the target, ceil(leases / workers)
// (assignExpiredOrUnassignedLeases, calculateTargetLeaseCount; no
// maxLeasesForWorker cap); then, when shouldRunVarianceBalancing says so
// (LeaseAssignmentManager: the first run and every
// varianceBalancingFrequency-th after), balanceWorkerVariance moves leases
// not blocked on a pending checkpoint from the most loaded worker above
// the target to the least loaded below it, two pointers over the workers
// sorted by lease count. Counts are by actual owner, active workers only
// (getActiveWorkerLeaseCounts). Ties, which the KCL leaves to HashMap
// order, go by worker id; a worker's leases by lease key.
func (l *Leader) leaseCountRound(views []leaseView, expired []*leaseView, active []string, now time.Time) map[string]string {
	newOwner := map[string]string{}
	if len(active) == 0 {
		return newOwner
	}
	isActive := map[string]bool{}
	for _, w := range active {
		isActive[w] = true
	}
	count := map[string]int{}
	byWorker := map[string][]*leaseView{}
	for _, w := range active {
		count[w] = 0
	}
	for i := range views {
		v := &views[i]
		if o := actualOwner(v.lease); o != "" && isActive[o] {
			count[o]++
			byWorker[o] = append(byWorker[o], v)
		}
	}
	target := 1
	if n := len(views); len(active) < n {
		target = (n + len(active) - 1) / len(active)
	}
	sorted := func() []string {
		ws := append([]string(nil), active...)
		sort.SliceStable(ws, func(i, j int) bool {
			if count[ws[i]] != count[ws[j]] {
				return count[ws[i]] < count[ws[j]]
			}
			return ws[i] < ws[j]
		})
		return ws
	}
	queue := sorted()
	// assignExpiredOrUnassignedLeases counts from a copy taken before the
	// loop and adds to the assignee only: an expired lease still counts
	// for its old owner (still active until its metrics are stale), so a
	// dead worker is not refilled with its own leases. The storage view
	// (performLeaseAssignment) moves the lease, which the balance below
	// counts afresh (getActiveWorkerLeaseCounts again).
	fill := make(map[string]int, len(count))
	for w, n := range count {
		fill[w] = n
	}
	wi := 0
	for _, v := range expired {
		if wi >= len(queue) {
			break
		}
		w := queue[wi]
		if o := actualOwner(v.lease); o != "" && isActive[o] {
			count[o]--
			byWorker[o] = removeView(byWorker[o], v)
		}
		newOwner[v.lease.LeaseKey] = w
		count[w]++
		byWorker[w] = append(byWorker[w], v)
		fill[w]++
		if fill[w] >= target {
			wi++
		}
	}

	run := l.lamRunCounter == 0
	l.lamRunCounter = (l.lamRunCounter + 1) % l.cfg.VarianceBalancingFrequency
	if !run {
		return newOwner
	}
	ws := sorted()
	avail := map[string][]*leaseView{}
	for w, vs := range byWorker {
		for _, v := range vs {
			if !v.blockedOnPendingCheckpoint(now) {
				avail[w] = append(avail[w], v)
			}
		}
		sort.Slice(avail[w], func(i, j int) bool { return avail[w][i].lease.LeaseKey < avail[w][j].lease.LeaseKey })
	}
	left, right := 0, len(ws)-1
	for left < right {
		under, over := ws[left], ws[right]
		if target-count[under] <= 0 {
			left++
			continue
		}
		if count[over]-target <= 0 {
			right--
			continue
		}
		if len(avail[over]) == 0 {
			right--
			continue
		}
		v := avail[over][0]
		avail[over] = avail[over][1:]
		newOwner[v.lease.LeaseKey] = under
		count[under]++
		count[over]--
	}
	return newOwner
}

func removeView(vs []*leaseView, v *leaseView) []*leaseView {
	for i := range vs {
		if vs[i] == v {
			return append(vs[:i], vs[i+1:]...)
		}
	}
	return vs
}
