package runner

import (
	"context"
	"errors"
	"fmt"
	"github.com/kcltool/kcltool/coordination/assignment"
	"log/slog"
	"time"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
	"github.com/kcltool/kcltool/runner/metrics"
	"github.com/kcltool/kcltool/runner/processor"
)

// Defaults of the worker settings; most are KCL's.
const (
	// DefaultMaxRecords is GetRecords' Limit: KCL's maxRecords and the most
	// Kinesis allows.
	DefaultMaxRecords = 10000
	// DefaultIdleBetweenReads is the pause after a read that found the
	// reader at the tip of the shard.
	DefaultIdleBetweenReads = time.Second
	// MaxGetRecordsPerSecond is Kinesis's per-shard read call limit; the
	// reader never exceeds it, whatever the pacing says.
	MaxGetRecordsPerSecond = 5
	// DefaultBatchSize bounds the records of one handler run.
	DefaultBatchSize = 1000
	// DefaultMaxParallel bounds the handler processes running at once.
	DefaultMaxParallel = 16
	// DefaultShutdownGrace is how long running handlers may finish after a
	// stop signal.
	DefaultShutdownGrace = 30 * time.Second
	// DefaultShardSyncInterval is KCL's shardSyncIntervalMillis.
	DefaultShardSyncInterval = time.Minute
	// DefaultCleanupInterval is KCL's lease cleanup thread interval.
	DefaultCleanupInterval = time.Minute
	// DefaultParentPollInterval is KCL's parentShardPollIntervalMillis. A
	// parent that finishes on this worker wakes its children at once.
	DefaultParentPollInterval = 10 * time.Second
	// DefaultCloudWatchInterval is how often metrics are published.
	DefaultCloudWatchInterval = time.Minute
	// DefaultRetryBackoff is the first pause before a failed batch is
	// retried (Backoff.Initial).
	DefaultRetryBackoff = time.Second
)

// Config is one worker of a consumer fleet.
type Config struct {
	App    string // KCL application name: CloudWatch namespace, KCLTOOL_APP
	Table  string // lease table; default App
	Stream reshard.Stream
	// Streams are all the streams this worker reads (multi-stream mode, see
	// multistream.go); default [Stream]. Stream defaults to Streams[0].
	Streams    []reshard.Stream
	StreamMode StreamMode
	WorkerID   string // default leasecore.DefaultWorkerID()

	// Lease is the lease coordinator's configuration; its WorkerID is
	// overwritten by WorkerID.
	Lease leasecore.Config
	// CreateTable creates a missing lease table the way KCL does.
	CreateTable bool
	// KCLVersion is the KCL major version a table created here is made
	// for: 3 (default) the table with its index and the items KCL 3.5
	// writes for a new application under KCL3.ClientVersionConfig, 2 the
	// KCL 2.x table (createtable.go). An existing table is never changed.
	KCLVersion int
	// Initial is where new leases start (KCL default LATEST). Its Timestamp
	// is also what AT_TIMESTAMP checkpoints are read from, as in KCL.
	Initial reshard.Position

	MaxRecords       int32
	IdleBetweenReads time.Duration
	// MaxReadsInFlight bounds the worker's shard reads open at once
	// (readslots.go); default MaxReadsInFlight.
	MaxReadsInFlight int

	// FanOut, when set, reads with enhanced fan-out (SubscribeToShard)
	// instead of polling (efo.go).
	FanOut *FanOut

	// KinesisTimeout bounds each Kinesis request (GetRecords,
	// GetShardIterator, ListShards); default DefaultKinesisTimeout, the
	// KCL's. DynamoDBTimeout bounds each DynamoDB request; default
	// DefaultDynamoDBTimeout, the KCL's, and the lease coordinator's own
	// requests are cut shorter still (leasecore.Config.RequestTimeout,
	// which it sets when unset). A request cut off is retried.
	KinesisTimeout  time.Duration
	DynamoDBTimeout time.Duration

	BatchSize   int
	BatchWindow time.Duration
	MaxParallel int

	// Handler runs the batches. Its Env is the base environment.
	Handler *processor.Handler
	// MultiLang runs Handler.Argv as one long-lived KCL MultiLang child per
	// held lease instead of a process per batch (processor/multilang.go): one
	// processRecords per GetRecords page, so BatchSize, BatchWindow,
	// MaxParallel and the failure policy do not apply; the child
	// checkpoints. MultiLangTimeout (the MLD's timeoutInSeconds) bounds
	// the wait for each of its messages; zero means no limit.
	MultiLang        bool
	MultiLangTimeout time.Duration
	// MultiLangEmptyPages sends a processRecords for a GetRecords page
	// with no records too, as the KCL does with
	// callProcessRecordsEvenForEmptyRecordList (never for the empty last
	// page of a closed shard: that is the shard end).
	MultiLangEmptyPages bool
	// The failure policy of every shard (Policy fields of the same names).
	Backoff       processor.Backoff
	MaxRetries    int
	MaxRecordAge  time.Duration
	BisectOnError bool
	OnFailureDir  string

	ShutdownGrace      time.Duration
	ShardSyncInterval  time.Duration
	CleanupInterval    time.Duration
	ParentPollInterval time.Duration

	// KCL3 are the settings of a worker in a KCL 3.x application
	// (docs/kcl3.md).
	KCL3 KCL3Config

	// Metrics, if set, receives per-shard and per-worker figures.
	Metrics *metrics.Metrics
	// Build names the binary (its version, commit and Go release) in the
	// start-up log line and kcltool_build_info. The caller fills it: the
	// runner does not read build information itself.
	Build metrics.Build
	// CloudWatch, if set, publishes KCL's metric names every
	// CloudWatchInterval into the namespace App.
	CloudWatch         metrics.CloudWatchAPI
	CloudWatchInterval time.Duration

	Log   *slog.Logger
	Clock clock.Clock
}

