package leasecore

import (
	"math/rand/v2"
	"sort"
	"time"
)

// observation is what the taker remembers of one lease between scans: the
// item as last scanned and when, on this worker's clock, its counter was
// last seen to change (KCL's lastCounterIncrementNanos). A zero lastChange
// means "never seen renewed": a lease that was unowned when first seen.
type observation struct {
	lease      Lease
	lastChange time.Time
}

// observe merges a fresh scan into the observations, exactly as KCL's
// updateAllLeases does: a changed counter is "renewed at scan time"; an
// unchanged one keeps its time; a new owned lease counts as renewed at scan
// time, a new unowned one as never renewed (immediately available); leases
// gone from the table are forgotten.
func observe(seen map[string]*observation, scanned []Lease, scanTime time.Time) map[string]*observation {
	next := make(map[string]*observation, len(scanned))
	for _, l := range scanned {
		o := &observation{lease: l}
		switch old, ok := seen[l.LeaseKey]; {
		case ok && old.lease.LeaseCounter == l.LeaseCounter:
			o.lastChange = old.lastChange
		case ok || l.LeaseOwner != "":
			o.lastChange = scanTime
		}
		next[l.LeaseKey] = o
	}
	return next
}

// expired is KCL's Lease.isExpired: counter unchanged for longer than the
// failover time, on the observer's clock.
func (o *observation) expired(now time.Time, failover time.Duration) bool {
	return o.lastChange.IsZero() || now.Sub(o.lastChange) > failover
}

// leaseView is one lease as the taker's decision sees it.
type leaseView struct {
	Lease
	Available bool // expired or unowned: may be taken without stealing
	VeryOld   bool // not renewed for 3 × failover: taken first
}

// takePlan is the outcome of computeLeasesToTake, with the figures KCL
// reports as TakeLeases metrics.
type takePlan struct {
	Take      []Lease // available leases to take
	Steal     []Lease // leases to steal from the most loaded worker
	Leases    int
	Workers   int
	Target    int
	MyCount   int
	Available int
	VeryOld   int
	Spillover int
	Victim    string // most loaded worker, when stealing
}

// computeLeasesToTake is KCL 2.x's DynamoDBLeaseTaker.computeLeasesToTake and
// chooseLeasesToSteal (docs/kcl-compat.md, Taking and stealing), with the
// shuffles drawn from rng so that tests can fix them.
func computeLeasesToTake(all []leaseView, self string, cfg Config, rng *rand.Rand) takePlan {
	cfg = cfg.WithDefaults()
	plan := takePlan{Leases: len(all)}
	counts := map[string]int{}
	var available, veryOld []Lease
	for _, v := range all {
		if v.Available {
			available = append(available, v.Lease)
		} else {
			counts[v.LeaseOwner]++
		}
		if v.VeryOld {
			veryOld = append(veryOld, v.Lease)
		}
	}
	if _, ok := counts[self]; !ok {
		counts[self] = 0
	}
	plan.Workers, plan.Available, plan.MyCount = len(counts), len(available), counts[self]
	if plan.Leases == 0 {
		return plan
	}
	target := 1
	if plan.Workers < plan.Leases {
		target = (plan.Leases + plan.Workers - 1) / plan.Workers
		plan.Spillover = max(0, target-cfg.MaxLeasesForWorker)
		target = min(target, cfg.MaxLeasesForWorker)
	}
	plan.Target = target
	need := target - plan.MyCount

	// Priority assignment: leases nobody renewed for 3 × failover are taken
	// first, up to this worker's maximum and regardless of the target, and
	// that is all this run does (KCL returns right here).
	if !cfg.DisablePriorityLeaseAssignment && len(veryOld) > 0 {
		shuffle(rng, veryOld)
		n := max(0, min(cfg.MaxLeasesForWorker-plan.MyCount, len(veryOld)))
		plan.Take, plan.VeryOld = veryOld[:n], n
		return plan
	}
	if need <= 0 {
		return plan
	}
	if len(available) > 0 {
		shuffle(rng, available)
		plan.Take = available[:min(need, len(available))]
		return plan
	}
	plan.Victim, plan.Steal = chooseLeasesToSteal(all, counts, need, target, cfg.MaxLeasesToStealAtOneTime, rng)
	return plan
}

// chooseLeasesToSteal steals from the most loaded worker only: as many as it
// has over the target (at most what is needed), or one when it sits exactly
// at the target and more than one is needed, never more than maxSteal.
func chooseLeasesToSteal(all []leaseView, counts map[string]int, need, target, maxSteal int, rng *rand.Rand) (string, []Lease) {
	// Ties go to the smallest worker id, so the choice does not depend on
	// map order (KCL's depends on HashMap order, which is no better).
	victim, most := "", -1
	for w, n := range counts {
		if n > most || (n == most && w < victim) {
			victim, most = w, n
		}
	}
	steal := 0
	if most >= target && need > 0 {
		steal = min(need, most-target)
		if need > 1 && steal == 0 {
			steal = 1
		}
		steal = min(steal, maxSteal)
	}
	if steal <= 0 {
		return "", nil
	}
	var candidates []Lease
	for _, v := range all {
		if v.LeaseOwner == victim {
			candidates = append(candidates, v.Lease)
		}
	}
	shuffle(rng, candidates)
	return victim, candidates[:min(steal, len(candidates))]
}

// shuffle spreads workers over different leases, so that two takers rarely
// race for the same one (KCL's Collections.shuffle). Sorting first makes a
// seeded rng give the same order whatever order the input came in.
func shuffle(rng *rand.Rand, leases []Lease) {
	sort.Slice(leases, func(i, j int) bool { return leases[i].LeaseKey < leases[j].LeaseKey })
	rng.Shuffle(len(leases), func(i, j int) { leases[i], leases[j] = leases[j], leases[i] })
}
