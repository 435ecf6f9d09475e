package coordination

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/internal/clock"
)

// DefaultLeaderLeaseDuration is kcltool's leaseDuration for the lock: 2 ×
// the default failover time (KCL 3.x writes 120 s,
// dynamoDbLockBasedLeaderLeaseDurationInMillis). Contenders, Java ones
// included, time a stale lock by the item's own leaseDuration, so a
// shorter one is replaced sooner.
const DefaultLeaderLeaseDuration = 20 * time.Second

// LeaderLockConfig configures the leader election (issue 26, point 1).
type LeaderLockConfig struct {
	// Owner is the worker id, written as ownerName.
	Owner string
	// LeaseDuration is written as the item's leaseDuration: how long a
	// contender waits on an unchanged recordVersionNumber before taking
	// the lock over. kcltool's default is 2 × the failover time; zero
	// takes DefaultLeaderLeaseDuration.
	LeaseDuration time.Duration
	// HeartbeatPeriod is how often a holder heartbeats, one per Poll
	// (PollInterval, NextPoll). Zero, or more than a third of LeaseDuration, takes a
	// quarter of LeaseDuration: the KCL's own ratio (30 s heartbeats for a
	// 120 s lease, dynamoDbLockBasedLeaderHeartbeatPeriodInMillis), which
	// lets a holder miss two heartbeats and keep the lock.
	HeartbeatPeriod time.Duration
	// ContendPeriod is how often a worker that does not hold the lock
	// reads it (NextPoll); zero takes half of LeaseDuration (10 s at the
	// default lease). Each read is one consistent GetItem (1 read unit)
	// per worker: a longer period costs fewer reads in a large fleet and
	// delays the first sight of a dead holder's last version, hence the
	// takeover, by as much. The fleet simulation measured the non-leaders'
	// reads at 5 s (the heartbeat period, as the KCL decider caches a "not
	// leader" answer) as most of the leader's cost at 1,000 leases × 100
	// workers; at half the lease a dead leader is still replaced within
	// the lease plus two assignment intervals.
	ContendPeriod time.Duration
}

// ErrLockLost: a heartbeat found the lock no longer ours (another worker
// took it over, or it was deleted). Poll returns it once, at the loss.
var ErrLockLost = errors.New("leader lock lost")

// LeaderLockStats counts the election's outcomes for the runner's metrics.
type LeaderLockStats struct {
	// Acquired counts the times this worker became leader: a free lock, a
	// stale one taken over, or its own lock again after heartbeats that
	// failed for a while and then went through.
	Acquired int64
	// TakenOver counts the acquisitions of a stale lock of another owner.
	TakenOver int64
	// Lost counts the times it stopped being leader other than by
	// Release: a heartbeat that found the lock taken, or heartbeats
	// unconfirmed for the validity (LeaseDuration - HeartbeatPeriod).
	Lost int64
	// Released counts graceful releases of a lock held.
	Released int64
}

// LeaderLock is one worker's side of the KCL 3.x leader election: the
// Leader item as dynamodb-lock-client writes it (leaderlock_writes.go).
//
// How it decides (DynamoDBLockBasedLeaderDecider.isLeader with lock
// client 1.4.0, but for the stale lock, where it follows lock client
// commit 56fc9a1):
//
//   - a holder sends one heartbeat per Poll; a conditional failure is the
//     loss (sendHeartbeat's LockNotGrantedException);
//   - a holder whose heartbeats have not been confirmed for LeaseDuration
//     minus one heartbeat period stops calling itself leader (IsLeader),
//     even before it learns anything: a contender times the stale lock
//     from the moment it first read the version, which is after the
//     holder sent the write that set it (the holder times its own lease
//     from the send, as sendHeartbeat's lastUpdateOfLock); the margin of
//     one heartbeat period covers a write the leader has in flight when
//     its time runs out and any clock-rate difference;
//   - a contender reads the item (a consistent GetItem): no item, or one
//     marked isReleased, is taken at once; another owner's item is taken
//     over only when this contender has seen the same recordVersionNumber
//     for longer than the item's own leaseDuration, timed from its first
//     sight of that version (56fc9a1's LockObservation: a freshly read
//     item's own lookupTime is the read, so it never looks stale). The
//     KCL 3.5.1 decider itself never takes over a lock it can read: it
//     calls tryAcquireLock only when getLock finds none or an expired one,
//     and getLock's item is always fresh (KCL issue #1803);
//   - a read that fails leaves the contender not leader, as the decider's
//     getLock failure does.
type LeaderLock struct {
	api   WriteAPI
	t     Tables
	cfg   LeaderLockConfig
	clock clock.Clock
	log   *slog.Logger

	step sync.Mutex // one Poll or Release at a time

	mu sync.Mutex // guards the fields below; never held across a call
	// held is the lock this worker holds, per table: the current one and,
	// after the table migration moved the lock, the old one, kept alive as
	// the KCL's legacy lock client keeps heartbeating it until shutdown.
	held map[string]*heldLock
	// current is the table the last Poll's state puts the lock in.
	current string
	leader  bool
	seen    *lockObservation
	// pending is a write whose outcome is unknown (a transport error): if
	// the item later shows this owner and that version, it was ours.
	pending map[string]heldLock
	stats   LeaderLockStats
	// tookOverFrom is the owner of the stale lock the last acquisition
	// replaced, and when this worker first saw that owner's last version.
	tookOverFrom     string
	tookOverLastSeen time.Time
}

