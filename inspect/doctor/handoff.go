package doctor

import (
	"fmt"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

// checkHandoffs reports KCL 3.x graceful handoffs, and those that outlast
// gracefulLeaseHandoffTimeoutMillis plus the failover time, after which the
// leader should have forced them.
func checkHandoffs(fc *facts) (out []Finding) {
	limit := fc.opt.HandoffTimeout + fc.opt.FailoverTime
	var stuck, running []string
	longest := time.Duration(0)
	for _, l := range fc.last.leases {
		if l.CheckpointOwner == "" {
			continue
		}
		span, whole := fc.handoffSpan(l)
		longest = max(longest, span)
		desc := fmt.Sprintf("%s: %s → %s for %s", l.ShardIDOrKey(), l.CheckpointOwner, l.LeaseOwner, roundDur(span))
		if whole {
			desc = fmt.Sprintf("%s: %s → %s for at least %s (since the first read)", l.ShardIDOrKey(), l.CheckpointOwner, l.LeaseOwner, roundDur(span))
		}
		if span >= limit {
			stuck = append(stuck, desc)
		} else {
			running = append(running, desc)
		}
	}
	switch {
	case len(stuck) > 0:
		out = append(out, Finding{
			ID: FindHandoffStuck, Severity: SeverityWarn,
			Summary:  fmt.Sprintf("%s in KCL 3.x graceful handoff for longer than the handoff timeout plus failover (%s)", plural(len(stuck), "lease"), roundDur(limit)),
			Evidence: Evidence{Lines: stuck, Values: map[string]float64{"stuckHandoffs": float64(len(stuck)), "longestMillis": float64(longest.Milliseconds())}},
			Cause:    "the old owner (checkpointOwner) neither finished the handoff nor timed out, and the leader did not force it: the old owner is stuck in shutdownRequested, or no leader runs",
			Fix:      "check the old owner's logs (its processor's shutdownRequested must return); check the leader findings; the leader reassigns once it sees the timeout",
		})
	case len(running) > 0:
		out = append(out, Finding{
			ID: FindHandoff, Severity: SeverityInfo,
			Summary:  fmt.Sprintf("%s in KCL 3.x graceful handoff; stuck only after %s", plural(len(running), "lease"), roundDur(limit)),
			Evidence: Evidence{Lines: running, Values: map[string]float64{"handoffs": float64(len(running))}},
			Cause:    "the 3.x leader is moving leases between workers to balance load; the old owner checkpoints and hands over",
			Fix:      "nothing: do not edit these leases while the handoff runs (docs/kcl-compat.md, Leader and graceful handoff)",
		})
	}
	return
}

// handoffSpan is how long the lease has shown this checkpointOwner; whole
// is set when it already did at the first read.
func (fc *facts) handoffSpan(l leasecore.Lease) (time.Duration, bool) {
	h := fc.view.history(l.LeaseKey)
	first := len(h.obs) - 1
	for first > 0 && h.obs[first-1].CheckpointOwner == l.CheckpointOwner && h.obs[first-1].LeaseOwner == l.LeaseOwner {
		first--
	}
	return fc.last.at.Sub(fc.view.samples[h.idx[first]].at), h.idx[first] == 0
}
