package assignment

import (
	"sort"
	"time"
)

// leaseCount is LeaseCountBasedLeaseAssignmentDecider (KCL 3.4.3+, the
// LEASE_COUNT_BASED strategy): lease counts only, no metrics.
type leaseCount struct {
	v   *view
	cfg Config
	now time.Time
}

// counts is getActiveWorkerLeaseCounts: the leases each active worker
// holds in the view, 0 for one holding none.
func (d *leaseCount) counts() map[string]int {
	out := map[string]int{}
	for _, w := range d.v.active {
		out[w.id] = len(d.v.byWorker[w.id])
	}
	return out
}

// target is calculateTargetLeaseCount: ceil(leases / workers), 1 when there
// are as many workers as leases or more, at most maxLeasesForWorker.
func (d *leaseCount) target() int {
	leases, workers := len(d.v.leases), len(d.v.active)
	if workers >= leases {
		return 1
	}
	t := leases / workers
	if leases%workers != 0 {
		t++
	}
	return min(t, d.cfg.MaxLeasesForWorker)
}

// byCount sorts worker ids by count, ascending (ties by id: the KCL's
// sort is stable over a HashMap's order).
func byCount(c map[string]int) []string {
	ids := make([]string, 0, len(c))
	for id := range c {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if c[ids[i]] != c[ids[j]] {
			return c[ids[i]] < c[ids[j]]
		}
		return ids[i] < ids[j]
	})
	return ids
}

// assignExpired is assignExpiredOrUnassignedLeases: oldest first, to the
// least loaded worker until it reaches the target, then the next. Unlike
// the variance decider it does not skip a lease whose actual owner is the
// chosen worker (the KCL writes assignLease to that owner).
func (d *leaseCount) assignExpired(ls []*lease) []*lease {
	if len(ls) == 0 || len(d.v.active) == 0 {
		return ls
	}
	sortByLastMove(ls)
	c := d.counts()
	target := d.target()
	queue := byCount(c)
	i := 0
	for n, l := range ls {
		if i >= len(queue) {
			return ls[n:]
		}
		w := queue[i]
		d.v.move(l, w)
		c[w]++
		if c[w] >= target {
			i++
		}
	}
	return nil
}

// balance is balanceWorkerVariance with two pointers: the least loaded
// worker below the target takes one lease at a time from the most loaded
// above it, among that worker's leases not blocked on a pending handoff
// (computeAvailableLeases).
func (d *leaseCount) balance() {
	if len(d.v.active) == 0 {
		return
	}
	c := d.counts()
	avail := map[string][]*lease{}
	for id, ls := range d.v.byWorker {
		for _, l := range ls {
			if !l.blockedOnPendingCheckpoint(d.now) {
				avail[id] = append(avail[id], l)
			}
		}
	}
	for id := range avail {
		sort.Slice(avail[id], func(i, j int) bool { return avail[id][i].seen.LeaseKey < avail[id][j].seen.LeaseKey })
	}
	target := d.target()
	ws := byCount(c)
	left, right := 0, len(ws)-1
	for left < right {
		under, over := ws[left], ws[right]
		if target-c[under] <= 0 {
			left++
			continue
		}
		if c[over]-target <= 0 {
			right--
			continue
		}
		if len(avail[over]) == 0 {
			right--
			continue
		}
		l := avail[over][0]
		avail[over] = avail[over][1:]
		d.v.move(l, under)
		c[under]++
		c[over]--
	}
}
