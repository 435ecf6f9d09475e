package doctor

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// checkChurn counts owner changes between live workers. Failovers from dead
// workers and first assignments are not churn; a lease lost although its
// owner was alive, or one that comes back to a worker it left, is.
func checkChurn(fc *facts) (out []Finding) {
	minutes := fc.view.window().Minutes()
	if minutes <= 0 {
		return
	}
	var (
		moves, lost, stolen int
		churning, lines     []string
		bounced             []string
		workers             = map[string]bool{}
		leases              = 0
	)
	for _, h := range fc.view.histories {
		leases++
		var live []move
		for _, m := range h.moves {
			if m.kind == moveLost || m.kind == moveStolen {
				live = append(live, m)
			}
		}
		if len(live) == 0 {
			continue
		}
		moves += len(live)
		nLost := 0
		for _, m := range live {
			workers[m.from], workers[m.to] = true, true
			if m.kind == moveLost {
				nLost++
			}
		}
		lost += nLost
		stolen += len(live) - nLost
		path := ownerPath(h)
		bounce := returns(path)
		if bounce {
			bounced = append(bounced, h.key)
		}
		if bounce || nLost > 0 || len(live) > 1 {
			churning = append(churning, h.key)
		}
		lines = append(lines, fmt.Sprintf("%s: %s (%s)", h.key, strings.Join(path, " → "), moveWords(len(live), nLost)))
	}
	if moves == 0 {
		return
	}
	names := slices.Sorted(maps.Keys(workers))
	rate := float64(moves) / float64(max(leases, 1)) / minutes
	values := map[string]float64{
		"ownerChanges": float64(moves), "lost": float64(lost), "stolen": float64(stolen), "leases": float64(leases),
		"churningLeases": float64(len(churning)), "bouncingLeases": float64(len(bounced)),
		"changesPerLeasePerMinute": round2(rate),
	}
	ev := Evidence{Lines: lines, Values: values, Workers: names, Shards: churning}
	if len(churning) == 0 {
		out = append(out, Finding{
			ID: FindLeaseChurn, Severity: SeverityInfo,
			Summary:  fmt.Sprintf("rebalancing: %s moved once each between live workers in %s", plural(moves, "lease"), roundDur(fc.view.window())),
			Evidence: Evidence{Lines: lines, Values: values, Workers: names, Shards: movedKeys(fc.view)},
			Cause:    "workers joined or left, and the others take leases toward an even share (one steal per taker run in KCL 2.x, variance balancing in 3.x)",
			Fix:      "nothing, unless it keeps happening: then look for workers that restart in a loop",
		})
		return
	}
	summary := fmt.Sprintf("%d of %s changed owner %s in %s (%.1f per lease per minute)",
		len(churning), plural(leases, "lease"), times(float64(moves)), roundDur(fc.view.window()), rate)
	if len(bounced) > 0 {
		summary += fmt.Sprintf("; %d bounced back to a worker they had left", len(bounced))
	}
	out = append(out, Finding{
		ID: FindLeaseChurn, Severity: SeverityWarn, Summary: summary, Evidence: ev,
		Cause: fc.churnCause(lost, stolen),
		Fix: fmt.Sprintf("make renewals succeed: switch the lease table to on-demand or raise its WCU (see table-capacity), check for throttling in CloudWatch; "+
			"if renewals are slow rather than throttled, raise failoverTimeMillis (now %s) so three renewal attempts fit with room; "+
			"make sure every worker runs the same maxLeasesForWorker and failover time", fc.opt.FailoverTime),
	})
	return
}

// churnCause orders the explanations by the evidence: throttling seen in
// CloudWatch first, then leases lost by live owners, then steals.
func (fc *facts) churnCause(lost, stolen int) string {
	t := fc.tableThrottles()
	switch {
	case t.total() > 0:
		return fmt.Sprintf("lease-table throttling: DynamoDB throttled the table %s in the last %s; throttled renewals expire leases of live workers and the others take them, back and forth",
			times(t.total()), roundDur(fc.opt.MetricsWindow))
	case lost > 0:
		return fmt.Sprintf("%d owner changes followed a lease expiring while its owner was alive and renewing others: renewals are failing. %s",
			lost, fc.renewFailureCause())
	default:
		return fmt.Sprintf("%d leases were stolen from workers that were renewing them: workers disagree about the fair share (different maxLeasesForWorker, workers restarting in a loop, or a worker count that keeps changing)", stolen)
	}
}

// ownerPath is the lease's owners in order, "(none)" for unassigned spans.
func ownerPath(h *history) []string {
	var path []string
	for _, l := range h.obs {
		o := actualOwner(l)
		if o == "" {
			o = "(none)"
		}
		if len(path) == 0 || path[len(path)-1] != o {
			path = append(path, o)
		}
	}
	return path
}

// returns reports whether a worker gets a lease back after losing it.
func returns(path []string) bool {
	seen := map[string]bool{}
	for _, o := range path {
		if o == "(none)" {
			continue
		}
		if seen[o] {
			return true
		}
		seen[o] = true
	}
	return false
}

func moveWords(n, lost int) string {
	s := plural(n, "owner change")
	if lost > 0 {
		s += fmt.Sprintf(", %d after it expired under a live owner", lost)
	}
	return s
}

func movedKeys(v *fleetView) []string {
	var out []string
	for _, h := range v.histories {
		for _, m := range h.moves {
			if m.kind == moveLost || m.kind == moveStolen {
				out = append(out, h.key)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

func round2(f float64) float64 {
	return float64(int64(f*100+0.5)) / 100
}