// DefaultConfig is a worker's configuration with every setting at its
// default: KCL's where the KCL has the setting. A caller starts from it and
// sets what it needs; Validate rejects a setting left at an invalid zero
// (a Config{} literal has MaxRecords 0, for one) rather than guessing.
func DefaultConfig() Config {
	return Config{
		Lease: leasecore.Config{
			FailoverTime:              leasecore.DefaultFailoverTime,
			MaxLeasesToStealAtOneTime: leasecore.DefaultMaxLeasesToStealAtOneTime,
		},
		KCLVersion:       3,
		Initial:          reshard.Latest(),
		MaxRecords:       DefaultMaxRecords,
		IdleBetweenReads: DefaultIdleBetweenReads,
		KinesisTimeout:   DefaultKinesisTimeout,
		DynamoDBTimeout:  DefaultDynamoDBTimeout,
		BatchSize:        DefaultBatchSize,
		MaxParallel:      DefaultMaxParallel,
		Handler:          &processor.Handler{},
		Backoff:          processor.Backoff{Initial: DefaultRetryBackoff},
		MaxRetries:       processor.UnlimitedRetries,

		ShutdownGrace:      DefaultShutdownGrace,
		ShardSyncInterval:  DefaultShardSyncInterval,
		CleanupInterval:    DefaultCleanupInterval,
		ParentPollInterval: DefaultParentPollInterval,
		CloudWatchInterval: DefaultCloudWatchInterval,

		KCL3: KCL3Config{
			ClientVersionConfig:   ClientVersionConfig3X,
			GracefulHandoff:       true,
			HandoffTimeout:        leasecore.DefaultHandoffTimeout,
			WorkerMetricsInterval: 30 * time.Second,
		},
	}
}

// withDefaults fills what follows from other fields (the table from the
// application, the streams, the worker ID) and the plumbing a caller may
// leave out (log, clock); the settings' defaults are DefaultConfig's.
func (c Config) withDefaults() Config {
	if c.Table == "" {
		c.Table = c.App
	}
	c.Stream, c.Streams = defaultStreams(c.Stream, c.Streams)
	if c.WorkerID == "" {
		c.WorkerID = leasecore.DefaultWorkerID()
	}
	c.Lease.WorkerID = c.WorkerID
	if c.Initial.Kind == "" {
		c.Initial = reshard.Latest()
	}
	if c.MaxReadsInFlight <= 0 {
		c.MaxReadsInFlight = MaxReadsInFlight
	}
	if c.Lease.RequestTimeout <= 0 {
		c.Lease.RequestTimeout = c.DynamoDBTimeout
	}
	if c.FanOut != nil {
		fo := *c.FanOut
		if fo.ConsumerName == "" {
			fo.ConsumerName = c.App
		}
		if fo.EndCheckEvery <= 0 {
			fo.EndCheckEvery = c.ShardSyncInterval
		}
		c.FanOut = &fo
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock()
	}
	return c
}

