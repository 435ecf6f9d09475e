package run

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kcltool/kcltool/runner"
)

// runSetting is one setting of `kcltool run`: the flag that sets it, the
// variable and the properties key that can set it instead, its help, its
// default and where its value goes. Adding a setting is adding an entry to
// runSettings: registration, the properties file, --print-config and the
// check (runner.Config.Validate, or cmd's parsing) follow from it.
type runSetting struct {
	flag string
	// env is the KCLTOOL_* variable applyEnv reads for the flag (envName).
	env string
	// property is the MultiLangDaemon properties key that fills the flag
	// (run_properties.go); "" when none does, or when a step of its own
	// applies it (streamArn, RetrievalMode, consumerName, ...).
	property string
	// conv turns the property's value into the flag's syntax; nil keeps it.
	conv  func(string) (string, error)
	usage string
	// field is the runner.Config field the setting ends in, as a path
	// ("Lease.FailoverTime"). Without opt the flag is bound to that field
	// of runOptions.cfg, and its default is runner.DefaultConfig's.
	field string
	// opt is the runOptions field holding a setting cmd turns into
	// runner.Config itself (a format, a position, a command), with def as
	// its default.
	opt string
	def any
	// invalid is a value the setting's check rejects with the flag named in
	// the error (runner.SettingError, or cmd's parsing); "" when every
	// value is valid.
	invalid string
	// complete lists the values offered to shell completion; noFiles
	// offers nothing, dir offers folders.
	complete     []string
	noFiles, dir bool
	// shared: the flag is registered by appFlags or the root command; the
	// entry is here for its properties key.
	shared bool
}