type heldLock struct {
	table, keyAttr string
	version        string
	sent           time.Time // when the write that set version was sent
}

// lockObservation is what a contender remembers of another owner's lock:
// the version, when it first saw it, and the item's leaseDuration then.
type lockObservation struct {
	table, owner, version string
	firstSeen             time.Time
	leaseDuration         time.Duration
}

// NewLeaderLock makes the election for one worker; it writes nothing.
func NewLeaderLock(api WriteAPI, t Tables, cfg LeaderLockConfig, clk clock.Clock, log *slog.Logger) *LeaderLock {
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = DefaultLeaderLeaseDuration
	}
	if cfg.HeartbeatPeriod <= 0 || cfg.HeartbeatPeriod > cfg.LeaseDuration/3 {
		cfg.HeartbeatPeriod = cfg.LeaseDuration / 4
	}
	if cfg.ContendPeriod <= 0 {
		cfg.ContendPeriod = cfg.LeaseDuration / 2
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &LeaderLock{
		api: api, t: t, cfg: cfg, clock: clk, log: log,
		held: map[string]*heldLock{}, pending: map[string]heldLock{},
	}
}

// PollInterval is the heartbeat period (a quarter of LeaseDuration by
// default, 5 s for 20 s): how often a holder must Poll. NextPoll says
// when to Poll next in either role.
func (l *LeaderLock) PollInterval() time.Duration { return l.cfg.HeartbeatPeriod }

// NextPoll is how long the runner should wait before the next Poll: the
// heartbeat period while this worker holds the lock; otherwise the
// ContendPeriod, or less when a lock it watches turns stale sooner (its
// first sight + the item's leaseDuration + 1 ms), so that a dead holder
// is replaced at the earliest moment the rule allows rather than up to
// one period later.
func (l *LeaderLock) NextPoll() time.Duration {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[l.current] != nil {
		return l.cfg.HeartbeatPeriod
	}
	d := l.cfg.ContendPeriod
	if o := l.seen; o != nil {
		if due := o.firstSeen.Add(o.leaseDuration + time.Millisecond).Sub(now); due < d {
			d = max(due, 0)
		}
	}
	return d
}

// LeaseDuration is the leaseDuration this worker writes.
func (l *LeaderLock) LeaseDuration() time.Duration { return l.cfg.LeaseDuration }

// validity is how long after sending its last confirmed write a holder
// still calls itself leader (see the type's doc for the margin).
func (l *LeaderLock) validity() time.Duration { return l.cfg.LeaseDuration - l.cfg.HeartbeatPeriod }

