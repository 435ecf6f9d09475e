package leasecore

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"time"
)

// KCL 2.x defaults (docs/kcl-compat.md, Timings and defaults).
const (
	DefaultFailoverTime              = 10 * time.Second
	DefaultEpsilon                   = 25 * time.Millisecond
	DefaultMaxLeasesToStealAtOneTime = 1
	// veryOldMultiplier: a lease not renewed for 3 × failover is "very old"
	// and taken first (DynamoDBLeaseTaker, enablePriorityLeaseAssignment).
	veryOldMultiplier = 3
	// maxRenewalConcurrency is KCL's maxLeaseRenewalThreads default.
	maxRenewalConcurrency = 20
	// DefaultRequestTimeout is KCL's dynamoDbRequestTimeout
	// (LeaseManagementConfig.DEFAULT_REQUEST_TIMEOUT, 1 minute), the most
	// any one DynamoDB request of the lease protocol may take. The
	// coordinator cuts its own requests shorter (see Config.RequestTimeout).
	DefaultRequestTimeout = time.Minute
)

// Config holds the leasing settings of one worker. The zero value of every
// field means "KCL's default"; WithDefaults fills them in.
type Config struct {
	// WorkerID identifies this worker as leaseOwner. Default DefaultWorkerID().
	WorkerID string
	// FailoverTime: a lease whose counter an observer has seen unchanged for
	// longer than this is expired. KCL's failoverTimeMillis, default 10s.
	FailoverTime time.Duration
	// Epsilon is KCL's epsilonMillis (25ms), subtracted from the renew
	// interval and added to the taker interval.
	Epsilon time.Duration
	// RenewInterval is how often held leases are renewed (fixed rate).
	// Default FailoverTime/3 - Epsilon, as KCL: three attempts per failover
	// time, so two failed renewals in a row still keep the lease.
	RenewInterval time.Duration
	// TakerInterval fixes how often the taker scans the table. Zero (the
	// default) paces scans adaptively: never less often than KCL's
	// 2 × (FailoverTime + Epsilon), and more often only on tables of up to
	// 100 leases, within a budget in read units (see pacing.go).
	TakerInterval time.Duration
	// MaxLeasesForWorker caps the leases this worker holds (default
	// unlimited, as KCL's Integer.MAX_VALUE).
	MaxLeasesForWorker int
	// MaxLeasesToStealAtOneTime bounds steals per taker run (default 1).
	MaxLeasesToStealAtOneTime int
	// DisablePriorityLeaseAssignment turns off KCL's
	// enablePriorityLeaseAssignment (on by default): leases not renewed for
	// 3 × FailoverTime are taken first, regardless of the target.
	DisablePriorityLeaseAssignment bool
	// ScanSegments is the number of parallel segments of each taker scan
	// (KCL's leaseTableScanTotalSegments; default 1).
	ScanSegments int
	// RequestTimeout bounds each DynamoDB request (one attempt): KCL's
	// dynamoDbRequestTimeout, default 1 minute. A request not answered in
	// time is abandoned and retried like a throttled one. The coordinator
	// never waits longer than the renew interval for a renewal, checkpoint,
	// take or read, nor longer than the failover time for a page of the
	// taker's scan: an answer later than that is of no use to the lease
	// protocol, whose timings are fractions of the failover time.
	RequestTimeout time.Duration
	// LeaseAssignmentInterval is KCL 3.x's leaseAssignmentIntervalMillis,
	// how often the leader assigns; default 2 × FailoverTime. A worker
	// assigned by the leader looks for its new leases every half of it,
	// less Epsilon (DynamoDBLeaseCoordinator).
	LeaseAssignmentInterval time.Duration
}

// WithDefaults returns c with every unset field set to KCL's default.
func (c Config) WithDefaults() Config {
	if c.WorkerID == "" {
		c.WorkerID = DefaultWorkerID()
	}
	if c.FailoverTime <= 0 {
		c.FailoverTime = DefaultFailoverTime
	}
	if c.Epsilon <= 0 {
		c.Epsilon = DefaultEpsilon
	}
	if c.RenewInterval <= 0 {
		c.RenewInterval = c.FailoverTime/3 - c.Epsilon
	}
	if c.MaxLeasesForWorker <= 0 {
		c.MaxLeasesForWorker = math.MaxInt32
	}
	if c.MaxLeasesToStealAtOneTime <= 0 {
		c.MaxLeasesToStealAtOneTime = DefaultMaxLeasesToStealAtOneTime
	}
	if c.ScanSegments <= 0 {
		c.ScanSegments = 1
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.LeaseAssignmentInterval <= 0 {
		// LeaseManagementConfig.leaseAssignmentIntervalMillis()
		c.LeaseAssignmentInterval = 2 * c.FailoverTime
	}
	return c
}

// DiscoveryInterval is how often a worker assigned by the leader looks for
// its new leases: LeaseAssignmentInterval/2 - Epsilon, twice per
// assignment run (DynamoDBLeaseCoordinator's leaseDiscovererIntervalMillis;
// 9,975ms at the defaults).
func (c Config) DiscoveryInterval() time.Duration {
	c = c.WithDefaults()
	return c.LeaseAssignmentInterval/2 - c.Epsilon
}

// Validate rejects settings under which leasing cannot work.
func (c Config) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.RenewInterval <= 0:
		return fmt.Errorf("failover time %s is too short: the renew interval (failover/3 - %s) must be positive", c.FailoverTime, c.Epsilon)
	case c.RenewInterval >= c.FailoverTime:
		return fmt.Errorf("renew interval %s must be shorter than the failover time %s", c.RenewInterval, c.FailoverTime)
	case c.TakerInterval < 0:
		return errors.New("taker interval must not be negative")
	case c.DiscoveryInterval() <= 0:
		return fmt.Errorf("lease assignment interval %s is too short: the discovery interval (half of it - %s) must be positive", c.LeaseAssignmentInterval, c.Epsilon)
	}
	return nil
}

// ItemTimeout is the deadline of one attempt of a single-item request
// (renew, checkpoint, take, release, read): RequestTimeout, but never more
// than the renew interval, so that a request nobody answers cannot hold a
// lease's lock past its next renewal.
func (c Config) ItemTimeout() time.Duration {
	c = c.WithDefaults()
	return min(c.RequestTimeout, c.RenewInterval)
}

// ScanTimeout is the deadline of one page of the taker's scan:
// RequestTimeout, but never more than the failover time, so that a page
// nobody answers delays the taker by at most that.
func (c Config) ScanTimeout() time.Duration {
	c = c.WithDefaults()
	return min(c.RequestTimeout, c.FailoverTime)
}

// KCLTakerInterval is KCL 2.x's taker interval, 2 × (failover + epsilon):
// 20.05s at the defaults. Adaptive pacing never scans less often than this.
func (c Config) KCLTakerInterval() time.Duration {
	c = c.WithDefaults()
	return 2 * (c.FailoverTime + c.Epsilon)
}

// MinTakerInterval is the fastest adaptive pacing ever scans: failover/10
// (1s at the defaults), so that crash detection is at most that late after
// the failover time, whatever the budget.
func (c Config) MinTakerInterval() time.Duration {
	c = c.WithDefaults()
	return c.FailoverTime / 10
}

// DefaultWorkerID is hostname, process id and a random suffix: unique per
// process even when several workers share a host or a container image
// reuses pids.
func DefaultWorkerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "worker"
	}
	return fmt.Sprintf("%s-%d-%06x", host, os.Getpid(), rand.Uint32N(1<<24))
}