var runSettings = []runSetting{
	{flag: "app", env: "KCLTOOL_APP", property: "applicationName", field: "App", shared: true,
		usage: "KCL application name (the lease table is named after it)"},
	{flag: "table", env: "KCLTOOL_TABLE", property: "tableName", field: "Table", shared: true,
		usage: "lease table name, when the application set tableName (default: --app)"},
	{flag: "region", env: "KCLTOOL_REGION", property: "regionName", shared: true,
		usage: "AWS region (root flag)"},
	{flag: "stream", env: "KCLTOOL_STREAM", property: "streamName", field: "Streams", opt: "Streams", def: []string(nil), invalid: ",",
		usage: "stream name; repeat it (or separate names with commas) to read several streams (the KCL's multi-stream lease table)"},
	{flag: "multi-stream", env: "KCLTOOL_MULTI_STREAM", field: "StreamMode", opt: "MultiStream", def: false, invalid: "maybe",
		usage: "use the KCL's multi-stream lease table (keys account:stream:epoch:shardId) for a single --stream; automatic with two or more --stream or when the table already has such leases; --multi-stream=false refuses a multi-stream table"},
	{flag: "exec", env: "KCLTOOL_EXEC", field: "Handler.Argv", opt: "Exec", def: "",
		usage: "handler command, run through sh -c for each batch (or give it after --)"},
	{flag: "format", env: "KCLTOOL_FORMAT", field: "Handler.Format", opt: "Format", def: "json", invalid: "xml", complete: []string{"json", "raw"},
		usage: "handler input: json (JSON Lines, data in base64) or raw (bare data, one record per line)"},

	{flag: "initial-position", env: "KCLTOOL_INITIAL_POSITION", property: "initialPositionInStream", field: "Initial", opt: "InitialPosition", def: "LATEST",
		invalid: "OLDEST", complete: []string{"TRIM_HORIZON", "LATEST", "AT_TIMESTAMP"},
		usage: "where new leases start: TRIM_HORIZON, LATEST or AT_TIMESTAMP"},
	{flag: "initial-timestamp", env: "KCLTOOL_INITIAL_TIMESTAMP", field: "Initial", opt: "InitialTimestamp", def: "", invalid: "yesterday",
		usage: "the AT_TIMESTAMP instant: RFC 3339 or epoch seconds (implies AT_TIMESTAMP)"},
	{flag: "max-records", env: "KCLTOOL_MAX_RECORDS", property: "maxRecords", conv: propInt, field: "MaxRecords", invalid: "0",
		usage: "records per GetRecords call (at most 10000)"},
	{flag: "idle-between-reads", env: "KCLTOOL_IDLE_BETWEEN_READS", property: "idleTimeBetweenReadsInMillis", conv: propMillis, field: "IdleBetweenReads", invalid: "-1s",
		usage: "pause after a read that found the shard's tip (never more than 5 reads/s per shard)"},
	{flag: "efo", env: "KCLTOOL_EFO", field: "FanOut", opt: "EFO", def: false, invalid: "maybe",
		usage: "read with enhanced fan-out (SubscribeToShard): a dedicated 2 MB/s per shard and records pushed as they arrive; registers the stream consumer when missing (see docs/run.md, Enhanced fan-out)"},
	{flag: "consumer-name", env: "KCLTOOL_CONSUMER_NAME", field: "FanOut.ConsumerName", opt: "ConsumerName", def: "", invalid: "orders-efo", noFiles: true,
		usage: "with --efo, the stream consumer to use, registered when missing (default: the application name, as the KCL)"},
	{flag: "consumer-arn", env: "KCLTOOL_CONSUMER_ARN", field: "FanOut.ConsumerARN", opt: "ConsumerARN", def: "", invalid: "arn:aws:kinesis:x", noFiles: true,
		usage: "with --efo, the ARN of an existing stream consumer, never registered (one --stream only)"},
	{flag: "kinesis-timeout", env: "KCLTOOL_KINESIS_TIMEOUT", field: "KinesisTimeout", invalid: "0s",
		usage: "give up on a Kinesis request (GetRecords, GetShardIterator, ListShards) not answered in this time, and retry it (KCL kinesisRequestTimeout)"},
	{flag: "dynamodb-timeout", env: "KCLTOOL_DYNAMODB_TIMEOUT", field: "DynamoDBTimeout", invalid: "0s",
		usage: "give up on a DynamoDB request not answered in this time, and retry it (KCL dynamoDbRequestTimeout; lease renewals and checkpoints never wait past the renew interval, taker scan pages past --failover-time)"},

	{flag: "batch-size", env: "KCLTOOL_BATCH_SIZE", field: "BatchSize", invalid: "0",
		usage: "most records per handler run"},
	{flag: "batch-window", env: "KCLTOOL_BATCH_WINDOW", field: "BatchWindow", invalid: "-1s",
		usage: "how long a short batch waits for more records (0: hand over what has been read)"},
	{flag: "max-parallel", env: "KCLTOOL_MAX_PARALLEL", field: "MaxParallel", invalid: "0",
		usage: "most handler processes at once, across shards"},

	{flag: "multilang", env: "KCLTOOL_MULTILANG", field: "MultiLang", invalid: "maybe",
		usage: "run the command as one long-lived KCL MultiLang record processor per held lease (the MultiLangDaemon's protocol; the child checkpoints; batch and retry flags do not apply)"},
	// The MultiLangDaemon gives up on a child that sends nothing for this
	// long: --multilang restarts the child's shard instead. Any duration is
	// valid: zero or less is no limit, as in the MultiLangDaemon.
	{flag: "multilang-timeout", env: "KCLTOOL_MULTILANG_TIMEOUT", property: "timeoutInSeconds", conv: propSeconds, field: "MultiLangTimeout",
		usage: "with --multilang, stop a child that sends no message for this long and restart its shard (MLD timeoutInSeconds; 0: no limit)"},
	{flag: "handler-timeout", env: "KCLTOOL_HANDLER_TIMEOUT", field: "Handler.Timeout", invalid: "-1s",
		usage: "kill a handler (its whole process group) that runs longer, and retry (0: no limit)"},
	{flag: "max-retries", env: "KCLTOOL_MAX_RETRIES", field: "MaxRetries", invalid: "-2",
		usage: "give up on a failing batch after this many retries (-1: until it succeeds or --max-record-age passes)"},
	{flag: "max-record-age", env: "KCLTOOL_MAX_RECORD_AGE", field: "MaxRecordAge", invalid: "-1s",
		usage: "give up on a failing batch once its oldest record is older (0: no limit)"},
	{flag: "bisect-on-error", env: "KCLTOOL_BISECT_ON_ERROR", field: "BisectOnError", invalid: "maybe",
		usage: "split a failing batch in halves to isolate the poison record"},
	{flag: "on-failure", env: "KCLTOOL_ON_FAILURE", field: "OnFailureDir", dir: true,
		usage: "write records given up on to a JSON file in this directory, then checkpoint past them"},
	{flag: "retry-backoff", env: "KCLTOOL_RETRY_BACKOFF", field: "Backoff.Initial", invalid: "-1s",
		usage: "first pause before retrying a failed batch; it doubles up to 30s, with jitter"},

	{flag: "worker-id", env: "KCLTOOL_WORKER_ID", property: "workerId", field: "WorkerID",
		usage: "this worker's leaseOwner (default: hostname, pid and a random suffix)"},
	{flag: "failover-time", env: "KCLTOOL_FAILOVER_TIME", property: "failoverTimeMillis", conv: propMillis, field: "Lease.FailoverTime", invalid: "0s",
		usage: "a lease not renewed for this long is taken over (KCL failoverTimeMillis; renewals every third of it)"},
	{flag: "taker-interval", env: "KCLTOOL_TAKER_INTERVAL", field: "Lease.TakerInterval", invalid: "-1s",
		usage: "scan the lease table for leases to take this often (0: adaptive, at most KCL's 2 × (failover + 25ms))"},
	{flag: "max-leases-to-steal", env: "KCLTOOL_MAX_LEASES_TO_STEAL", property: "maxLeasesToStealAtOneTime", conv: propInt, field: "Lease.MaxLeasesToStealAtOneTime", invalid: "0",
		usage: "leases taken from the most loaded worker per taker run when rebalancing"},
	{flag: "max-leases-for-worker", env: "KCLTOOL_MAX_LEASES_FOR_WORKER", property: "maxLeasesForWorker", conv: propInt, field: "Lease.MaxLeasesForWorker", invalid: "-1",
		usage: "most leases this worker holds (0: no limit)"},
	{flag: "create-table", env: "KCLTOOL_CREATE_TABLE", field: "CreateTable", invalid: "maybe",
		usage: "create a missing lease table the way the KCL does (on demand, hash key leaseKey; see --kcl-version)"},
	{flag: "kcl-version", env: "KCLTOOL_KCL_VERSION", field: "KCLVersion", invalid: "4", complete: []string{"3", "2"},
		usage: "with --create-table, the KCL a new application's table is made for: 3, as KCL 3.5 makes it (the LeaseOwnerToLeaseKeyIndex and the Migration3.0 item, whose cv follows --client-version-config; leases are then given by a leader), or 2 (leases taken by the workers); an existing table keeps its mode"},

	{flag: "shutdown-grace", env: "KCLTOOL_SHUTDOWN_GRACE", property: "shutdownGraceMillis", conv: propMillis, field: "ShutdownGrace", invalid: "0s",
		usage: "on SIGTERM or Ctrl-C, how long running handlers may finish"},
	{flag: "shard-sync-interval", env: "KCLTOOL_SHARD_SYNC_INTERVAL", property: "shardSyncIntervalMillis", conv: propMillis, field: "ShardSyncInterval", invalid: "0s",
		usage: "how often shards without a lease are looked for (KCL shardSyncIntervalMillis)"},
	{flag: "parent-poll-interval", env: "KCLTOOL_PARENT_POLL_INTERVAL", property: "parentShardPollIntervalMillis", conv: propMillis, field: "ParentPollInterval", invalid: "0s",
		usage: "how often a child shard checks whether its parents on other workers are done"},
	{flag: "cleanup-interval", env: "KCLTOOL_CLEANUP_INTERVAL", field: "CleanupInterval", invalid: "0s",
		usage: "how often finished parent leases are deleted once their children have started"},

	// KCL 3.x (docs/multilang.md, KCL 3.x keys): the worker-side settings
	// of a 3.x application, read from CoordinatorConfig,
	// LeaseManagementConfig and its GracefulLeaseHandoffConfig and
	// WorkerUtilizationAwareAssignmentConfig, and the side tables' names.
	{flag: "client-version-config", env: "KCLTOOL_CLIENT_VERSION_CONFIG", property: "clientVersionConfig", conv: propUpper, field: "KCL3.ClientVersionConfig",
		invalid: "3X", complete: runner.ClientVersionConfigs,
		usage: "the KCL's clientVersionConfig: CLIENT_VERSION_CONFIG_3X, CLIENT_VERSION_CONFIG_COMPATIBLE_WITH_2X or CLIENT_VERSION_CONFIG_COMPATIBLE_WITH_2X_PHASE1; as in the KCL it decides the mode only while a KCL 3.x table has no Migration3.0 item, whose cv decides otherwise"},
	{flag: "lease-assignment-interval", env: "KCLTOOL_LEASE_ASSIGNMENT_INTERVAL", property: "leaseAssignmentIntervalMillis", conv: propMillis, field: "KCL3.LeaseAssignmentInterval", invalid: "-1s",
		usage: "in a KCL 3.x application, how often the leader assigns leases; this worker looks for leases given to it every half of it (KCL leaseAssignmentIntervalMillis; 0: 2 × --failover-time)"},
	{flag: "graceful-handoff", env: "KCLTOOL_GRACEFUL_HANDOFF", property: "isGracefulLeaseHandoffEnabled", conv: propBool, field: "KCL3.GracefulHandoff", invalid: "maybe",
		usage: "KCL isGracefulLeaseHandoffEnabled: whether a KCL 3.x leader moves leases with a graceful handoff (a leader's setting: a worker honours a handoff either way, as the KCL's workers do)"},
	{flag: "handoff-timeout", env: "KCLTOOL_HANDOFF_TIMEOUT", property: "gracefulLeaseHandoffTimeoutMillis", conv: propMillis, field: "KCL3.HandoffTimeout", invalid: "0s",
		usage: "in a graceful handoff away from this worker, how long its handler may finish and checkpoint before the lease is handed over anyway (KCL gracefulLeaseHandoffTimeoutMillis)"},
	{flag: "coordinator-state-table", env: "KCLTOOL_COORDINATOR_STATE_TABLE", property: "coordinatorStateTableName", field: "KCL3.CoordinatorStateTable", invalid: "a b", noFiles: true,
		usage: "the KCL 3.x coordinator state table (KCL coordinatorStateTableName; default: APP-CoordinatorState)"},
	{flag: "worker-metrics-table", env: "KCLTOOL_WORKER_METRICS_TABLE", property: "workerMetricsTableName", field: "KCL3.WorkerMetricsTable", invalid: "a b", noFiles: true,
		usage: "the KCL 3.x worker metrics table (KCL workerMetricsTableName; default: APP-WorkerMetricStats)"},
	{flag: "worker-metrics-interval", env: "KCLTOOL_WORKER_METRICS_INTERVAL", property: "workerMetricsReporterFreqInMillis", conv: propMillis, field: "KCL3.WorkerMetricsInterval", invalid: "0s",
		usage: "in a KCL 3.x application, how often this worker writes its worker metrics item (KCL workerMetricsReporterFreqInMillis; a leader counts a worker whose item is older than twice its own interval as gone)"},

	// KCL 3.x leadership (issue 26): kcltool's own settings of the
	// leader a kcltool worker becomes; the MultiLangDaemon has no keys for
	// them (its lock lease is a fixed 120 s, its strategy always
	// WORKER_UTILIZATION_AWARE).
	{flag: "no-leader", env: "KCLTOOL_NO_LEADER", field: "KCL3.NoLeader", invalid: "maybe",
		usage: "in a KCL 3.x application, never contend for the leader lock: this worker only follows the fleet's leader (a Java one, say), and warns when that leader is dead"},
	{flag: "leader-lease", env: "KCLTOOL_LEADER_LEASE", field: "KCL3.LeaderLease", invalid: "-1s",
		usage: "in a KCL 3.x application, the leaseDuration this worker writes in the leader lock when it leads: how long other kcltool workers wait on a dead leader's lock before taking it over (Java KCL 3.5.1 workers never take over a lock they can read, KCL issue #1803) (0: 2 × --failover-time; the KCL writes 120s)"},
	{flag: "assignment", env: "KCLTOOL_ASSIGNMENT", opt: "Assignment", def: "throughput", invalid: "fair", complete: []string{"throughput", "lease-count"},
		usage: "in a KCL 3.x application, how this worker balances leases when it leads: throughput (the KCL's worker-utilization-aware assignment, on CPU or throughput) or lease-count (KCL 3.4.3's LEASE_COUNT_BASED)"},
	{flag: "leader-scan-rate", env: "KCLTOOL_LEADER_SCAN_RATE", field: "KCL3.Assignment.ScanRate",
		usage: "in a KCL 3.x application, the read units per second at which this worker, when it leads, scans the lease table at each assignment run (0: " + scanRateDefault + "; negative: unpaced, as the KCL)"},
	{flag: "shard-audit-interval", env: "KCLTOOL_SHARD_AUDIT_INTERVAL", field: "KCL3.ShardAuditInterval", invalid: "-1s",
		usage: "in a KCL 3.x application, how often the leader audits the lease table for shards without a lease, in place of --shard-sync-interval (the KCL's leasesRecoveryAuditorExecutionFrequencyMillis, which its MultiLangDaemon does not read; 0: 2m)"},

	// Served by cmd (runWorker): no runner.Config field. An address that
	// cannot be listened on fails when the worker starts.
	{flag: "metrics-addr", env: "KCLTOOL_METRICS_ADDR", opt: "MetricsAddr", def: "",
		usage: "serve Prometheus metrics on this address, at /metrics, and the health probes /livez, /healthz and /readyz (for example :9090)"},
	{flag: "cloudwatch-metrics", env: "KCLTOOL_CLOUDWATCH_METRICS", field: "CloudWatch", opt: "CloudWatchMetrics", def: false, invalid: "maybe",
		usage: "publish KCL's CloudWatch metrics (namespace = --app, MillisBehindLatest per shard, ...)"},
	{flag: "cloudwatch-interval", env: "KCLTOOL_CLOUDWATCH_INTERVAL", field: "CloudWatchInterval", invalid: "0s",
		usage: "how often CloudWatch metrics are published"},
}

