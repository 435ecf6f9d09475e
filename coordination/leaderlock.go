package coordination

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/kcltool/kcltool/internal/clock"
)

// LeaderLockConfig configures the leader election (issue 26, point 1).
type LeaderLockConfig struct {
	// Owner is the worker id, written as ownerName.
	Owner string
	// LeaseDuration is written as the item's leaseDuration: how long a
	// contender waits on an unchanged recordVersionNumber before taking
	// the lock over. kcltool's default is 2 × the failover time.
	LeaseDuration time.Duration
}

// ErrLockLost: a heartbeat or release found the lock no longer ours.
var ErrLockLost = errors.New("leader lock lost")

// LeaderLock is one worker's side of the KCL 3.x leader election: the
// Leader item as dynamodb-lock-client writes it.
type LeaderLock struct {
	api   WriteAPI
	t     Tables
	cfg   LeaderLockConfig
	clock clock.Clock
	log   *slog.Logger
}

// NewLeaderLock makes the election for one worker; it writes nothing.
func NewLeaderLock(api WriteAPI, t Tables, cfg LeaderLockConfig, clk clock.Clock, log *slog.Logger) *LeaderLock {
	return &LeaderLock{api: api, t: t, cfg: cfg, clock: clk, log: log}
}

// Poll is one election step under state st (which says where the lock
// lives): it heartbeats a lock this worker holds, or tries to acquire a
// free or stale one. It reports whether this worker holds the lock now.
func (l *LeaderLock) Poll(ctx context.Context, st State) (leader bool, err error) {
	return false, errors.New("leader lock: not built yet")
}

// IsLeader reports whether the last Poll left this worker holding the lock.
func (l *LeaderLock) IsLeader() bool { return false }

// Release deletes the lock if this worker holds it (a graceful stop).
func (l *LeaderLock) Release(ctx context.Context, st State) error { return nil }
