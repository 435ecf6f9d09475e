package doctor

import (
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

// moveKind says why a lease changed hands between two reads.
type moveKind int

const (
	moveAssigned moveKind = iota // from nobody
	moveReleased                 // to nobody
	moveFailover                 // from a worker that renewed nothing: dead
	moveLost                     // expired although its owner renewed other leases
	moveStolen                   // taken while its owner kept renewing it
)

// move is one owner change seen between reads prev and cur.
type move struct {
	from, to  string
	prev, cur int // sample indexes
	kind      moveKind
}

// expiry is a span over which a lease kept its owner and its counter for at
// least the failover time: KCL's own definition of an expired lease.
type expiry struct {
	owner      string
	first, end int // sample indexes of the first and last read of the span
	dur        time.Duration
	takenBy    string // the next owner, when the span ended with a move
	stillHeld  bool   // the span lasted to the last read
}

// history is one lease across the reads of a window.
type history struct {
	key string
	// obs are the reads that saw the lease, in order; idx their sample indexes.
	obs []leasecore.Lease
	idx []int
	// renewals counts counter increments by an unchanged owner.
	renewals int64
	moves    []move
	expiries []expiry
}

// ownerLife is what the window shows of one worker.
type ownerLife struct {
	name string
	// renewals are counter increments on leases it held across two reads.
	renewals int64
	held     map[string]bool // every lease it held in some read
	heldLast []string        // leases it held in the last read
	expired  []string        // leases that expired while it held them
	// longestExpired is the longest span one of its leases went unrenewed.
	longestExpired time.Duration
}

// alive: it renewed something. dead: it held leases for a failover time and
// renewed none of them.
func (o *ownerLife) alive() bool { return o.renewals > 0 }
func (o *ownerLife) dead() bool  { return o.renewals == 0 && len(o.expired) > 0 }

// fleetView is the window's reads turned into per-lease and per-worker
// histories, the basis of the liveness, churn and stuck-shard findings.
type fleetView struct {
	samples   []sample
	failover  time.Duration
	histories []*history // by lease key
	owners    map[string]*ownerLife
}

// actualOwner is the worker that processes the lease: in a KCL 3.x graceful
// handoff that is checkpointOwner, leaseOwner being the next owner.
func actualOwner(l leasecore.Lease) string {
	if l.CheckpointOwner != "" {
		return l.CheckpointOwner
	}
	return l.LeaseOwner
}

func newFleetView(samples []sample, failover time.Duration) *fleetView {
	v := &fleetView{samples: samples, failover: failover, owners: map[string]*ownerLife{}}
	byKey := map[string]*history{}
	for i, s := range samples {
		for _, l := range s.leases {
			h := byKey[l.LeaseKey]
			if h == nil {
				h = &history{key: l.LeaseKey}
				byKey[l.LeaseKey] = h
				v.histories = append(v.histories, h)
			}
			h.obs, h.idx = append(h.obs, l), append(h.idx, i)
		}
	}
	sort.Slice(v.histories, func(i, j int) bool { return v.histories[i].key < v.histories[j].key })
	for _, h := range v.histories {
		v.walk(h)
	}
	last := len(samples) - 1
	for _, h := range v.histories {
		if n := len(h.obs); n > 0 && h.idx[n-1] == last {
			if o := actualOwner(h.obs[n-1]); o != "" {
				v.owner(o).heldLast = append(v.owner(o).heldLast, h.key)
			}
		}
		for i := range h.moves {
			h.moves[i].kind = v.classify(h, h.moves[i])
		}
	}
	return v
}

func (v *fleetView) owner(name string) *ownerLife {
	o := v.owners[name]
	if o == nil {
		o = &ownerLife{name: name, held: map[string]bool{}}
		v.owners[name] = o
	}
	return o
}

// walk follows one lease from read to read: renewals, owner changes and
// spans without renewal.
func (v *fleetView) walk(h *history) {
	runStart := 0 // index into h.obs of the first read of the current owner+counter span
	closeRun := func(end int, next string) {
		first := h.obs[runStart]
		owner := actualOwner(first)
		if owner == "" {
			return
		}
		dur := v.samples[h.idx[end]].at.Sub(v.samples[h.idx[runStart]].at)
		if dur < v.failover {
			return
		}
		e := expiry{owner: owner, first: h.idx[runStart], end: h.idx[end], dur: dur, takenBy: next,
			stillHeld: end == len(h.obs)-1 && h.idx[end] == len(v.samples)-1}
		h.expiries = append(h.expiries, e)
		o := v.owner(owner)
		o.expired = append(o.expired, h.key)
		o.longestExpired = max(o.longestExpired, dur)
	}
	for i, cur := range h.obs {
		if o := actualOwner(cur); o != "" {
			v.owner(o).held[h.key] = true
		}
		if i == 0 {
			continue
		}
		prev := h.obs[i-1]
		from, to := actualOwner(prev), actualOwner(cur)
		switch {
		case from != to:
			closeRun(i-1, to)
			h.moves = append(h.moves, move{from: from, to: to, prev: h.idx[i-1], cur: h.idx[i]})
			runStart = i
		case cur.LeaseCounter != prev.LeaseCounter:
			if from != "" && cur.LeaseCounter > prev.LeaseCounter {
				d := cur.LeaseCounter - prev.LeaseCounter
				h.renewals += d
				v.owner(from).renewals += d
			}
			closeRun(i-1, "")
			runStart = i
		}
	}
	if len(h.obs) > 0 {
		closeRun(len(h.obs)-1, "")
	}
}

// classify decides why a lease moved, once every worker's liveness is known.
func (v *fleetView) classify(h *history, m move) moveKind {
	switch {
	case m.from == "":
		return moveAssigned
	case m.to == "":
		return moveReleased
	case v.owners[m.from].dead():
		return moveFailover
	}
	for _, e := range h.expiries {
		if e.owner == m.from && e.end == m.prev && e.takenBy == m.to {
			return moveLost
		}
	}
	return moveStolen
}

// window is the time between the first and the last read.
func (v *fleetView) window() time.Duration {
	if len(v.samples) < 2 {
		return 0
	}
	return v.samples[len(v.samples)-1].at.Sub(v.samples[0].at)
}

// liveOwners names the workers that renewed something.
func (v *fleetView) liveOwners() []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(v.owners)) {
		if v.owners[name].alive() {
			out = append(out, name)
		}
	}
	return out
}

// history of one lease key, nil if never seen.
func (v *fleetView) history(key string) *history {
	i := sort.Search(len(v.histories), func(i int) bool { return v.histories[i].key >= key })
	if i < len(v.histories) && v.histories[i].key == key {
		return v.histories[i]
	}
	return nil
}

// checkpointMoved reports whether the lease's checkpoint changed across the
// window.
func (h *history) checkpointMoved() bool {
	for _, l := range h.obs[1:] {
		if l.Checkpoint != h.obs[0].Checkpoint {
			return true
		}
	}
	return false
}

// presentThroughout: the lease was in every read.
func (h *history) presentThroughout(samples int) bool { return len(h.obs) == samples }
