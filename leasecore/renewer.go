package leasecore

import (
	"context"
	"errors"
	"github.com/kcltool/kcltool/internal/clock"
	"slices"
	"sync"
	"time"

	"github.com/kcltool/kcltool/internal/backoff"
)

// renewLoop renews every held lease once per RenewInterval at a fixed rate
// (KCL's scheduleAtFixedRate), so a slow round does not push later ones back.
func (c *Coordinator) renewLoop(ctx context.Context) {
	next := c.clock.Now()
	for {
		LoopOf(ctx).Beat()
		next = next.Add(c.cfg.RenewInterval)
		if wait := next.Sub(c.clock.Now()); wait > 0 {
			if clock.Sleep(ctx, c.clock, wait) != nil {
				return
			}
		} else {
			next = c.clock.Now() // fell behind: skip the missed ticks instead of bursting
		}
		c.renewAll(ctx, next.Add(c.cfg.RenewInterval))
		if ctx.Err() != nil {
			return
		}
	}
}

// renewAll renews the held leases in parallel (up to KCL's 20 renewal
// threads). Retries of one lease end at roundEnd, the next round's start.
//
// The leases renewed longest ago go first. On a healthy table the order
// does not matter; on a throttled one it decides which leases get the
// capacity the table has left: a lease needs one renewal per failover time,
// not one per round, so a lease whose renewal was throttled in one round is
// the first to try in the next, and no lease misses three rounds while
// others are renewed in each (the table's other writes may leave the
// renewals less than they ask for: TestFleetUnderProvisionedLimit).
func (c *Coordinator) renewAll(ctx context.Context, roundEnd time.Time) {
	sem := make(chan struct{}, maxRenewalConcurrency)
	var wg sync.WaitGroup
	held := c.heldSnapshot()
	since := make(map[*heldLease]time.Time, len(held))
	for _, hl := range held {
		if r := hl.renewed.Load(); r != nil {
			since[hl] = *r
		}
	}
	slices.SortStableFunc(held, func(a, b *heldLease) int { return since[a].Compare(since[b]) })
	for _, hl := range held {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			c.renewOne(ctx, hl, roundEnd)
		}()
	}
	wg.Wait()
}

