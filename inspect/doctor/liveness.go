package doctor

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// checkLiveness finds dead workers (hold leases, renew none) and struggling
// ones (renew some, let others expire). Both come from KCL's own expiry
// rule: a counter unchanged for a failover time.
func checkLiveness(fc *facts) (out []Finding) {
	var dead, struggling []*ownerLife
	for _, name := range slices.Sorted(maps.Keys(fc.view.owners)) {
		o := fc.view.owners[name]
		switch {
		case o.dead():
			dead = append(dead, o)
		case o.alive() && len(o.expired) > 0:
			struggling = append(struggling, o)
		}
	}
	if len(dead) > 0 {
		out = append(out, deadWorkers(fc, dead)...)
	}
	if len(struggling) > 0 {
		out = append(out, strugglingWorkers(fc, struggling)...)
	}
	return
}

func deadWorkers(fc *facts, dead []*ownerLife) (out []Finding) {
	// A KCL 2.x taker sees a lease expire a failover time after it first saw
	// the counter still, and its scans are a taker interval apart: a live
	// fleet takes a dead worker's lease within failover + 2 taker intervals.
	untakenLimit := fc.opt.FailoverTime + 2*fc.takerInterval()
	sev := SeverityWarn
	var lines, workers, shards []string
	stranded := 0
	for _, o := range dead {
		workers = append(workers, o.name)
		var taken []string
		for key := range o.held {
			h := fc.view.history(key)
			for _, m := range h.moves {
				if m.from == o.name && m.kind == moveFailover {
					taken = append(taken, fmt.Sprintf("%s → %s", key, m.to))
				}
			}
		}
		sort.Strings(taken)
		line := fmt.Sprintf("%s: renewed none of its %s for %s", o.name, plural(len(o.held), "lease"), roundDur(o.longestExpired))
		if len(o.heldLast) > 0 {
			line += fmt.Sprintf("; still holds %s", strings.Join(o.heldLast, ", "))
			shards = append(shards, o.heldLast...)
			stranded += len(o.heldLast)
			if o.longestExpired >= untakenLimit {
				sev = SeverityCritical
			}
		}
		if len(taken) > 0 {
			line += "; taken over: " + strings.Join(taken, ", ")
		}
		lines = append(lines, line)
	}
	live := fc.view.liveOwners()
	summary := fmt.Sprintf("%s renewed no lease for a failover time or more: %s", plural(len(dead), "worker"), listShort(workers))
	if stranded > 0 {
		summary += fmt.Sprintf("; %s still held by them, unprocessed", plural(stranded, "lease"))
	}
	cause := "the worker process stopped (crash, kill, OOM, host lost) or cannot write to the lease table at all (network, credentials, sustained throttling); KCL does not release leases on a crash, they expire after the failover time"
	fix := "restart the worker or replace it; live workers take its leases after the failover time (2.x) or the leader reassigns them (3.x)"
	if sev == SeverityCritical {
		if len(live) == 0 {
			cause = "no worker of the application renews anything: the whole fleet is down or cannot reach DynamoDB; " + cause
			fix = "start the application's workers; check their logs for lease-table errors"
		} else {
			cause += fmt.Sprintf("; the live workers (%s) have not taken the leases within the failover time plus two taker intervals (%s)", listShort(live), roundDur(untakenLimit))
			fix += "; if they do not, check maxLeasesForWorker on the live workers (they may be full) and that they run the taker"
		}
	}
	sort.Strings(shards)
	out = append(out, Finding{
		ID: FindDeadWorker, Severity: sev, Summary: summary,
		Evidence: Evidence{Lines: lines, Workers: workers, Shards: shards, Values: map[string]float64{
			"deadWorkers": float64(len(dead)), "liveWorkers": float64(len(live)), "leasesStillHeld": float64(stranded),
		}},
		Cause: cause, Fix: fix,
	})
	return
}

func strugglingWorkers(fc *facts, ws []*ownerLife) (out []Finding) {
	var lines, workers, shards []string
	for _, o := range ws {
		workers = append(workers, o.name)
		keys := uniqueSorted(o.expired)
		shards = append(shards, keys...)
		lines = append(lines, fmt.Sprintf("%s: renewed %d times, yet %s went a failover time or more without renewal: %s",
			o.name, o.renewals, plural(len(keys), "lease"), listShort(keys)))
	}
	shards = uniqueSorted(shards)
	expired := len(shards)
	out = append(out, Finding{
		ID: FindStrugglingWorker, Severity: SeverityWarn,
		Summary: fmt.Sprintf("%s alive but let %s expire: %s", plural(len(ws), "worker"), plural(expired, "lease"), listShort(workers)),
		Evidence: Evidence{Lines: lines, Workers: workers, Shards: shards, Values: map[string]float64{
			"workers": float64(len(ws)), "expiredLeases": float64(expired),
		}},
		Cause: fc.renewFailureCause(),
		Fix:   "stop the throttling (on-demand billing or more WCU for the lease table), give the worker CPU and memory headroom, or raise the failover time so a few failed renewals in a row do not lose the lease",
	})
	return
}

// renewFailureCause explains failing renewals, naming the throttling when
// CloudWatch saw it.
func (fc *facts) renewFailureCause() string {
	base := "renewals of a live worker are failing: every renewal in a failover time failed or was not sent"
	if t := fc.tableThrottles(); t.total() > 0 {
		return fmt.Sprintf("%s; the lease table was throttled %s in the last %s (CloudWatch), and a throttled renewal is a lost renewal", base, times(t.total()), roundDur(fc.opt.MetricsWindow))
	}
	hint := "most often lease-table throttling (renewals are writes), then worker stalls (GC pauses, CPU starvation) or a failover time too short for the renew path's latency"
	if fc.metrics == nil {
		hint += "; CloudWatch was not read, so throttling could not be confirmed"
	}
	return base + ": " + hint
}

func times(n float64) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%.0f times", n)
}

func uniqueSorted(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}
