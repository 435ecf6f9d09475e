package doctor

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/leasecore"
)

// checkBlocked explains every child lease that waits on a parent not at
// SHARD_END, naming the parent and whether it is still being read.
func checkBlocked(fc *facts) (out []Finding) {
	type parentState struct {
		key, shard string
		owner      string
		children   []string
		blocker    string
		drained    bool // closed, nothing after the checkpoint: SHARD_END was never written
		moving     bool // its checkpoint moved during the window
	}
	parents := map[string]*parentState{}
	for _, r := range fc.rows {
		for _, b := range r.BlockedBy {
			p := parents[b.LeaseKey]
			if p == nil {
				p = &parentState{key: b.LeaseKey, shard: b.ShardID, blocker: b.String(), owner: actualOwner(fc.last.byKey[b.LeaseKey])}
				if h := fc.view.history(b.LeaseKey); h != nil {
					p.moving = h.checkpointMoved()
				}
				if row := fc.lagRow(b.LeaseKey); row != nil && row.State == inspect.LagClosedUndrained && row.MillisBehindLatest != nil && *row.MillisBehindLatest == 0 {
					p.drained = true
				}
				parents[b.LeaseKey] = p
			}
			p.children = append(p.children, r.ShardIDOrKey())
		}
	}
	if len(parents) == 0 {
		return
	}
	sev := SeverityInfo
	var lines, shards, drained, idle, owners []string
	children := 0
	for _, key := range slices.Sorted(maps.Keys(parents)) {
		p := parents[key]
		children += len(p.children)
		if p.owner != "" {
			owners = append(owners, p.owner)
		}
		shards = append(shards, p.children...)
		state := "its checkpoint moved during the window: still draining"
		switch {
		case p.drained:
			state = "the shard is closed and read to its end: SHARD_END was never checkpointed"
			drained = append(drained, p.shard)
			sev = SeverityCritical
		case !p.moving:
			state = "its checkpoint did not move during the window"
			idle = append(idle, p.shard)
			sev = max(sev, SeverityWarn)
		}
		held := "held by nobody"
		if p.owner != "" {
			held = "held by " + p.owner
		}
		lines = append(lines, fmt.Sprintf("%s %s, %s; %s", strings.Join(p.children, ", "), p.blocker, held, state))
	}
	f := Finding{
		ID: FindBlockedChild, Severity: sev,
		Summary: fmt.Sprintf("%s waiting on %s not at SHARD_END: %s", plural(children, "child shard"), plural(len(parents), "parent"), listShort(sortedParents(parents))),
		Evidence: Evidence{Lines: lines, Shards: shards, Workers: uniqueSorted(owners), Values: map[string]float64{
			"blockedChildren": float64(children), "parents": float64(len(parents)), "drainedParents": float64(len(drained)),
		}},
	}
	switch {
	case len(drained) > 0:
		f.Cause = fmt.Sprintf("parent %s was read to its end but its lease never got checkpoint SHARD_END, so KCL never starts the children (KCL issue #211): the record processor must checkpoint in shardEnded()", listShort(drained))
		f.Fix = "make the record processor call checkpointer.checkpoint() in shardEnded (MultiLangDaemon: answer shardEnded with a checkpoint); to release the children now, once the parent's records are processed, set the parent lease's checkpoint to SHARD_END with a write conditioned on its leaseCounter (kcltool checkpoint reset)"
	case len(idle) > 0:
		f.Cause = fmt.Sprintf("parent %s is not progressing toward its end: its worker is dead or stuck on a record (see dead-worker and stuck-shard), or nobody holds its lease", listShort(idle))
		f.Fix = "fix the parent first: restart its worker or get it past the failing record; the children start by themselves once it reaches SHARD_END"
	default:
		f.Cause = "after a split or merge the children wait until the parents are read to their end; this clears by itself"
		f.Fix = "nothing: watch the parents reach SHARD_END"
	}
	out = append(out, f)
	return
}

func sortedParents[V any](m map[string]V) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		_, shard, ok := leasecore.ParseMultiStreamKey(k)
		if !ok {
			shard = k
		}
		out = append(out, shard)
	}
	return out
}

