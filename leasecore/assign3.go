package leasecore

import (
	"context"
	"errors"
	"time"
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

// errNotYet marks the 3.x entry points that are declared before they are
// built (issue 25's parts are built in parallel against these signatures).
var errNotYet = errors.New("KCL 3.x lease protocol: not implemented yet")

// SetAssignment switches the protocol at run time (a migration state
// change seen by the worker). Held leases stay held: from AssignByTaking
// to AssignByLeader the taker stops and the discoverer starts, and
// renewals use the 3.x condition from the next round; the other way round
// the discoverer stops and the taker starts.
func (c *Coordinator) SetAssignment(a Assignment) { _ = a }

// Assignment is the protocol in force.
func (c *Coordinator) Assignment() Assignment { return AssignByTaking }

// RecordBytes adds n bytes read from the lease's shard since the last
// renewal; the 3.x renewal turns them into throughputKBps.
func (c *Coordinator) RecordBytes(key string, n int64) { _, _ = key, n }

// CompleteHandoff writes the transfer of a lease this worker was asked to
// hand over (a LeaseHandoff event): the KCL's assignLease write to the
// next owner, conditioned on leaseOwner = next owner and checkpointOwner =
// this worker; it removes checkpointOwner and adds 1 to the counter. The
// caller has stopped the shard's handler and written its last checkpoint.
// The lease is then dropped with a LeaseHandedOff event.
func (c *Coordinator) CompleteHandoff(ctx context.Context, key string) error {
	_, _ = ctx, key
	return errNotYet
}
