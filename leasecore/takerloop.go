package leasecore

import (
	"context"
	"github.com/kcltool/kcltool/internal/clock"
	"sync"
	"time"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/internal/backoff"
)

// takerLoop runs the taker at once and then whenever runTaker says, or when
// kicked.
func (c *Coordinator) takerLoop(ctx context.Context) {
	for {
		LoopOf(ctx).Beat()
		wait := c.runTaker(ctx)
		if ctx.Err() != nil {
			return
		}
		t := c.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		case <-c.poke:
			t.Stop()
		}
	}
}

// runTaker is one run of KCL 2.x's lease taker: scan the table, update the
// observations, decide what to take or steal, take it. It returns the wait
// until the next run.
func (c *Coordinator) runTaker(ctx context.Context) time.Duration {
	if c.noTaking.Load() || c.Assignment() == AssignByLeader {
		// Nothing to do until Stop, or until SetAssignment kicks the
		// taker: any wait will do. A 3.x worker never takes or steals.
		return c.cfg.FailoverTime
	}
	c.stats.takerRuns.Add(1)
	started := c.clock.Now()
	res, err := ScanTable(WithCapacityOp(ctx, OpScan), c.api, c.table, ScanOptions{
		Segments: c.cfg.ScanSegments,
		Sleep:    func(ctx context.Context, d time.Duration) error { return clock.Sleep(ctx, c.clock, d) },
		OnRetry:  func(err error) { c.health.LeaseCall(ctx, OpScan, err) },
	})
	c.stats.retries.Add(int64(res.Retries))
	c.health.LeaseCall(ctx, OpScan, err)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("lease taker could not scan the lease table", "err", err)
		}
		if c.lastWait > 0 {
			return c.lastWait
		}
		return c.cfg.ScanPacing(0, 0, 1)
	}
	now := c.clock.Now()
	c.latest.set(res, now)
	c.warnForeign(res)
	res.Leases = c.included(res.Leases)
	prev, prevScan := c.seen, c.sched.lastScan
	c.seen = observe(c.seen, res.Leases, now)
	c.sched.lastScan = now
	views := c.views(now)
	plan := computeLeasesToTake(views, c.cfg.WorkerID, c.cfg, c.rng)
	// A worker restarted under the same id re-adopts the leases it still
	// owns, as KCL's renewer does at initialisation, instead of letting them
	// expire first. So does a worker whose take was applied but whose answer
	// was lost, or that gave a lease up at its own deadline while nobody
	// took it: the table says it is this worker's.
	take := c.withOwnLeases(plan.Take)
	steal := plan.Steal
	if len(steal) > 0 && now.Sub(started) > c.cfg.RenewInterval/2 {
		// A slow scan may have read counters the victim has renewed since;
		// KCL re-reads leases marked for stealing in that case.
		steal = c.refresh(ctx, steal)
	}
	if c.noTaking.Load() { // StopTaking during the scan
		take, steal = nil, nil
	}
	taken := c.takeAll(ctx, take, false)
	stolen := c.takeAll(ctx, steal, true)
	if len(take)+len(steal) > 0 {
		c.log.Info("lease taker run", "leases", plan.Leases, "workers", plan.Workers, "target", plan.Target,
			"had", plan.MyCount, "available", plan.Available, "veryOld", plan.VeryOld, "spillover", plan.Spillover,
			"taken", taken, "untaken", len(take)-taken, "stolen", stolen, "stealFrom", plan.Victim)
	}
	throttled := c.stats.throttled.Load() > c.reported.throttled
	c.reportThrottling()
	c.lastWait = c.cfg.ScanPacing(plan.Leases, plan.Workers, scanReadUnits(res.Leases, res.Pages))
	if throttled {
		return c.lastWait // see pacing.go: no extra scans on a throttled table
	}
	wait := min(c.nextRun(now, c.lastWait), c.missedRenewals(prev, prevScan, now))
	if stolen > 0 && plan.MyCount+taken+stolen < plan.Target {
		wait = min(wait, c.sched.stealAgain(c.cfg))
	}
	return wait
}

// reportThrottling logs, once per taker run, how much throttling the worker
// has absorbed since the last report; the individual retries are logged at
// debug level only, as there can be many.
func (c *Coordinator) reportThrottling() {
	throttled, retries, failed := c.stats.throttled.Load(), c.stats.retries.Load(), c.stats.renewFailures.Load()
	if throttled > c.reported.throttled || failed > c.reported.renewFailures {
		c.log.Info("DynamoDB throttled lease calls; retried", "throttled", throttled-c.reported.throttled,
			"retries", retries-c.reported.retries, "failedRenewalRounds", failed-c.reported.renewFailures)
	}
	c.reported.throttled, c.reported.retries, c.reported.renewFailures = throttled, retries, failed
}

// views turns the observations into the taker's decision input. A lease this
// worker holds and keeps renewing is its own, whatever the scan's timing; a
// lease in a KCL 3.x graceful handoff (checkpointOwner set) is never taken.
func (c *Coordinator) views(now time.Time) []leaseView {
	views := make([]leaseView, 0, len(c.seen))
	for key, o := range c.seen {
		if o.lease.Checkpoint.IsShardEnd() {
			// A finished lease needs no worker: it is neither taken nor
			// counted toward the fair share, and waits for the cleanup. (The
			// KCL counts and takes it, which only moves idle leases around.)
			continue
		}
		v := leaseView{Lease: o.lease}
		switch {
		case o.lease.LeaseOwner == c.cfg.WorkerID && c.IsHeld(key):
		case o.lease.CheckpointOwner != "":
		default:
			v.Available = o.lease.LeaseOwner == "" || o.expired(now, c.cfg.FailoverTime)
			v.VeryOld = o.lastChange.IsZero() || now.Sub(o.lastChange) > veryOldMultiplier*c.cfg.FailoverTime
		}
		views = append(views, v)
	}
	return views
}

