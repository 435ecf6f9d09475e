package kcl3fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/leasecore"
)

// LeaderConfig configures a Leader; zero fields take the KCL's defaults.
type LeaderConfig struct {
	// WorkerID is the leader's worker id (the lock's ownerName).
	WorkerID string
	// LockLeaseDuration is the lock's leaseDuration
	// (dynamoDbLockBasedLeaderLeaseDurationInMillis, 120 s,
	// leases/LeaseManagementConfig.java line 322) and HeartbeatPeriod its
	// heartbeat period (dynamoDbLockBasedLeaderHeartbeatPeriodInMillis, 30 s,
	// line 330).
	LockLeaseDuration time.Duration
	HeartbeatPeriod   time.Duration
	// AssignmentInterval is leaseAssignmentIntervalMillis (2 x
	// failoverTimeMillis = 20 s by default, lines 124-128).
	AssignmentInterval time.Duration
	// FailoverTime is failoverTimeMillis (10 s, line 117): the leader
	// counts a lease expired when its counter has not moved for that long.
	FailoverTime time.Duration
	// MetricsReporterFreq is workerMetricsReporterFreqInMillis (30 s, line
	// 551): a worker whose lut is older than twice this is not active.
	MetricsReporterFreq time.Duration
	// HandoffTimeout is gracefulLeaseHandoffTimeoutMillis (30 s, line 479).
	HandoffTimeout time.Duration
	// NoGracefulHandoff is isGracefulLeaseHandoffEnabled = false (line 495):
	// moves of live leases use assignLease instead of a handoff.
	NoGracefulHandoff bool
	// JavaSchedule runs the election as each Java worker's decider does
	// (decider.go): IsLeader with its 30 s memory and its lock reads, and
	// RunJava's loops. Off, a round takes a free lock (TakeLock) and reads
	// nothing else, as tests of single writes want.
	JavaSchedule bool
	// StaleTakeover (with JavaSchedule) lets a contender take a lock whose
	// version has not changed for the item's leaseDuration, which lock
	// client 1.4.0 under the KCL's decider never does (decider.go).
	StaleTakeover bool
	// LeaseCount is the LEASE_COUNT_BASED strategy (KCL 3.4.3,
	// LeaseCountBasedLeaseAssignmentDecider; round_count.go) in place of
	// the port's fewest-leases choice without balancing.
	LeaseCount bool
	// VarianceBalancingFrequency is varianceBalancingFrequency (3): the
	// lease-count balance runs at the first run and every third after.
	VarianceBalancingFrequency int
	// AuditInterval is leasesRecoveryAuditorExecutionFrequencyMillis (2 min).
	AuditInterval time.Duration
}

func (c *LeaderConfig) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.LockLeaseDuration, 120*time.Second)
	def(&c.HeartbeatPeriod, 30*time.Second)
	def(&c.FailoverTime, 10*time.Second)
	def(&c.AssignmentInterval, 2*c.FailoverTime)
	def(&c.MetricsReporterFreq, 30*time.Second)
	def(&c.HandoffTimeout, 30*time.Second)
	def(&c.AuditInterval, 2*time.Minute)
	if c.VarianceBalancingFrequency <= 0 {
		c.VarianceBalancingFrequency = 3
	}
}

// Leader is a KCL 3.x leader: the lock (DynamoDBLockBasedLeaderDecider with
// lock client 1.4.0) and the LeaseAssignmentManager's writes.
type Leader struct {
	f     *Fleet
	cfg   LeaderConfig
	clock clock.Clock

	mu       sync.Mutex
	version  string // recordVersionNumber this leader last wrote, "" when not holding
	stalled  bool
	beats    int
	stopBeat context.CancelFunc
	beatDone chan struct{}
	forced   []forcedMove
	// prev is prevRunLeasesState: the counter each lease had at the last
	// round and when the leader last saw it move
	// (updateLeasesLastCounterIncrementNanosAndLeaseShutdownTimeout).
	prev map[string]seenLease

	lastErr error
	rounds  []Round

	// lastBeat is when this leader last wrote the lock (acquire or
	// heartbeat): the lock client's lookupTime of its own lock.
	lastBeat  time.Time
	dec       deciderState
	lockReads atomic.Int64
	audits    atomic.Int64
	segments  segmentResolver
	// lamRunCounter is LeaseAssignmentManager.lamRunCounter.
	lamRunCounter int
}

type seenLease struct {
	counter     int64
	lastMove    time.Time // zero: never seen moving (an unassigned lease)
	handoffFrom string    // checkpointOwner when seen
	handoffTo   string
	handoffEnd  time.Time // checkpointOwnerTimeoutTimestampMillis
}

type forcedMove struct{ key, to string }

// NewLeader builds a leader on the fleet; it takes the lock only when
// TakeLock or Run is called.
func (f *Fleet) NewLeader(cfg LeaderConfig) *Leader {
	cfg.defaults()
	if cfg.WorkerID == "" {
		cfg.WorkerID = "kcl3fleet-leader"
	}
	return &Leader{f: f, cfg: cfg, clock: f.Clock, prev: map[string]seenLease{}}
}

// ID is the leader's worker id.
func (l *Leader) ID() string { return l.cfg.WorkerID }

