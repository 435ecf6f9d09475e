package assignment

import (
	"math"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

// Strategy is how the leader balances.
type Strategy int

const (
	// ByThroughput: the KCL's default (WORKER_UTILIZATION_AWARE),
	// VarianceBasedLeaseAssignmentDecider on the workers' metrics (CPU, or
	// a synthetic throughput metric).
	ByThroughput Strategy = iota
	// ByLeaseCount: KCL 3.4.3's LEASE_COUNT_BASED strategy
	// (LeaseCountBasedLeaseAssignmentDecider).
	ByLeaseCount
)

func (s Strategy) String() string {
	if s == ByLeaseCount {
		return "lease-count"
	}
	return "throughput"
}

// The KCL's defaults (KCL 3.5.1 LeaseManagementConfig and its
// WorkerUtilizationAwareAssignmentConfig and GracefulLeaseHandoffConfig).
const (
	DefaultFailoverTime                 = 10 * time.Second // failoverTimeMillis
	DefaultWorkerMetricsReporterFreq    = 30 * time.Second // workerMetricsReporterFreqInMillis
	DefaultDampeningPercentage          = 60               // dampeningPercentage
	DefaultReBalanceThresholdPercentage = 10               // reBalanceThresholdPercentage
	DefaultVarianceBalancingFrequency   = 3                // varianceBalancingFrequency
	DefaultWorkerMetricsEMAAlpha        = 0.5              // workerMetricsEMAAlpha
	DefaultHandoffTimeout               = leasecore.DefaultHandoffTimeout
	// metricsExpiryReports is MigrationAwareLAMDataManager's
	// DEFAULT_NO_OF_SKIP_STAT_FOR_DEAD_WORKER_THRESHOLD: a worker whose
	// metrics item is older than this many report periods is not active.
	metricsExpiryReports = 2
	// failuresToGiveUp is LeaseAssignmentManager's
	// DEFAULT_FAILURE_COUNT_TO_SWITCH_LEADER.
	failuresToGiveUp = 3
)

// DefaultScanRate paces the leader's scan of the lease table, in read units
// per second. kcltool's own choice (the KCL does not pace): a lease item
// is about 300 bytes, so an eventually consistent scan of 10,000 leases
// costs about 300 read units; at 100 units/s it is spread over some three
// seconds of the 20 s between runs (2 × the failover time), where unpaced
// it would all fall in the same second. A table of 60,000 leases still
// fits in the interval. Larger tables should raise it (a run then takes
// longer than the interval, and runs simply follow each other).
const DefaultScanRate = 100.0

// Config is the leader's settings; zero values take the KCL's defaults.
// The comments name the key each field stands for in a KCL 3.5.1
// MultiLangDaemon properties file (MultiLangDaemonConfiguration and its
// WorkerUtilizationAwareAssignmentConfigBean and
// GracefulLeaseHandoffConfigBean), so that the cmd layer can map a 3.x
// properties file onto it.
type Config struct {
	// Strategy: the KCL's leaseAssignmentStrategy (LeaseManagementConfig).
	// The MultiLangDaemon of 3.5.1 has no key for it (always
	// WORKER_UTILIZATION_AWARE there); kcltool's --assignment sets it.
	Strategy Strategy
	// FailoverTime is failoverTimeMillis: the leader judges a lease
	// expired when its counter has not moved for longer than this
	// (leaseDurationMillis of LeaseAssignmentManager).
	FailoverTime time.Duration
	// AssignmentInterval is leaseAssignmentIntervalMillis (a key of the
	// MultiLangDaemon too), 2 × FailoverTime
	// by default. The Manager does not schedule itself; it is carried here
	// for the runner and for Result.NextRunIn.
	AssignmentInterval time.Duration
	// ScanRate paces the leader's lease-table scan, in read units per
	// second (0: DefaultScanRate; negative: unpaced, as the KCL).
	ScanRate float64
	// ScanSegments is leaseTableScanTotalSegments, the parallel scan's
	// segment count (0: the KCL's LeaseTableScanSegmentResolver, one per
	// 0.2 GB of table, 1 to 32).
	ScanSegments int

	// inMemoryWorkerMetricsCaptureFrequencyMillis, noOfPersistedMetricsPerWorkerMetrics
	// and disableWorkerMetrics are the worker's, not the leader's: the
	// reporter (coordination.ReporterOptions CaptureInterval, History, and
	// no Samplers) takes them.

	// WorkerMetricsReporterFreq is workerMetricsReporterFreqInMillis: a
	// worker whose metrics item is older than twice this is not active.
	WorkerMetricsReporterFreq time.Duration
	// MaxThroughputPerHostKBps is maxThroughputPerHostKBps (0: unlimited,
	// the KCL's Double.MAX_VALUE).
	MaxThroughputPerHostKBps float64
	// DampeningPercentage is dampeningPercentage (60).
	DampeningPercentage int
	// ReBalanceThresholdPercentage is reBalanceThresholdPercentage (10).
	ReBalanceThresholdPercentage int
	// NoThroughputOvershoot is allowThroughputOvershoot = false (the KCL's
	// default is true; inverted so that the zero value is the default).
	NoThroughputOvershoot bool
	// VarianceBalancingFrequency is varianceBalancingFrequency (3): step
	// 2 runs on every this-many-th run.
	VarianceBalancingFrequency int
	// WorkerMetricsEMAAlpha is workerMetricsEMAAlpha (0.5).
	WorkerMetricsEMAAlpha float64
	// StaleWorkerMetricsEntryCleanupDuration is
	// staleWorkerMetricsEntryCleanupDuration (1 day). Carried for the
	// mapping only: kcltool's leader does not delete stale metrics items
	// (see the package doc).
	StaleWorkerMetricsEntryCleanupDuration time.Duration
	// MaxLeasesForWorker is maxLeasesForWorker (0: unlimited).
	MaxLeasesForWorker int
	// HandoffTimeout is gracefulLeaseHandoffTimeoutMillis (30 s).
	HandoffTimeout time.Duration
	// NoGracefulHandoff is isGracefulLeaseHandoffEnabled = false: live
	// leases move with assignLease.
	NoGracefulHandoff bool
}

// WithDefaults fills zero fields with the KCL's defaults.
func (c Config) WithDefaults() Config {
	if c.FailoverTime <= 0 {
		c.FailoverTime = DefaultFailoverTime
	}
	if c.AssignmentInterval <= 0 {
		c.AssignmentInterval = 2 * c.FailoverTime
	}
	if c.ScanRate == 0 {
		c.ScanRate = DefaultScanRate
	}
	if c.WorkerMetricsReporterFreq <= 0 {
		c.WorkerMetricsReporterFreq = DefaultWorkerMetricsReporterFreq
	}
	if c.MaxThroughputPerHostKBps <= 0 {
		c.MaxThroughputPerHostKBps = math.MaxFloat64
	}
	if c.DampeningPercentage <= 0 {
		c.DampeningPercentage = DefaultDampeningPercentage
	}
	if c.ReBalanceThresholdPercentage <= 0 {
		c.ReBalanceThresholdPercentage = DefaultReBalanceThresholdPercentage
	}
	if c.VarianceBalancingFrequency <= 0 {
		c.VarianceBalancingFrequency = DefaultVarianceBalancingFrequency
	}
	if c.WorkerMetricsEMAAlpha <= 0 {
		c.WorkerMetricsEMAAlpha = DefaultWorkerMetricsEMAAlpha
	}
	if c.StaleWorkerMetricsEntryCleanupDuration <= 0 {
		c.StaleWorkerMetricsEntryCleanupDuration = 24 * time.Hour
	}
	if c.MaxLeasesForWorker <= 0 {
		c.MaxLeasesForWorker = math.MaxInt
	}
	if c.HandoffTimeout <= 0 {
		c.HandoffTimeout = DefaultHandoffTimeout
	}
	return c
}

// metricsExpiry is workerMetricsExpiryDuration: 2 × the report period.
func (c Config) metricsExpiry() time.Duration {
	return metricsExpiryReports * c.WorkerMetricsReporterFreq
}
