package assignment

import (
	"math/rand/v2"
	"sort"
)

// variance is VarianceBasedLeaseAssignmentDecider (KCL 3.5.1): it balances
// each metric of the workers (CPU, or the synthetic throughput "T")
// around the fleet's average.
type variance struct {
	v     *view
	cfg   Config
	rnd   *rand.Rand
	fleet map[string]float64 // workerMetricsToFleetLevelAverageMap
	queue *workerQueue       // assignableWorkerSortedByAvailableCapacity
	// targetLeases is targetLeasePerWorker: leases / active workers, at
	// least 1.
	targetLeases int
}

func newVariance(v *view, cfg Config, rnd *rand.Rand) *variance {
	d := &variance{v: v, cfg: cfg, rnd: rnd, fleet: map[string]float64{}}
	// initialize(): the average of each metric over the workers that
	// report it.
	sums, counts := map[string]float64{}, map[string]int{}
	for _, w := range v.active {
		for name := range w.stats {
			sums[name] += w.metric(name)
			counts[name]++
		}
	}
	for name, s := range sums {
		d.fleet[name] = s / float64(counts[name])
	}
	d.targetLeases = max(len(v.leases)/max(len(v.active), 1), 1)
	d.queue = &workerQueue{key: func(w *worker) float64 { return w.toReachAverage(d.fleet) }, leases: v.byWorker}
	// getAvailableWorkersForAssignment: every active worker with room,
	// hot ones included (their variance is balanced too).
	for _, w := range v.active {
		if v.hasRoom(w.id) {
			d.queue.add(w)
		}
	}
	return d
}

// assignExpired is assignExpiredOrUnassignedLeases: each lease, oldest
// first, to the worker with the most room to reach the average; it
// returns the leases left when no worker could take more (LeaseSpillover).
func (d *variance) assignExpired(ls []*lease) []*lease {
	sortByLastMove(ls)
	for i, l := range ls {
		w := d.queue.poll()
		if w == nil {
			return ls[i:]
		}
		d.assign(l, w, true)
	}
	return nil
}

// assign is the decider's assignLease: a lease whose actual owner is the
// chosen worker stays (unless it is an expired handoff, which must be
// cleared); otherwise the worker's metrics are raised by the lease's
// throughput, the view moves it, and the worker goes back in the queue
// while it has room.
func (d *variance) assign(l *lease, w *worker, expired bool) {
	pendingExpired := expired && l.seen.CheckpointOwner != ""
	if !pendingExpired && l.actualOwner() != "" && l.actualOwner() == w.id {
		d.queue.add(w)
		return
	}
	w.addThroughput(d.fleet, d.v.targetTput, l.tput, float64(d.targetLeases))
	d.v.move(l, w.id)
	if d.v.hasRoom(w.id) {
		d.queue.add(w)
	}
}

// balance is balanceWorkerVariance: for each metric, the workers to take
// from (getWorkersToTakeLeasesFromIfRequired) and how much throughput to
// take from each, throughput × (value − average)/value × dampening; the
// metric with the most to take wins. Leases are then taken from those
// workers, the most to take first, and given to the workers with the most
// room, until one would go above the average.
func (d *variance) balance() {
	take := map[string]float64{}
	most := -1.0
	names := make([]string, 0, len(d.fleet))
	for name := range d.fleet {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		var withMetric []*worker
		for _, w := range d.v.active {
			if w.has(name) {
				withMetric = append(withMetric, w)
			}
		}
		avg := d.fleet[name]
		cur := map[string]float64{}
		total := 0.0
		for _, w := range d.takeFrom(withMetric, name, avg) {
			val := w.metric(name)
			pct := (val - avg) / val * float64(d.cfg.DampeningPercentage) / 100
			t := d.v.tput[w.id] * pct
			cur[w.id] = t
			total += t
		}
		if most < total {
			most, take = total, cur
		}
	}
	ids := make([]string, 0, len(take))
	for id := range take {
		ids = append(ids, id)
	}
	sort.SliceStable(ids, func(i, j int) bool {
		if take[ids[i]] != take[ids[j]] {
			return take[ids[i]] > take[ids[j]]
		}
		return ids[i] < ids[j]
	})
	for _, id := range ids {
		for _, l := range d.leasesToTake(id, take[id]) {
			w := d.queue.poll()
			if w != nil && w.wouldExceed(d.fleet, d.v.targetTput, l.tput, float64(d.targetLeases)) {
				// As the KCL: the worker polled is not put back, and
				// this worker's remaining leases stay.
				break
			}
			if w != nil {
				d.assign(l, w, false)
			}
		}
	}
}

// takeFrom is getWorkersToTakeLeasesFromIfRequired: rebalance only when
// some worker is outside the average ±reBalanceThresholdPercentage or
// above its operating range; then take from those at or above the upper
// limit or above their range, or, if none is, from the most loaded.
func (d *variance) takeFrom(ws []*worker, name string, avg float64) []*worker {
	th := float64(d.cfg.ReBalanceThresholdPercentage) / 100
	upper, lower := avg*(1+th), avg*(1-th)
	var above []*worker
	var mostLoaded *worker
	trigger := false
	for _, w := range ws {
		val := w.metric(name)
		hot := w.aboveRange(name)
		if val > upper || val < lower || hot {
			trigger = true
		}
		if val >= upper || hot {
			above = append(above, w)
		}
		if mostLoaded == nil || mostLoaded.metric(name) < val {
			mostLoaded = w
		}
	}
	if !trigger {
		return nil
	}
	if len(above) == 0 && mostLoaded != nil {
		above = append(above, mostLoaded)
	}
	return above
}

// leasesToTake is getLeasesToTake: a worker with leases but no throughput
// gives one lease; otherwise getLeasesCombiningToThroughput.
func (d *variance) leasesToTake(id string, tput float64) []*lease {
	own := d.v.byWorker[id]
	if len(own) == 0 {
		return nil
	}
	shuffled := append([]*lease(nil), own...)
	d.rnd.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	if d.v.tput[id] == 0 {
		return shuffled[:1]
	}
	return d.combining(shuffled, tput)
}

// combining is getLeasesCombiningToThroughput: leases, in random order,
// as long as each leaves some throughput still to take; with
// allowThroughputOvershoot and nothing taken, the lightest lease.
func (d *variance) combining(ls []*lease, tput float64) []*lease {
	var out []*lease
	remaining := tput
	for _, l := range ls {
		if remaining-l.tput <= 0 {
			continue
		}
		remaining -= l.tput
		out = append(out, l)
	}
	if !d.cfg.NoThroughputOvershoot && len(out) == 0 && len(ls) > 0 {
		lightest := ls[0]
		for _, l := range ls[1:] {
			if l.tput < lightest.tput {
				lightest = l
			}
		}
		out = append(out, lightest)
	}
	return out
}
