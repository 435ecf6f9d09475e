package leasecore

import (
	"context"
	"errors"
	"fmt"
	"github.com/kcltool/kcltool/internal/clock"
	"slices"
	"time"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/internal/backoff"
)

// ErrCheckpointBehind refuses a checkpoint lower than the lease's current
// one, as KCL's checkpointer does: going back is an operator's reset, not
// something a processor does by accident.
var ErrCheckpointBehind = errors.New("checkpoint is behind the lease's current checkpoint")

// Checkpoint writes cp as the checkpoint of a lease this worker holds. It is
// refused locally, without a DynamoDB call, when the lease is not held or
// its last successful renewal is older than the failover time; and it fails
// with ErrLeaseLost when the counter-conditioned write finds that another
// worker has taken the lease. Either way the lease is dropped at once and a
// LeaseLost event follows. A successful checkpoint also counts as a renewal.
func (c *Coordinator) Checkpoint(ctx context.Context, key string, cp SequenceNumber) error {
	return c.CheckpointTenure(ctx, key, 0, cp)
}

// CheckpointTenure is Checkpoint for one holding of the lease (the Tenure of
// its LeaseGained event; 0 accepts any). If the lease was lost and taken
// again since, the processor of the old holding gets ErrLeaseLost rather
// than writing into the new one (KCL's concurrencyToken).
func (c *Coordinator) CheckpointTenure(ctx context.Context, key string, tenure uint64, cp SequenceNumber) error {
	if !ValidCheckpoint(cp.SequenceNumber) {
		return fmt.Errorf("checkpoint lease %s: %q is not a sequence number or sentinel", key, cp.SequenceNumber)
	}
	hl := c.lookup(key)
	if hl == nil {
		return &LeaseLostError{LeaseKey: key, Op: "checkpoint", Reason: "not held by this worker"}
	}
	hl.mu.Lock()
	defer hl.mu.Unlock()
	if hl.dropped || (tenure != 0 && tenure != hl.tenure) {
		return &LeaseLostError{LeaseKey: key, Op: "checkpoint", Reason: "not held by this worker"}
	}
	if Compare(cp, hl.lease.Checkpoint) < 0 {
		return fmt.Errorf("checkpoint lease %s at %s/%d: %w (%s/%d)", key, cp.SequenceNumber, cp.SubSequenceNumber,
			ErrCheckpointBehind, hl.lease.Checkpoint.SequenceNumber, hl.lease.Checkpoint.SubSequenceNumber)
	}
	// wait is 0 after a lost answer that had been applied: the checkpoint
	// is tried again at once.
	var wait time.Duration
	sleep := func(ctx context.Context, d time.Duration) error { return clock.Sleep(ctx, c.clock, d) }
	return backoff.Retry(ctx, sleep, func(int) time.Duration { return wait }, func(attempt int) (bool, error) {
		sent := c.clock.Now()
		if !c.fresh(hl, sent) {
			err := c.expiredLocally(hl, "checkpoint", sent)
			c.drop(hl, LeaseLost, err)
			return false, err
		}
		// Each request has its own deadline (Config.ItemTimeout), so a hung
		// connection cannot hold the lease's lock (and so its renewals)
		// past the failover time.
		l, err := checkpointLease(WithCapacityOp(ctx, OpCheckpoint), c.api, c.table, hl.lease, cp, hl.unknownCheckpoints)
		var own *OwnWriteError
		switch {
		case err == nil:
			hl.applied(l, sent)
			c.stats.checkpoints.Add(1)
			if l.CheckpointOwner == c.cfg.WorkerID && l.LeaseOwner != c.cfg.WorkerID {
				// The item written back shows a KCL 3.x handoff the renewer
				// has not seen yet: the next renewal carries no
				// checkpointOwner condition to fail, so report it now.
				c.adoptHandoff(hl, l)
			}
			return false, nil
		case errors.As(err, &own):
			// A renewal whose answer was lost had been applied: the lease
			// is still this worker's, at the counter the read shows.
			c.log.Debug("a renewal whose answer was lost had been applied; checkpointing at the counter read back",
				"lease", key, "leaseCounter", own.Current.LeaseCounter)
			if hl.unknownSince.IsZero() {
				hl.lease = own.Current // when it was applied is unknown: the holding keeps its date
			} else {
				hl.applied(own.Current, hl.unknownSince)
			}
			wait = 0
			return true, err
		case errors.Is(err, ErrLeaseLost):
			c.drop(hl, LeaseLost, err)
			return false, err
		}
		if !awserr.Throttled(err) && !awserr.Rejected(err) {
			// Maybe applied: the next write's condition failure and read
			// will tell, even if this call gives up now.
			hl.unresolved(sent, err)
			if !slices.Contains(hl.unknownCheckpoints, cp) {
				hl.unknownCheckpoints = append(hl.unknownCheckpoints, cp)
			}
		}
		if ctx.Err() != nil || awserr.Rejected(err) {
			return false, err // throttles, server faults and network errors are worth another try
		}
		c.stats.retries.Add(1)
		c.log.Debug("retrying checkpoint", "lease", key, "attempt", attempt, "err", err)
		wait = c.retryBackoff(attempt)
		return true, err
	}, backoff.OpErrorOnCut)
}