// Validate rejects settings a worker cannot run with. A setting out of its
// range is a *SettingError naming it.
func (c Config) Validate() error {
	if err := c.checkSettings(); err != nil {
		return err
	}
	c = c.withDefaults()
	switch {
	case c.App == "" && c.Table == "":
		return errors.New("no application name")
	case c.Stream.Name == "" && c.Stream.ARN == "":
		return errors.New("no stream")
	case c.Handler == nil || len(c.Handler.Argv) == 0:
		return errors.New("no handler command")
	case c.Handler.Env == nil:
		return processor.ErrNoHandlerEnv
	}
	if fo := c.FanOut; fo != nil {
		switch {
		case fo.ConsumerARN != "" && len(c.Streams) > 1:
			return errors.New("a consumer ARN names the consumer of one stream; with several streams give a consumer name instead")
		case fo.ConsumerName == "" && fo.ConsumerARN == "":
			return errors.New("enhanced fan-out needs a consumer name or ARN")
		}
	}
	if err := c.Initial.Validate(); err != nil {
		return err
	}
	return c.Lease.Validate()
}

// SettingError is a setting out of its range. Setting is spelled as cmd
// spells the flag that sets it, without the dashes; Say lets cmd say it as
// that flag.
type SettingError struct {
	Setting string
	Value   any
	// Must is what the value must be: "be positive", "not be negative".
	Must string
}

func (e *SettingError) Error() string { return e.Say(settingOption) }

// Say is Error with the setting said by name.
func (e *SettingError) Say(name func(setting string) string) string {
	return name(e.Setting) + " must " + e.Must
}

// checkSettings checks each setting against its range, in a fixed order so
// that the same mistakes always give the same error. A zero is checked like
// any other value: defaults come from DefaultConfig, not from zeros.
func (c Config) checkSettings() error {
	var handlerTimeout time.Duration
	if c.Handler != nil {
		handlerTimeout = c.Handler.Timeout
	}
	counts := []struct {
		setting string
		v, min  int
		must    string
	}{
		{"batch-size", c.BatchSize, 1, "be at least 1"},
		{"max-parallel", c.MaxParallel, 1, "be at least 1"},
		{"max-retries", c.MaxRetries, processor.UnlimitedRetries, "be -1 (no limit) or more"},
		{"max-leases-to-steal", c.Lease.MaxLeasesToStealAtOneTime, 1, "be at least 1"},
		{"max-leases-for-worker", c.Lease.MaxLeasesForWorker, 0, "not be negative"},
	}
	if c.KCLVersion != 2 && c.KCLVersion != 3 {
		return &SettingError{Setting: "kcl-version", Value: c.KCLVersion, Must: "be 2 or 3"}
	}
	if c.MaxRecords < 1 || c.MaxRecords > DefaultMaxRecords {
		return &SettingError{Setting: "max-records", Value: c.MaxRecords, Must: fmt.Sprintf("be between 1 and %d", DefaultMaxRecords)}
	}
	for _, n := range counts {
		if n.v < n.min {
			return &SettingError{Setting: n.setting, Value: n.v, Must: n.must}
		}
	}
	durations := []durationSetting{
		// Zero is valid: no pause, no wait, no limit, adaptive pacing.
		{"idle-between-reads", c.IdleBetweenReads, 0},
		{"batch-window", c.BatchWindow, 0},
		{"handler-timeout", handlerTimeout, 0},
		{"max-record-age", c.MaxRecordAge, 0},
		{"taker-interval", c.Lease.TakerInterval, 0},
		{"retry-backoff", c.Backoff.Initial, 0},
		// Zero is not: a lease, a grace, an interval or a timeout of no time.
		{"failover-time", c.Lease.FailoverTime, 1},
		{"shutdown-grace", c.ShutdownGrace, 1},
		{"shard-sync-interval", c.ShardSyncInterval, 1},
		{"parent-poll-interval", c.ParentPollInterval, 1},
		{"cleanup-interval", c.CleanupInterval, 1},
		{"cloudwatch-interval", c.CloudWatchInterval, 1},
		{"kinesis-timeout", c.KinesisTimeout, 1},
		{"dynamodb-timeout", c.DynamoDBTimeout, 1},
	}
	if err := checkDurations(durations); err != nil {
		return err
	}
	return c.KCL3.check()
}