// Poll is one election step under state st (which says where the lock
// lives): it heartbeats a lock this worker holds, or tries to acquire a
// free or stale one. It reports whether this worker holds the lock now.
// err is ErrLockLost when a heartbeat found the lock taken, or the
// failure of a read or write (the lock is then kept until its validity
// runs out, or not acquired).
func (l *LeaderLock) Poll(ctx context.Context, st State) (leader bool, err error) {
	l.step.Lock()
	defer l.step.Unlock()
	table, keyAttr := st.LockTable(l.t)

	l.mu.Lock()
	moved := l.current != "" && l.current != table
	l.current = table
	var others []*heldLock
	for tb, h := range l.held {
		if tb != table {
			others = append(others, h)
		}
	}
	cur := l.held[table]
	l.mu.Unlock()
	if moved {
		l.log.Info("leader lock: the lock's table changed", "table", table)
	}

	// A lock left in the table the lock moved from (the table migration's
	// step to COMPLETE) is kept alive: a worker that has not seen the step
	// yet still reads it there.
	for _, h := range others {
		if err := l.heartbeat(ctx, h, false); err != nil && !errors.Is(err, ErrLockLost) {
			l.log.Debug("leader lock: heartbeat of the lock in the former table failed", "table", h.table, "err", err)
		}
	}
	if cur != nil {
		err = l.heartbeat(ctx, cur, true)
	} else {
		err = l.contend(ctx, table, keyAttr)
	}
	return l.IsLeader(), err
}

// TookOverFrom names the owner of the stale lock that this worker's last
// acquisition replaced, and when this worker first saw that owner's last
// version: the owner has not heartbeat since, and is most likely dead.
// owner is "" when the lock was free or released.
func (l *LeaderLock) TookOverFrom() (owner string, lastSeen time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tookOverFrom, l.tookOverLastSeen
}

// IsLeader reports whether this worker holds the lock where the last
// Poll's state puts it and its last confirmed heartbeat is recent enough
// (LeaseDuration - HeartbeatPeriod). It turns false on its own when
// heartbeats stop going through, before any write tells of a loss.
func (l *LeaderLock) IsLeader() bool {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.held[l.current]
	ok := h != nil && now.Sub(h.sent) < l.validity()
	switch {
	case !l.leader || ok:
	case h != nil:
		l.setLeaderLocked(false, "leader lock: heartbeats unconfirmed, no longer leader",
			"table", h.table, "last_confirmed_ago", now.Sub(h.sent).String())
	default:
		// The lock moved table (the table migration) and someone else
		// holds it there.
		l.setLeaderLocked(false, "leader lock: not held in the lock's new table, no longer leader", "table", l.current)
	}
	return ok
}

// Stats returns the counters so far.
func (l *LeaderLock) Stats() LeaderLockStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// setLeaderLocked records a change of leadership, counts and logs it
// (Release records its own, not counted as a loss).
func (l *LeaderLock) setLeaderLocked(leader bool, msg string, attrs ...any) {
	if leader == l.leader {
		return
	}
	l.leader = leader
	if leader {
		l.stats.Acquired++
	} else {
		l.stats.Lost++
	}
	l.log.Info(msg, append([]any{"owner", l.cfg.Owner}, attrs...)...)
}

// heartbeat is sendHeartbeat for a lock held. current: the lock in the
// table the state names (its loss is a loss of leadership).
func (l *LeaderLock) heartbeat(ctx context.Context, h *heldLock, current bool) error {
	l.mu.Lock()
	version := h.version
	l.mu.Unlock()
	next := newRecordVersion()
	sent := l.clock.Now()
	err := heartbeatLock(ctx, l.api, h.table, h.keyAttr, l.cfg.Owner, version, next, l.cfg.LeaseDuration)
	switch {
	case err == nil:
		l.mu.Lock()
		h.version, h.sent = next, sent
		delete(l.pending, h.table)
		if current {
			l.setLeaderLocked(true, "leader lock: heartbeat went through again, leader", "table", h.table)
		}
		l.mu.Unlock()
		return nil
	case awserr.ConditionFailed(err):
		// Our previous heartbeat may have been applied though its answer was
		// lost: the item then holds the version we tried.
		item, rerr := readLockItem(ctx, l.api, h.table, h.keyAttr)
		l.mu.Lock()
		if p, ok := l.pending[h.table]; ok && rerr == nil && item != nil && item.owner == l.cfg.Owner && item.version == p.version {
			h.version, h.sent = p.version, p.sent
			delete(l.pending, h.table)
			l.mu.Unlock()
			return l.heartbeat(ctx, h, current)
		}
		delete(l.held, h.table)
		delete(l.pending, h.table)
		by := ""
		if item != nil {
			by = item.owner
		}
		if current {
			l.setLeaderLocked(false, "leader lock lost", "table", h.table, "now_held_by", by)
			// A loss found while IsLeader had already turned false was
			// counted then; the lock is gone either way.
		}
		l.mu.Unlock()
		return ErrLockLost
	default:
		l.mu.Lock()
		l.pending[h.table] = heldLock{table: h.table, keyAttr: h.keyAttr, version: next, sent: sent}
		l.mu.Unlock()
		return err
	}
}

