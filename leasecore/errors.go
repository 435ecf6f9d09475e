package leasecore

import (
	"errors"
	"fmt"
)

// ErrLeaseLost means this worker no longer holds a lease: a counter- or
// owner-conditioned write found the item changed (another worker took or
// stole it, or an operator reset it), or the worker's own last successful
// renewal is older than the failover time. Whatever the cause, the worker
// must stop processing the shard and must not write its checkpoint.
var ErrLeaseLost = errors.New("lease lost")

// ErrLeaseNotFound means a write that only updates an existing lease found
// no lease item under that key.
var ErrLeaseNotFound = errors.New("lease not found")

// LeaseLostError is the detailed form of ErrLeaseLost; errors.Is(err,
// ErrLeaseLost) is true for it.
type LeaseLostError struct {
	LeaseKey string
	Op       string // the operation that noticed: renew, checkpoint, release, ...
	Reason   string // e.g. "leaseCounter changed", "not renewed for 10s"
}

func (e *LeaseLostError) Error() string {
	return fmt.Sprintf("%s lease %s: lease lost: %s", e.Op, e.LeaseKey, e.Reason)
}

// Is makes errors.Is(err, ErrLeaseLost) hold.
func (e *LeaseLostError) Is(target error) bool { return target == ErrLeaseLost }

// TableNotFoundError says the lease table does not exist. Region is filled in
// when the client can tell it.
type TableNotFoundError struct {
	Table  string
	Region string
}

func (e *TableNotFoundError) Error() string {
	return e.Say(func(setting string) string { return "the " + setting + " option" })
}

// Say is Error with the setting it suggests (create-table) said by name:
// cmd says it as its flag.
func (e *TableNotFoundError) Say(name func(setting string) string) string {
	where := ""
	if e.Region != "" {
		where = " in " + e.Region
	}
	return fmt.Sprintf("lease table %q not found%s (is the application name right? pass %s to create it the way the KCL does)", e.Table, where, name("create-table"))
}

// UnresolvedError says a conditional write failed its condition and the
// read that should have told why failed too: the lease's state is unknown,
// not lost. The caller tries again; only a read that shows another owner or
// an unexpected counter, or the worker's own lease deadline, ends a holding.
type UnresolvedError struct {
	LeaseKey string
	Op       string
	Err      error // the failed read
}

func (e *UnresolvedError) Error() string {
	return fmt.Sprintf("%s lease %s: condition failed and the read back failed: %v", e.Op, e.LeaseKey, e.Err)
}

func (e *UnresolvedError) Unwrap() error { return e.Err }

// OwnWriteError says a checkpoint's condition failed because an earlier
// write of this very worker (a renewal or checkpoint whose answer was lost)
// moved the counter on by one: Current is the lease as read, to condition
// the next attempt on.
type OwnWriteError struct {
	Current Lease
}

func (e *OwnWriteError) Error() string {
	return fmt.Sprintf("lease %s: leaseCounter is %d after an earlier write of this worker whose answer was lost", e.Current.LeaseKey, e.Current.LeaseCounter)
}
