package leasecore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/internal/backoff"
	"github.com/kcltool/kcltool/internal/clock"
)

// Assignment says who decides which leases this worker holds
// (docs/kcl3.md).
type Assignment int

const (
	// AssignByTaking is the KCL 2.x protocol: the worker scans the table,
	// takes expired or unowned leases and steals toward an even share.
	AssignByTaking Assignment = iota
	// AssignByLeader is the KCL 3.x protocol: an elected leader writes
	// leaseOwner; the worker finds its leases through the
	// LeaseOwnerToLeaseKeyIndex, never takes or steals, renews with the 3.x
	// condition and hands leases over gracefully when the leader asks.
	AssignByLeader
)

func (a Assignment) String() string {
	if a == AssignByLeader {
		return "leader"
	}
	return "taking"
}

// DefaultHandoffTimeout is KCL 3.x's gracefulLeaseHandoffTimeoutMillis.
const DefaultHandoffTimeout = 30 * time.Second

// SetAssignment switches the protocol at run time (a migration state
// change seen by the worker). Held leases stay held: from AssignByTaking
// to AssignByLeader the taker stops and the discoverer starts, and
// renewals use the 3.x condition from the next round; the other way round
// the discoverer stops and the taker starts.
func (c *Coordinator) SetAssignment(a Assignment) {
	if a != AssignByLeader {
		a = AssignByTaking
	}
	if Assignment(c.assign.Swap(int32(a))) == a {
		return
	}
	c.log.Info("lease assignment switched", "assignment", a)
	if a == AssignByLeader {
		if _, ok := c.api.api.(QueryAPI); !ok {
			c.log.Error("cannot discover the leases the leader assigns", "err", errNoQuery)
		}
		c.kickDiscoverer()
	} else {
		c.Kick()
	}
}

// Assignment is the protocol in force.
func (c *Coordinator) Assignment() Assignment { return Assignment(c.assign.Load()) }

// RecordBytes adds n bytes read from the lease's shard since the last
// renewal; the 3.x renewal turns them into throughputKBps (leasestats.go).
// Bytes of a lease not held are not kept.
func (c *Coordinator) RecordBytes(key string, n int64) {
	if n <= 0 || c.lookup(key) == nil {
		return
	}
	c.tput.record(key, n, c.clock.Now())
}

// CompleteHandoff writes the transfer of a lease this worker was asked to
// hand over (a LeaseHandoff event): the KCL's assignLease write to the
// next owner, conditioned on leaseOwner = next owner and checkpointOwner =
// this worker; it removes checkpointOwner and adds 1 to the counter. The
// caller has stopped the shard's handler and written its last checkpoint.
// The lease is then dropped with a LeaseHandedOff event.
//
// Throttles and transient errors are retried within the failover time.
// A condition failure whose read shows the lease already with the next
// owner and no checkpointOwner counts as done; any other is a lost lease
// (ErrLeaseLost, LeaseLost event). As LeaseGracefulShutdownHandler, a
// lease this worker no longer holds (not renewed within the failover time)
// is not written.
func (c *Coordinator) CompleteHandoff(ctx context.Context, key string) error {
	hl := c.lookup(key)
	if hl == nil {
		return &LeaseLostError{LeaseKey: key, Op: "handoff", Reason: "not held by this worker"}
	}
	hl.mu.Lock()
	defer hl.mu.Unlock()
	if hl.dropped {
		return &LeaseLostError{LeaseKey: key, Op: "handoff", Reason: "not held by this worker"}
	}
	if hl.lease.CheckpointOwner != c.cfg.WorkerID {
		return fmt.Errorf("hand off lease %s: no handoff from this worker is pending", key)
	}
	deadline := c.clock.Now().Add(c.cfg.FailoverTime)
	var wait time.Duration
	sleep := func(ctx context.Context, d time.Duration) error { return clock.Sleep(ctx, c.clock, d) }
	return backoff.Retry(ctx, sleep, func(int) time.Duration { return wait }, func(attempt int) (bool, error) {
		now := c.clock.Now()
		if !c.fresh(hl, now) {
			err := c.expiredLocally(hl, "handoff", now)
			c.drop(hl, LeaseLost, err)
			return false, err
		}
		l, err := HandoffLease(WithCapacityOp(ctx, OpHandoff), c.api, c.table, hl.lease, c.cfg.WorkerID)
		switch {
		case err == nil:
			hl.lease = l
			c.drop(hl, LeaseHandedOff, nil)
			return false, nil
		case errors.Is(err, ErrLeaseLost):
			c.drop(hl, LeaseLost, err)
			return false, err
		case ctx.Err() != nil || awserr.Rejected(err):
			return false, err
		}
		wait = c.retryBackoff(attempt)
		if c.clock.Now().Add(wait).After(deadline) {
			return false, err
		}
		c.stats.retries.Add(1)
		c.log.Debug("retrying the handoff write", "lease", key, "attempt", attempt, "err", err)
		return true, err
	}, backoff.OpErrorOnCut)
}

// adoptHandoff takes the handoff the leader started into the held lease
// (DynamoDBLeaseRefresher.handleGracefulShutdown copies checkpointOwner
// and leaseOwner, not the counter, which the handoff left alone) and
// reports it once per holding. The caller holds hl.mu.
func (c *Coordinator) adoptHandoff(hl *heldLease, read Lease) {
	hl.lease.LeaseOwner, hl.lease.CheckpointOwner = read.LeaseOwner, read.CheckpointOwner
	if hl.handoffSeen {
		return
	}
	hl.handoffSeen = true
	c.stats.handoffs.Add(1)
	c.log.Info("the leader asked for a graceful handoff of this lease", "lease", hl.lease.LeaseKey, "to", read.LeaseOwner)
	c.events.push(LeaseEvent{Kind: LeaseHandoff, Lease: hl.lease, Tenure: hl.tenure})
}
