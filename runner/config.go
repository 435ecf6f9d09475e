package runner

import (
	"errors"
	"fmt"
	"github.com/kcltool/kcltool/internal/clock"
	"log/slog"
	"time"

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

	// Metrics, if set, receives per-shard and per-worker figures.
	Metrics *metrics.Metrics
	// CloudWatch, if set, publishes KCL's metric names every
	// CloudWatchInterval into the namespace App.
	CloudWatch         metrics.CloudWatchAPI
	CloudWatchInterval time.Duration

	Log   *slog.Logger
	Clock clock.Clock
}

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
	if c.MaxRecords <= 0 {
		c.MaxRecords = DefaultMaxRecords
	}
	if c.IdleBetweenReads <= 0 {
		c.IdleBetweenReads = DefaultIdleBetweenReads
	}
	if c.MaxReadsInFlight <= 0 {
		c.MaxReadsInFlight = MaxReadsInFlight
	}
	if c.KinesisTimeout <= 0 {
		c.KinesisTimeout = DefaultKinesisTimeout
	}
	if c.DynamoDBTimeout <= 0 {
		c.DynamoDBTimeout = DefaultDynamoDBTimeout
	}
	if c.Lease.RequestTimeout <= 0 {
		c.Lease.RequestTimeout = c.DynamoDBTimeout
	}
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.MaxParallel <= 0 {
		c.MaxParallel = DefaultMaxParallel
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = DefaultShutdownGrace
	}
	if c.ShardSyncInterval <= 0 {
		c.ShardSyncInterval = DefaultShardSyncInterval
	}
	if c.CleanupInterval <= 0 {
		c.CleanupInterval = DefaultCleanupInterval
	}
	if c.ParentPollInterval <= 0 {
		c.ParentPollInterval = DefaultParentPollInterval
	}
	if c.CloudWatchInterval <= 0 {
		c.CloudWatchInterval = DefaultCloudWatchInterval
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

// Validate rejects settings a worker cannot run with.
func (c Config) Validate() error {
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
	case c.MaxRecords > DefaultMaxRecords:
		return fmt.Errorf("max records %d is above the %d Kinesis allows per GetRecords call", c.MaxRecords, DefaultMaxRecords)
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