// TakeLock takes the leader lock if no one holds it (see the package doc:
// an existing lock is never taken over, #1803) and starts the heartbeat.
// It reports whether this leader holds the lock.
func (l *Leader) TakeLock(ctx context.Context) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.version != "" {
		return true, nil
	}
	table, keyAttr := l.f.lockLocation()
	v, err := acquireLock(ctx, l.f.DDB, table, keyAttr, l.cfg.WorkerID, l.cfg.LockLeaseDuration)
	if errors.Is(err, ErrConditionFailed) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	l.version = v
	l.stalled = false
	l.lastBeat = l.clock.Now()
	l.startHeartbeatLocked()
	return true, nil
}

// startHeartbeatLocked runs the lock client's background heartbeat
// thread (run(), lock client lines 1244-1276): a heartbeat every period.
func (l *Leader) startHeartbeatLocked() {
	ctx, cancel := context.WithCancel(context.Background())
	l.stopBeat = cancel
	done := make(chan struct{})
	l.beatDone = done
	go func() {
		defer close(done)
		for {
			if clock.Sleep(ctx, l.clock, l.cfg.HeartbeatPeriod) != nil {
				return
			}
			// A failed heartbeat (someone else's version, a deleted item)
			// ends leadership as LockNotGrantedException does.
			if err := l.Heartbeat(ctx); err != nil && errors.Is(err, ErrConditionFailed) {
				return
			}
		}
	}()
}

// Heartbeat sends one heartbeat now (the background loop calls it every
// HeartbeatPeriod): the lock's version is replaced.
func (l *Leader) Heartbeat(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.version == "" || l.stalled {
		return fmt.Errorf("heartbeat: %s does not hold a live lock", l.cfg.WorkerID)
	}
	table, keyAttr := l.f.lockLocation()
	v, err := sendHeartbeat(ctx, l.f.DDB, table, keyAttr, l.cfg.WorkerID, l.version, l.cfg.LockLeaseDuration)
	if errors.Is(err, ErrConditionFailed) {
		l.version = ""
		return err
	}
	if err != nil {
		return err
	}
	l.version = v
	l.lastBeat = l.clock.Now()
	l.beats++
	return nil
}

// Heartbeats counts the heartbeats written.
func (l *Leader) Heartbeats() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.beats
}

// LockVersion is the recordVersionNumber this leader last wrote ("" when
// it does not hold the lock).
func (l *Leader) LockVersion() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.version
}

// Stall stops the heartbeat and all leader work but leaves the lock item
// as it is: a leader that died holding the lock. With lock client 1.4.0
// no other worker ever takes such a lock over (issue #1803), so the fleet
// has no leader until the item goes.
func (l *Leader) Stall() {
	l.mu.Lock()
	l.stalled = true
	stop, done := l.stopBeat, l.beatDone
	l.stopBeat, l.beatDone = nil, nil
	l.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

// Release stops the heartbeat and deletes the lock (the lock client's
// releaseLock, as DynamoDBLockBasedLeaderDecider.releaseLeadershipIfHeld
// does at shutdown, lines 225-241).
func (l *Leader) Release(ctx context.Context) error {
	l.Stall()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.version == "" {
		return nil
	}
	table, keyAttr := l.f.lockLocation()
	err := releaseLock(ctx, l.f.DDB, table, keyAttr, l.cfg.WorkerID, l.version)
	l.version = ""
	return err
}

// holding reports whether this leader acts as leader now.
func (l *Leader) holding() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.version != "" && !l.stalled
}

// AssignLease reads the lease and writes the KCL's assignLease to newOwner
// with the expectation built from what it read. ErrConditionFailed when
// the item changed in between.
func (l *Leader) AssignLease(ctx context.Context, key, newOwner string) (leasecore.Lease, error) {
	seen, err := l.f.Lease(ctx, key)
	if err != nil {
		return leasecore.Lease{}, err
	}
	return l.AssignLeaseSeen(ctx, seen, newOwner)
}

// AssignLeaseSeen writes assignLease with the expectation built from seen,
// the lease as the leader read it (a stale seen makes the write fail, as
// in the KCL).
func (l *Leader) AssignLeaseSeen(ctx context.Context, seen leasecore.Lease, newOwner string) (leasecore.Lease, error) {
	return assignLease(ctx, l.f.DDB, l.f.Tables.Lease, seen, newOwner)
}

// Handoff reads the lease and writes the KCL's
// initiateGracefulLeaseHandoff to newOwner.
func (l *Leader) Handoff(ctx context.Context, key, newOwner string) (leasecore.Lease, error) {
	seen, err := l.f.Lease(ctx, key)
	if err != nil {
		return leasecore.Lease{}, err
	}
	return l.HandoffSeen(ctx, seen, newOwner)
}

// HandoffSeen writes initiateGracefulLeaseHandoff with the expectation
// built from seen.
func (l *Leader) HandoffSeen(ctx context.Context, seen leasecore.Lease, newOwner string) (leasecore.Lease, error) {
	return initiateHandoff(ctx, l.f.DDB, l.f.Tables.Lease, seen, newOwner)
}

// RequestHandoff asks the next rounds of Run to move a lease to another
// worker, the hook that stands in for balanceWorkerVariance: a live lease
// is moved with a graceful handoff, an expired or unassigned one with
// assignLease (parallelyAssignLeases, LeaseAssignmentManager lines
// 319-353). The request stays queued until it is written.
func (l *Leader) RequestHandoff(key, to string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forced = append(l.forced, forcedMove{key, to})
}