// contend is the decider's path for a worker that holds no lock: read the
// item, then take it if it is free or seen stale.
func (l *LeaderLock) contend(ctx context.Context, table, keyAttr string) error {
	item, err := readLockItem(ctx, l.api, table, keyAttr)
	if err != nil {
		return err
	}
	// The lock client's lookupTime: taken once the read has returned.
	now := l.clock.Now()
	observed, from, after := "", "", time.Duration(0)
	if item != nil {
		l.mu.Lock()
		if p, ok := l.pending[table]; ok && item.owner == l.cfg.Owner && item.version == p.version {
			// Our own acquisition, applied though its answer was lost.
			l.held[table] = &heldLock{table: table, keyAttr: keyAttr, version: p.version, sent: p.sent}
			delete(l.pending, table)
			l.seen = nil
			l.setLeaderLocked(true, "leader lock acquired", "table", table, "lease_duration", l.cfg.LeaseDuration.String())
			l.mu.Unlock()
			return nil
		}
		if !item.released {
			o := l.seen
			if o == nil || o.table != table || o.version != item.version {
				d := item.leaseDuration
				if d <= 0 {
					d = l.cfg.LeaseDuration // an item without one: wait our own
				}
				l.seen = &lockObservation{table: table, owner: item.owner, version: item.version, firstSeen: now, leaseDuration: d}
				l.mu.Unlock()
				return nil
			}
			// LockObservation.isExpired: strictly longer than the lease.
			if now.Sub(o.firstSeen) <= o.leaseDuration {
				l.mu.Unlock()
				return nil
			}
			from, after = o.owner, now.Sub(o.firstSeen)
		}
		l.mu.Unlock()
		observed = item.version
	}

	version := newRecordVersion()
	sent := l.clock.Now()
	err = putLock(ctx, l.api, table, keyAttr, l.cfg.Owner, observed, version, l.cfg.LeaseDuration)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		l.held[table] = &heldLock{table: table, keyAttr: keyAttr, version: version, sent: sent}
		delete(l.pending, table)
		l.seen = nil
		l.tookOverFrom, l.tookOverLastSeen = from, time.Time{}
		if from != "" {
			l.tookOverLastSeen = now.Add(-after)
			l.stats.TakenOver++
			l.setLeaderLocked(true, "leader lock taken over", "table", table, "from", from,
				"unchanged_for", after.String(), "lease_duration", l.cfg.LeaseDuration.String())
		} else {
			l.setLeaderLocked(true, "leader lock acquired", "table", table, "lease_duration", l.cfg.LeaseDuration.String())
		}
		return nil
	case awserr.ConditionFailed(err):
		// Another contender (or a heartbeat) wrote first.
		l.seen = nil
		return nil
	default:
		l.pending[table] = heldLock{table: table, keyAttr: keyAttr, version: version, sent: sent}
		return err
	}
}

// Release deletes the lock if this worker holds it (a graceful stop, the
// decider's releaseLeadershipIfHeld): a Delete conditioned on this owner
// and the version it last wrote. A lock no longer ours is left alone, with
// no error. It releases the lock in every table it holds one in.
func (l *LeaderLock) Release(ctx context.Context, st State) error {
	l.step.Lock()
	defer l.step.Unlock()
	l.mu.Lock()
	var locks []heldLock
	for _, h := range l.held {
		locks = append(locks, *h)
	}
	for table, p := range l.pending {
		if l.held[table] == nil {
			locks = append(locks, p) // maybe ours: the condition decides
		}
	}
	wasLeader := l.leader
	l.mu.Unlock()

	var errs []error
	deleted := false
	for _, h := range locks {
		err := deleteLock(ctx, l.api, h.table, h.keyAttr, l.cfg.Owner, h.version)
		switch {
		case err == nil:
			deleted = true
		case awserr.ConditionFailed(err):
		default:
			errs = append(errs, err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = map[string]*heldLock{}
	l.pending = map[string]heldLock{}
	l.seen = nil
	if deleted {
		l.stats.Released++
	}
	if wasLeader {
		l.leader = false
		l.log.Info("leader lock released", "owner", l.cfg.Owner, "deleted", deleted)
	}
	return errors.Join(errs...)
}
