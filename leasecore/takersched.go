package leasecore

import (
	"math"
	"time"
)

// takerSched is what the taker's schedule remembers between runs (see
// pacing.go for the rules).
type takerSched struct {
	lastScan time.Time // when the last successful scan ended
}

// stealAgain is the wait before the next run of a worker that stole and is
// still below its target: two renew intervals, so that the victim has
// noticed the steal. Rebalancing takes as many runs, and so as many scans,
// as it takes steals, whenever they run; running them back to back costs
// no more read units than KCL's 20 s spacing, and ends the imbalance sooner.
func (takerSched) stealAgain(cfg Config) time.Duration { return 2 * cfg.RenewInterval }

// missedRenewals looks for a lease another worker owns whose counter moved
// fewer times since the previous scan than its owner's fixed-rate renewer
// moves it in that time, less one for the phase of the scans and a retried
// renewal: its owner may have stopped between the two scans. Such a lease
// was last seen moving at this scan, so it can expire no sooner than the
// failover time from now, and that is when the taker looks again, instead of
// a whole scan interval later. A renewing owner moves every counter
// floor(gap / renew interval) times or more, so a healthy fleet never
// triggers this; each stopped worker costs one scan per observer.
func (c *Coordinator) missedRenewals(prev map[string]*observation, prevScan, now time.Time) time.Duration {
	never := time.Duration(math.MaxInt64)
	if prevScan.IsZero() {
		return never
	}
	expected := int64(now.Sub(prevScan)/c.cfg.RenewInterval) - 1
	if expected < 2 {
		return never // scans closer than that: nextRun's stalled-counter rule covers them
	}
	for key, o := range c.seen {
		p := prev[key]
		owner := o.lease.LeaseOwner
		if p == nil || owner == "" || owner == c.cfg.WorkerID || owner != p.lease.LeaseOwner || o.lease.CheckpointOwner != "" {
			continue
		}
		if d := o.lease.LeaseCounter - p.lease.LeaseCounter; d > 0 && d < expected {
			return c.cfg.FailoverTime + c.cfg.Epsilon
		}
	}
	return never
}