// KCL3Config are the worker-side settings of KCL 3.x (the MultiLangDaemon's
// 3.x properties keys map to them through cmd/run's settings table).
type KCL3Config struct {
	// ClientVersionConfig is the KCL's clientVersionConfig, one of
	// ClientVersionConfigs (default ClientVersionConfig3X). kcltool
	// follows the table's state either way; the setting is checked
	// against it.
	ClientVersionConfig string
	// LeaseAssignmentInterval is leaseAssignmentIntervalMillis; zero means
	// 2 × the failover time.
	LeaseAssignmentInterval time.Duration
	// LeaderLease is the leaseDuration this worker writes in the leader
	// lock when it leads (runner/leader.go); zero means 2 × the failover
	// time (the KCL writes 120 s, dynamoDbLockBasedLeaderLeaseDurationInMillis).
	LeaderLease time.Duration
	// NoLeader keeps this worker out of the leader election: it never
	// takes the lock, so it never assigns leases nor audits shards (a
	// follower only, as kcltool was before issue 26).
	NoLeader bool
	// ShardAuditInterval is the leader's shard audit frequency
	// (leasesRecoveryAuditorExecutionFrequencyMillis); zero means
	// DefaultShardAuditInterval. In KCL 3.x mode it replaces
	// ShardSyncInterval, and only the leader audits (leader_audit.go).
	ShardAuditInterval time.Duration
	// Assignment is the leader's assignment settings: the strategy, the
	// scan's pace, and the WorkerUtilizationAwareAssignmentConfig keys of
	// a 3.x properties file. FailoverTime, AssignmentInterval and, when
	// zero, HandoffTimeout and WorkerMetricsReporterFreq come from the
	// settings above; GracefulHandoff decides NoGracefulHandoff.
	Assignment assignment.Config
	// GracefulHandoff is isGracefulLeaseHandoffEnabled (default true);
	// HandoffTimeout is gracefulLeaseHandoffTimeoutMillis (default 30 s).
	GracefulHandoff bool
	HandoffTimeout  time.Duration
	// CoordinatorStateTable and WorkerMetricsTable name the KCL 3.0-3.4
	// side tables; empty means <app>-CoordinatorState and
	// <app>-WorkerMetricStats.
	CoordinatorStateTable string
	WorkerMetricsTable    string
	// WorkerMetricsInterval is how often the worker upserts its metrics
	// item (WorkerMetricsTableConfig's reporting period, 30 s).
	WorkerMetricsInterval time.Duration
	// MigrationMonitorInterval and MigrationFlipStabilization are test
	// knobs of the migration ready monitor (migration_monitor.go): how
	// often it checks (zero: a minute, MONITOR_INTERVAL_MILLIS) and how
	// long the checks must pass before cv is flipped to
	// CLIENT_VERSION_3X_WITH_ROLLBACK (zero: 10 minutes). The KCL 3.5.1
	// hard-codes both (the Scheduler's flipTo3XStabilizerTimeInSeconds);
	// no flag or properties key sets them.
	MigrationMonitorInterval   time.Duration
	MigrationFlipStabilization time.Duration
	// Samplers picks the worker metrics reported, CPU where the KCL
	// reports it (EC2, ECS, EKS), none elsewhere, when the leader balances
	// this worker on throughput (WorkerMetricsSelector); platform names
	// where the worker runs, for the log. The caller detects the platform;
	// the worker calls it once, when it first reports metrics, never on a
	// KCL 2.x table. Nil: no metric.
	Samplers func(ctx context.Context) (samplers []coordination.Sampler, platform string)
}