// renewOne renews one lease, retrying throttles and transient errors with
// jittered backoff. Retries stop at roundEnd, and never is a renewal sent once
// the lease is past its failover time by this worker's own clock: by then
// another worker may have taken it, and the lease is dropped instead (as
// KCL's renewer drops expired leases). Otherwise a lease is dropped only when
// the read after a condition failure shows another owner or a counter that
// no write of this worker explains. A renewal whose outcome is unknown (it
// timed out, its connection broke, its answer was lost, or the read after a
// condition failure failed) is simply tried again: the next attempt's
// condition failure and read show whether it was applied. This is KCL's
// renewer (DynamoDBLeaseRenewer.renewLease), for which a failed renewal means
// "try again" until the lease expires locally.
func (c *Coordinator) renewOne(ctx context.Context, hl *heldLease, roundEnd time.Time) {
	hl.mu.Lock()
	defer hl.mu.Unlock()
	started := hl.renewedAt
	kcl3 := c.Assignment() == AssignByLeader
	if kcl3 {
		// Once per round (the KCL asks again on each of its retries, which
		// moves the average once more per throttled attempt).
		if t := c.tput.throughput(hl.lease.LeaseKey, c.clock.Now()); t != nil {
			hl.lease.ThroughputKBps = t
		}
	}
	var wait time.Duration
	// The lock is let go during the wait, so that a checkpoint gets through.
	sleep := func(ctx context.Context, d time.Duration) error {
		hl.mu.Unlock()
		defer hl.mu.Lock()
		return clock.Sleep(ctx, c.clock, d)
	}
	// Nothing to return: a renewal that gives up is counted and logged here.
	_ = backoff.Retry(ctx, sleep, func(int) time.Duration { return wait }, func(attempt int) (bool, error) {
		if hl.dropped {
			return false, nil
		}
		if hl.renewedAt != started {
			return false, nil // a checkpoint bumped the counter while we backed off: that was the renewal
		}
		sent := c.clock.Now()
		if !c.fresh(hl, sent) {
			c.drop(hl, LeaseLost, c.expiredLocally(hl, "renew", sent))
			return false, nil
		}
		// Each request has its own deadline (Config.ItemTimeout).
		var l Lease
		var err error
		if kcl3 {
			l, err = RenewLease3(WithCapacityOp(ctx, OpRenew), c.api, c.table, hl.lease, c.cfg.WorkerID)
		} else {
			l, err = RenewLease(WithCapacityOp(ctx, OpRenew), c.api, c.table, hl.lease, c.cfg.WorkerID)
		}
		var handoff *HandoffRequestedError
		if errors.As(err, &handoff) {
			c.health.LeaseCall(ctx, OpRenew, nil) // the table answered
		} else {
			c.health.LeaseCall(ctx, OpRenew, err)
		}
		switch {
		case errors.As(err, &handoff):
			// Renew again at once, without the checkpointOwner condition
			// (handleGracefulShutdown), and from now on while it lasts.
			c.adoptHandoff(hl, handoff.Lease)
			wait = 0
			return true, err
		case err == nil:
			hl.applied(l, sent)
			c.stats.renewals.Add(1)
			return false, nil
		case errors.Is(err, ErrLeaseLost):
			c.drop(hl, LeaseLost, err)
			return false, err
		case ctx.Err() != nil:
			return false, err
		}
		hl.unresolved(sent, err)
		wait = c.renewRetryWait(hl, c.clock.Now())
		if c.clock.Now().Add(wait).After(roundEnd) {
			c.stats.renewFailures.Add(1)
			c.log.Warn("lease renewal failed; trying again next round", "lease", hl.lease.LeaseKey,
				"attempts", attempt, "err", err, "heldFor", c.cfg.FailoverTime-c.clock.Now().Sub(hl.renewedAt))
			return false, err
		}
		c.stats.retries.Add(1)
		c.log.Debug("retrying lease renewal", "lease", hl.lease.LeaseKey, "attempt", attempt, "err", err)
		return true, err
	})
}

// retryBackoff spaces retries of lease writes: full jitter under a ceiling
// that starts at 1/32 of the renew interval and doubles up to a quarter of
// it, so several retries fit in one renewal round (3.3s at the defaults,
// 100ms-830ms waits) however short the failover time is configured.
func (c *Coordinator) retryBackoff(attempt int) time.Duration {
	ri := c.cfg.RenewInterval
	return backoff.Policy{Base: ri / 32, Max: max(ri/4, time.Millisecond), Min: time.Millisecond}.Delay(attempt-1, nil)
}

// renewRetryWait is the wait before retrying a renewal: between a
// sixteenth and an eighth of the time the lease has left before it expires,
// whatever the attempt. On a throttled table, the table's next unit goes to
// whichever request arrives first, so how often a lease retries decides
// which leases are renewed. Retry spacing by time left gives the leases
// nearest expiry most of the tries; a freshly renewed lease, with most of
// its failover time ahead, waits long and leaves the units to them. The
// usual backoff (retryBackoff) did the opposite: short waits for leases
// that had just started a round, so the many fresh leases outbid the few
// about to expire, and one in a few dozen simulated runs lost a lease at 55
// write units (TestFleetUnderProvisionedLimit).
func (c *Coordinator) renewRetryWait(hl *heldLease, now time.Time) time.Duration {
	urgent := max((c.cfg.FailoverTime-now.Sub(hl.renewedAt))/8, time.Millisecond)
	return backoff.Policy{Base: urgent, Max: urgent, Jitter: backoff.Equal}.Delay(0, nil)
}