// registerRunSettings adds a flag for every entry of runSettings not
// registered elsewhere, bound to where the entry says its value goes.
func registerRunSettings(c *cobra.Command, o *runOptions) {
	fl := c.Flags()
	for _, s := range runSettings {
		if s.shared {
			continue
		}
		v := s.value(o)
		if !v.IsValid() { // a name misspelled in the table: no flag can work
			panic(fmt.Sprintf("run setting %s: no field %s%s to bind", s.flag, s.opt, s.field))
		}
		if s.opt != "" {
			v.Set(reflect.ValueOf(s.def))
		}
		switch p := v.Addr().Interface().(type) {
		case *time.Duration:
			fl.DurationVar(p, s.flag, *p, s.usage)
		case *int:
			fl.IntVar(p, s.flag, *p, s.usage)
		case *float64:
			fl.Float64Var(p, s.flag, *p, s.usage)
		case *int32:
			fl.Int32Var(p, s.flag, *p, s.usage)
		case *bool:
			fl.BoolVar(p, s.flag, *p, s.usage)
		case *string:
			fl.StringVar(p, s.flag, *p, s.usage)
		case *[]string:
			fl.StringSliceVar(p, s.flag, *p, s.usage)
		default:
			panic(fmt.Sprintf("run setting %s: no flag type for %s", s.flag, v.Type()))
		}
		switch {
		case s.complete != nil:
			_ = c.RegisterFlagCompletionFunc(s.flag, cobra.FixedCompletions(s.complete, cobra.ShellCompDirectiveNoFileComp))
		case s.noFiles: // names and ARNs of one's choosing: nothing to offer
			_ = c.RegisterFlagCompletionFunc(s.flag, cobra.NoFileCompletions)
		case s.dir:
			_ = c.MarkFlagDirname(s.flag)
		}
	}
}

// value is where the setting's flag keeps its value in o: the runOptions
// field opt, or else the field of o.cfg.
func (s runSetting) value(o *runOptions) reflect.Value {
	if s.opt != "" {
		return reflect.ValueOf(o).Elem().FieldByName(s.opt)
	}
	v := reflect.ValueOf(&o.cfg).Elem()
	for _, name := range strings.Split(s.field, ".") {
		if v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		if v = v.FieldByName(name); !v.IsValid() {
			break
		}
	}
	return v
}

// settingOfProperty is the entry a properties key fills.
func settingOfProperty(key string) (runSetting, bool) {
	for _, s := range runSettings {
		if s.property == key {
			return s, true
		}
	}
	return runSetting{}, false
}
