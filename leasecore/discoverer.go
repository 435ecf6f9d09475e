package leasecore

import (
	"context"
	"errors"
	"sync"
	"time"
)

// discoverLoop runs the KCL 3.x lease discoverer at a fixed rate, every
// Config.DiscoveryInterval from the start (DynamoDBLeaseCoordinator
// schedules LeaseDiscoveryRunnable at fixed rate, first run at once). It
// only works while the assignment is AssignByLeader; SetAssignment wakes
// it at once.
func (c *Coordinator) discoverLoop(ctx context.Context) {
	interval := c.cfg.DiscoveryInterval()
	for {
		// Out of leader mode (or after StopTaking) the loop holds no timer:
		// a 2.x worker's clock sees no wake-ups of it.
		// Idle until woken: nothing to watch meanwhile.
		LoopOf(ctx).Park()
		for c.Assignment() != AssignByLeader || c.noTaking.Load() {
			select {
			case <-ctx.Done():
				return
			case <-c.discoverPoke:
			}
		}
		LoopOf(ctx).Unpark()
		next := c.clock.Now()
		for c.Assignment() == AssignByLeader && !c.noTaking.Load() {
			LoopOf(ctx).Beat()
			c.discover(ctx)
			if ctx.Err() != nil {
				return
			}
			next = next.Add(interval)
			wait := next.Sub(c.clock.Now())
			if wait <= 0 {
				next, wait = c.clock.Now(), 0 // fell behind: skip the missed ticks
			}
			t := c.clock.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			case <-c.discoverPoke:
				t.Stop()
				next = c.clock.Now()
			}
		}
	}
}

func (c *Coordinator) kickDiscoverer() {
	select {
	case c.discoverPoke <- struct{}{}:
	default:
	}
}

// discover is one run of DynamoDBLeaseDiscoverer.discoverNewLeases: query
// the LeaseOwnerToLeaseKeyIndex for this worker's leases, read each one not
// held (consistent GetItem, as the KCL's lease refresher is built with
// consistent reads) and gain it as read, with no write: the leader's
// assignLease already bumped the counter, and the next renewal conditions
// on the counter read. A lease is skipped when the item shows another owner
// (the index lags the table) or a checkpointOwner (a handoff to this worker
// that its old owner has not completed: the shard must not start before
// that worker has stopped and checkpointed). It never takes, steals or
// writes leaseOwner. Failed reads are skipped until the next run, as the
// KCL's fetchLease.
func (c *Coordinator) discover(ctx context.Context) {
	c.stats.indexQueries.Add(1)
	keys, err := QueryOwnedKeys(WithCapacityOp(ctx, OpDiscover), c.api, c.table, c.cfg.WorkerID)
	c.health.LeaseCall(ctx, OpDiscover, err)
	if err != nil {
		if ctx.Err() == nil {
			lvl := c.log.Warn
			if errors.Is(err, errNoQuery) {
				lvl = c.log.Error
			}
			lvl("lease discovery could not query the lease owner index", "err", err)
		}
		return
	}
	listed := make(map[string]bool, len(keys))
	var fresh []string
	for _, key := range keys {
		listed[key] = true
		if c.lookup(key) == nil {
			fresh = append(fresh, key)
		}
	}
	// The reads run in parallel, as the KCL's fetchLease calls on its
	// discovery thread pool: a worker given many leases at once (its start,
	// a rebalance) gains them within one run's time, not one read each.
	type read struct {
		sent  time.Time
		l     Lease
		found bool
		err   error
	}
	reads := make([]read, len(fresh))
	sem := make(chan struct{}, maxRenewalConcurrency)
	var wg sync.WaitGroup
	for i, key := range fresh {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			r := &reads[i]
			r.sent = c.clock.Now()
			r.l, r.found, r.err = GetLease(WithCapacityOp(ctx, OpDiscover), c.api, c.table, key, true)
		}()
	}
	wg.Wait()
	for i, key := range fresh {
		if c.noTaking.Load() || ctx.Err() != nil || c.Assignment() != AssignByLeader {
			break
		}
		l, r := reads[i].l, reads[i]
		switch {
		case r.err != nil:
			c.skip(key, "read failed", "err", r.err)
			continue
		case !r.found:
			c.skip(key, "deleted")
			continue
		case l.LeaseOwner != c.cfg.WorkerID:
			c.skip(key, "owned by another worker (the index lags)", "owner", l.LeaseOwner)
			continue
		case l.CheckpointOwner != "":
			c.skip(key, "waiting for the graceful handoff from its old owner", "checkpointOwner", l.CheckpointOwner)
			continue
		case c.include != nil && !c.include(l):
			c.skip(key, "not this worker's business (Include)")
			continue
		case c.lookup(key) != nil:
			continue
		}
		delete(c.skipped, key)
		c.tput.seed(key, l.ThroughputKBps, r.sent)
		c.stats.discovered.Add(1)
		c.log.Info("lease assigned by the leader", "lease", key, "leaseCounter", l.LeaseCounter)
		c.gain(l, r.sent, "", time.Time{})
	}
	for key := range c.skipped {
		if !listed[key] {
			delete(c.skipped, key)
		}
	}
}

// skip logs why a listed lease was not gained, once per key and reason:
// the discoverer runs every ten seconds and a handoff may last thirty.
func (c *Coordinator) skip(key, reason string, args ...any) {
	if c.skipped[key] == reason {
		return
	}
	c.skipped[key] = reason
	c.log.Info("lease discovery skips a lease", append([]any{"lease", key, "reason", reason}, args...)...)
}