// checkUnassigned reports leases nobody holds that no worker takes.
func checkUnassigned(fc *facts) (out []Finding) {
	if _, none := fc.noWorkers(); none {
		// no-workers names the same leases, with the cause: nobody runs.
		return
	}
	// A live KCL 2.x fleet takes an unowned lease at its next taker run.
	limit := fc.takerInterval()
	var long, brief []string
	longest := time.Duration(0)
	for _, r := range fc.rows {
		if actualOwner(*r.Lease) != "" || r.State == inspect.StateShardEnd || len(r.BlockedBy) > 0 {
			continue
		}
		span := fc.unownedSpan(r.LeaseKey)
		longest = max(longest, span)
		if span >= limit {
			long = append(long, r.ShardIDOrKey())
		} else {
			brief = append(brief, r.ShardIDOrKey())
		}
	}
	if len(long)+len(brief) == 0 {
		return
	}
	all := append(append([]string(nil), long...), brief...)
	sort.Strings(all)
	live := fc.view.liveOwners()
	f := Finding{
		ID: FindUnassigned, Severity: SeverityInfo,
		Summary: fmt.Sprintf("%s without an owner: %s", plural(len(all), "lease"), listShort(all)),
		Evidence: Evidence{Lines: all, Shards: all, Values: map[string]float64{
			"unassigned": float64(len(all)), "unassignedLongerThanTakerInterval": float64(len(long)),
			"liveWorkers": float64(len(live)), "longestUnownedMillis": float64(longest.Milliseconds()),
		}},
		Cause: fmt.Sprintf("new or released leases wait for the next taker run (every %s with this failover time)", roundDur(limit)),
		Fix:   "nothing: a live worker takes them within a taker interval",
	}
	switch {
	case len(long) > 0 && len(live) == 0:
		f.Severity = SeverityCritical
		f.Summary = fmt.Sprintf("%s unowned for %s and no live worker to take them: %s", plural(len(long), "lease"), roundDur(longest), listShort(long))
		f.Cause = "no worker of the application is running (or none can reach the lease table): nothing is being consumed"
		f.Fix = "start the application's workers"
	case len(long) > 0:
		f.Severity = SeverityWarn
		f.Summary = fmt.Sprintf("%s unowned for %s although %s live: %s", plural(len(long), "lease"), roundDur(longest), plural(len(live), "worker is"), listShort(long))
		f.Cause = "the live workers are not taking them: they reached maxLeasesForWorker, their taker fails (check their logs for lease-table errors), or in KCL 3.x the leader does not assign (see leader findings)"
		f.Fix = "raise maxLeasesForWorker or add workers; check the workers' logs for taker errors"
	}
	out = append(out, f)
	return
}

// unownedSpan is how long the lease has been unowned up to the last read.
func (fc *facts) unownedSpan(key string) time.Duration {
	h := fc.view.history(key)
	if h == nil {
		return 0
	}
	first := len(h.obs) - 1
	for first > 0 && actualOwner(h.obs[first-1]) == "" {
		first--
	}
	return fc.last.at.Sub(fc.view.samples[h.idx[first]].at)
}

// checkImbalance compares live workers' lease counts with the fair share.
// Dead workers' leases are expired and count as available, as in KCL's
// taker. An imbalance nobody corrects during the window is a warning.
func checkImbalance(fc *facts) (out []Finding) {
	if len(fc.view.samples) < 2 {
		return
	}
	imbalancedThroughout := true
	var last *inspect.Owners
	for _, s := range fc.view.samples {
		o := inspect.OwnersOf(fc.liveListing(s))
		if !o.Imbalanced {
			imbalancedThroughout = false
		}
		last = o
	}
	if !last.Imbalanced {
		return
	}
	var lines, workers []string
	lo, hi := last.Leases, 0
	for _, w := range last.Workers {
		workers = append(workers, w.Worker)
		lines = append(lines, fmt.Sprintf("%s: %s (fair share %d)", w.Worker, plural(len(w.Shards), "lease"), last.FairShare))
		lo, hi = min(lo, len(w.Shards)), max(hi, len(w.Shards))
	}
	moved := len(movedKeys(fc.view)) > 0
	f := Finding{
		ID: FindImbalance, Severity: SeverityInfo,
		Summary: fmt.Sprintf("%s over %s: between %d and %d each, fair share %d", plural(last.Leases, "lease"), plural(len(last.Workers), "worker"), lo, hi, last.FairShare),
		Evidence: Evidence{Lines: lines, Workers: workers, Values: map[string]float64{
			"workers": float64(len(last.Workers)), "leases": float64(last.Leases), "fairShare": float64(last.FairShare), "min": float64(lo), "max": float64(hi),
		}},
		Cause: "rebalancing in progress: KCL 2.x steals one lease per taker run from the most loaded worker",
		Fix:   "nothing if it converges; raising maxLeasesToStealAtOneTime makes it faster",
	}
	switch {
	case fc.kcl3.present:
		f.Cause = "KCL 3.x balances by worker utilization (CPU or throughput), not by lease count: unequal counts are expected when shards carry unequal load"
		f.Fix = "nothing, unless the worker metrics are stale or failing (see stale-worker-metrics)"
	case imbalancedThroughout && !moved && fc.view.window() >= fc.takerInterval():
		f.Severity = SeverityWarn
		f.Cause = fmt.Sprintf("imbalanced in every read and no lease moved in %s, longer than a taker interval (%s): the loaded workers keep their leases — different maxLeasesForWorker settings, a worker that cannot steal (its taker fails), or maxLeasesToStealAtOneTime 0", roundDur(fc.view.window()), roundDur(fc.takerInterval()))
		f.Fix = "use the same maxLeasesForWorker on every worker and check the under-loaded workers' logs for taker errors"
	}
	out = append(out, f)
	return
}

// liveListing is a read as a Listing, with the leases of dead workers shown
// unowned: KCL's taker treats them as available, not as that worker's share.
func (fc *facts) liveListing(s sample) *inspect.Listing {
	rows := inspect.LeaseRows(s.leases, nil)
	for i := range rows {
		if o := fc.view.owners[actualOwner(*rows[i].Lease)]; o != nil && o.dead() {
			// A copy: the row shares its lease with the sample.
			l := *rows[i].Lease
			l.LeaseOwner, l.CheckpointOwner = "", ""
			rows[i].Lease = &l
		}
	}
	return &inspect.Listing{Table: fc.opt.Table, Leases: rows, NonLeases: s.nonLeases}
}