// withOwnLeases adds the leases the table says this worker owns but it does
// not hold.
func (c *Coordinator) withOwnLeases(take []Lease) []Lease {
	planned := map[string]bool{}
	for _, l := range take {
		planned[l.LeaseKey] = true
	}
	for key, o := range c.seen {
		if o.lease.LeaseOwner == c.cfg.WorkerID && !planned[key] && !c.IsHeld(key) && o.lease.CheckpointOwner == "" {
			take = append(take, o.lease)
		}
	}
	return take
}

// refresh re-reads leases with consistent reads, keeping the scanned
// version of any read that fails.
func (c *Coordinator) refresh(ctx context.Context, leases []Lease) []Lease {
	out := make([]Lease, 0, len(leases))
	for _, l := range leases {
		cur, ok, err := GetLease(WithCapacityOp(ctx, OpSteal), c.api, c.table, l.LeaseKey, true)
		switch {
		case err != nil:
			out = append(out, l)
		case ok:
			out = append(out, cur)
		}
	}
	return out
}

// takeAll takes leases in parallel and returns how many it got. Each take is
// tried up to three times on throttling, as KCL's TAKE_RETRIES.
func (c *Coordinator) takeAll(ctx context.Context, leases []Lease, steal bool) int {
	var n sync.WaitGroup
	var mu sync.Mutex
	got := 0
	sem := make(chan struct{}, maxRenewalConcurrency)
	for _, l := range leases {
		n.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; n.Done() }()
			if c.takeOne(ctx, l, steal) {
				mu.Lock()
				got++
				mu.Unlock()
			}
		}()
	}
	n.Wait()
	return got
}

func (c *Coordinator) takeOne(ctx context.Context, l Lease, steal bool) bool {
	ctx = WithCapacityOp(ctx, takeOp(steal))
	took := false
	sleep := func(ctx context.Context, d time.Duration) error { return clock.Sleep(ctx, c.clock, d) }
	// Three tries at most: the fourth call stops before trying, so the
	// retry counted and the wait after a third retryable failure stay.
	_ = backoff.Retry(ctx, sleep, c.retryBackoff, func(attempt int) (bool, error) {
		if attempt > 3 {
			return false, nil
		}
		sent := c.clock.Now()
		taken, ok, err := TakeLease(ctx, c.api, c.table, l, c.cfg.WorkerID)
		if err == nil {
			if !ok {
				return false, nil // somebody else's write came first
			}
			// A steal took a lease that had not expired and was not released
			// (a re-read may show it released since the scan): its old owner
			// may still be running a handler until it notices.
			var from string
			var notBefore time.Time
			if steal && l.LeaseOwner != "" && l.LeaseOwner != c.cfg.WorkerID {
				from, notBefore = l.LeaseOwner, c.clock.Now().Add(c.cfg.StealWait())
			}
			if steal {
				c.stats.stolen.Add(1)
				c.log.Info("stole lease", "lease", l.LeaseKey, "from", l.LeaseOwner)
			} else {
				c.stats.taken.Add(1)
			}
			c.gain(taken, sent, from, notBefore)
			took = true
			return false, nil
		}
		if ctx.Err() != nil || (awserr.Code(err) != "" && !awserr.Retryable(err)) {
			c.log.Warn("could not take lease", "lease", l.LeaseKey, "err", err)
			return false, err
		}
		c.stats.retries.Add(1)
		return true, err
	})
	return took
}

// nextRun is the wait until the next taker run: the scan pacing, or sooner
// if a lease looks abandoned. A lease whose counter has not moved for 1.5
// renew intervals has missed a renewal; the taker then wakes just after the
// failover time would expire it, rather than up to a whole interval later.
// Healthy leases never trigger this, so it costs a scan only per suspect.
func (c *Coordinator) nextRun(now time.Time, wait time.Duration) time.Duration {
	for key, o := range c.seen {
		if o.lease.LeaseOwner == "" || o.lastChange.IsZero() || o.lease.CheckpointOwner != "" ||
			o.expired(now, c.cfg.FailoverTime) || now.Sub(o.lastChange) <= c.cfg.RenewInterval*3/2 {
			continue
		}
		if o.lease.LeaseOwner == c.cfg.WorkerID && c.IsHeld(key) {
			continue
		}
		if d := o.lastChange.Add(c.cfg.FailoverTime + c.cfg.Epsilon).Sub(now); d < wait {
			wait = max(d, c.cfg.Epsilon)
		}
	}
	return wait
}

// warnForeign logs items the taker skips: malformed leases, and non-lease
// items, a sign that a KCL 3.5 application shares the table (the caller's
// mode detection, coordination.Detect, then switches this coordinator to
// the leader's assignment). Each is logged when it first appears, not on
// every run.
func (c *Coordinator) warnForeign(res ScanResult) {
	now := map[string]bool{}
	for _, m := range res.Malformed {
		msg := m.Error()
		now[msg] = true
		if !c.warned[msg] {
			c.log.Warn("skipping malformed lease item", "err", m)
		}
	}
	for _, n := range res.NonLeases {
		msg := "non-lease " + n.String()
		now[msg] = true
		if !c.warned[msg] {
			c.log.Warn("skipping non-lease item (written by a KCL 3.5 application?)", "item", n.String())
		}
	}
	c.warned = now
}
