package doctor

import (
	"fmt"

	"github.com/kcltool/kcltool/inspect"
)

// checkNoWorkers finds an application none of whose workers runs, stopped
// cleanly: leases are left to process, and no read of the window saw one
// owned. A graceful stop (KCL's and kcltool run's) releases each lease by
// removing leaseOwner, so nothing expires and neither dead-worker nor
// stuck-shard has anything to say, while nothing is consumed. A crashed
// fleet keeps its owners on the leases: that is dead-worker's (critical,
// "the whole fleet is down"), and the two never fire together, since any
// owner in any read rules this one out.
func checkNoWorkers(fc *facts) []Finding {
	open, ok := fc.noWorkers()
	if !ok {
		return nil
	}
	reads := len(fc.view.samples)
	cause := "the application's workers were stopped cleanly (a graceful stop releases its leases by removing leaseOwner) or were never started; a crashed worker would still own its leases (see dead-worker)"
	if fc.kcl3.present {
		cause += "; no KCL 3.x worker reports fresh worker metrics either"
	}
	// The reads' own span: a watch's or top's first reports cover less
	// than the window.
	over := ""
	if w := fc.view.window(); w > 0 {
		over = " over " + roundDur(w)
	}
	return []Finding{{
		ID: FindNoWorkers, Severity: SeverityWarn,
		Summary: fmt.Sprintf("no worker is running: %s to process, none owned in %s%s", plural(len(open), "lease"), plural(reads, "read"), over),
		Evidence: Evidence{Lines: open, Shards: open, Values: map[string]float64{
			"unownedLeases": float64(len(open)), "reads": float64(reads),
		}},
		Cause: cause,
		Fix:   "start the application's workers (kcltool run, or the KCL application); if the application is retired, delete its lease table so that it stops being checked",
	}}
}

// noWorkers is whether the window shows no worker at all, with the leases
// that wait for one (not at SHARD_END, in the last read): no lease had an
// owner in any read (so none was renewed), and no KCL 3.x worker-metrics
// item is fresh (a 3.x worker that runs but was assigned nothing is the
// leader findings' case).
func (fc *facts) noWorkers() ([]string, bool) {
	for _, s := range fc.view.samples {
		for _, l := range s.leases {
			if actualOwner(l) != "" {
				return nil, false
			}
		}
	}
	for _, m := range fc.kcl3.metrics {
		if metricsFresh(m, fc.now) {
			return nil, false
		}
	}
	var open []string
	for _, r := range fc.rows {
		if r.State != inspect.StateShardEnd {
			open = append(open, r.ShardIDOrKey())
		}
	}
	return open, len(open) > 0
}
