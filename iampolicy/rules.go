package iampolicy

import "github.com/kcltool/kcltool/reset/backupstore"

// rules is the one table of what each command calls: per command, under a
// condition on its flags, the actions on one kind of resource. It is read
// off the code, not off the documentation: each row names the functions
// that make the calls, and the cmd package's end-to-end tests record every
// call through the local servers and fail when one is not allowed by the
// policy this table gives for the exact command line that made it.
//
// A command missing here makes no AWS calls (completion, help, iam-policy).
var rules = []rule{
	// kcltool run: coordination.EnsureLeaseTable at start (with
	// --create-table a KCL 3.x table gets its index in the CreateTable call
	// and the Migration3.0 item by a conditional PutItem), the coordinator's
	// renewals, takes, checkpoints and releases (Scan, UpdateItem,
	// GetItem), shard sync creating leases (PutItem), the cleanup of
	// finished parents (DeleteItem), and the fetcher.
	{cmds("run"), always, leaseTable, dynamodb("DescribeTable", "Scan", "GetItem", "PutItem", "UpdateItem", "DeleteItem")},
	{cmds("run"), flag("create-table"), leaseTable, dynamodb("CreateTable")},
	// KCL 3.x (docs/kcl3.md). The protocol is the table's, not a flag's:
	// run reads it at start and again at every shard sync
	// (coordination.Detect), and a 2.x application may become a 3.x one
	// mid-run, so every run gets the 3.x grants. They stay narrow:
	//  - Query on the LeaseOwnerToLeaseKeyIndex only: the discovery of the
	//    leases the leader gave this worker (KCL DynamoDBLeaseDiscoverer);
	//    the GetItem of each, the renewals, the handoff and the evict are
	//    UpdateItem and GetItem on the lease table, granted above, as are
	//    the worker-metrics item and the Migration3.0 / TableMigration3.5 /
	//    leader items when they live in the lease table.
	//  - CoordinatorState: DescribeTable tells whether the side table
	//    exists (the layout); GetItem reads Migration3.0, TableMigration3.5
	//    and the leader lock. Every worker contends for the leader lock
	//    (runner/leader.go, coordination.LeaderLock, written as
	//    dynamodb-lock-client writes it): PutItem to acquire, UpdateItem to
	//    heartbeat, DeleteItem to release, all conditional and on the
	//    Leader item only. Migration3.0 is written by run once, under
	//    CLIENT_VERSION_UPGRADE_FROM_2X, when the 2.x fleet's leader flips
	//    cv to 3X_WITH_ROLLBACK (runner/migration_monitor.go: a
	//    conditional UpdateItem where the item is), as by the KCL's
	//    migration tool and kcltool migration.
	//  - WorkerMetricStats: DescribeTable (the layout) and UpdateItem, the
	//    upsert of this worker's own item (WorkerMetricStatsDAO's
	//    updateItem with ignoreNulls), and DeleteItem of that item at a
	//    graceful stop (coordination.Reporter.Remove), so that the leader
	//    stops counting the worker before its leases are evicted. Scan: the
	//    leader reads every worker's item at each assignment run until the
	//    table migration is COMPLETE (MigrationAwareLAMDataManager). In the
	//    lease-table layout the same calls fall on the lease table, granted
	//    above.
	{cmds("run"), always, leaseOwnerIndex, dynamodb("Query")},
	{cmds("run"), always, coordinatorStateTable, dynamodb("DescribeTable", "GetItem", "PutItem", "UpdateItem", "DeleteItem")},
	{cmds("run"), always, workerMetricsTable, dynamodb("DescribeTable", "Scan", "UpdateItem", "DeleteItem")},
	// DescribeStreamSummary gives multi-stream leases their account and
	// epoch (runner/multistream.go); the table's own keys can select that
	// mode for a single --stream, so it is always granted.
	{cmds("run"), always, stream, kinesis("ListShards", "GetShardIterator", "GetRecords", "DescribeStreamSummary")},
	{cmds("run"), flag("cloudwatch-metrics"), metricsNamespace, cloudwatch("PutMetricData")},
	// run --efo (runner/efo.go, fanout.EnsureActive, runner/efo_reader.go):
	// the stream's ARN (DescribeStreamSummary, above), the consumer
	// registered when missing and described until ACTIVE (and again when a
	// subscription finds it gone), and the subscriptions. --consumer-arn
	// never registers. A properties file can ask for fan-out
	// (RetrievalMode), and iam-policy does not read it.
	{cmds("run"), all(efoRun, not(given("consumer-arn"))), stream, kinesis("RegisterStreamConsumer")},
	{cmds("run"), efoRun, runConsumer, kinesis("DescribeStreamConsumer", "SubscribeToShard")},

	// Read-only operator commands (inspect): DescribeTable, then Scan.
	{cmds("leases ls", "leases owners"), always, leaseTable, dynamodb("DescribeTable", "Scan")},
	// leases owners reads a KCL 3.x application's leader lock and worker
	// metrics in both layouts (inspect.ReadKCL3: coordination.Detect,
	// ReadLock, ListWorkerMetrics): GetItem of the Migration3.0, Leader and
	// TableMigration3.5 items, and the side tables described and read.
	{cmds("leases owners"), always, leaseTable, dynamodb("GetItem")},
	{cmds("leases owners"), always, kcl3TablesOfApp, dynamodb("DescribeTable", "GetItem", "Scan")},
	{cmds("checkpoint diff", "lag"), always, leaseTable, dynamodb("DescribeTable", "Scan")},
	{cmds("checkpoint diff", "lag"), always, stream, kinesis("ListShards", "GetShardIterator", "GetRecords")},
	{cmds("shards lineage", "lineage"), always, stream, kinesis("ListShards")},
	{cmds("shards lineage", "lineage"), given("app", "table"), leaseTable, dynamodb("DescribeTable", "Scan")},
	{cmds("checkpoint export"), always, leaseTable, dynamodb("Scan")},

	// checkpoint reset (reset.PlanReset, reset.Execute): the dry run only
	// reads; the stream is read unless positions come from a file, records
	// only to resolve a time or check a sequence number.
	{cmds("checkpoint reset"), always, leaseTable, dynamodb("Scan")},
	{cmds("checkpoint reset"), not(given("from-file")), stream, kinesis("ListShards")},
	{cmds("checkpoint reset"), given("at", "by-duration"), stream, kinesis("DescribeStreamSummary", "GetShardIterator", "GetRecords")},
	{cmds("checkpoint reset"), given("to-sequence"), stream, kinesis("GetShardIterator", "GetRecords")},
	// UpdateItem sets checkpoints, PutItem recreates cleaned-up parents;
	// GetItem reads a lease back after a write whose answer failed
	// (reset/readback.go), and --force re-reads each lease before its write.
	{cmds("checkpoint reset"), flag("execute"), leaseTable, dynamodb("UpdateItem", "PutItem", "GetItem")},

	// checkpoint import (reset.PlanImport, reset.Execute) writes only to its
	// destination: --to-app/--to-table, else the application's table.
	{cmds("checkpoint import"), always, importTable, dynamodb("Scan")},
	{cmds("checkpoint import"), flag("execute"), importTable, dynamodb("PutItem", "GetItem")},
	{cmds("checkpoint import"), all(flag("execute"), given("to-app", "to-table")), importTable, dynamodb("UpdateItem")},
	{cmds("checkpoint import"), all(flag("execute"), flag("prune")), importTable, dynamodb("DeleteItem")},
	// --create-table (coordination.EnsureLeaseTable, run's creation): the
	// Migration3.0 item of a KCL 3.x table is a PutItem, granted with
	// --execute above, the only case in which the table is created.
	{cmds("checkpoint import"), flag("create-table"), importTable, dynamodb("DescribeTable", "CreateTable")},

	// Backups in S3 (--backup-dir s3://bucket/prefix, reset/backupstore):
	// with --execute, reset and import upload the plan and the backup, one
	// PutObject each, under the prefix only; backups ls lists the prefix
	// (ListObjectsV2 pages, authorized as s3:ListBucket on the bucket with
	// an s3:prefix condition) and reads the head of each backup and plan.
	// import --file s3://bucket/key reads that one object: the undo a reset
	// printed, run from any machine.
	{cmds("checkpoint reset", "checkpoint import"), all(flag("execute"), s3BackupDir), backupObjects, s3("PutObject")},
	{cmds("checkpoint backups ls"), s3BackupDir, backupObjects, s3("GetObject")},
	{cmds("checkpoint backups ls"), s3BackupDir, backupBucket, s3("ListBucket")},
	{cmds("checkpoint import"), s3File, importObject, s3("GetObject")},

	// doctor (doctor.Doctor) never writes. Without --stream a multi-stream
	// table still names its streams, so the stream grant stays, as a
	// placeholder. DescribeStreamSummary only asks whether shard-level
	// metrics are on, for the CloudWatch reads.
	{cmds("doctor"), always, leaseTable, dynamodb("DescribeTable", "Scan")},
	// The KCL 3.x state in both layouts (inspect/doctor/kcl3.go through
	// coordination's readers): the items of the lease table and of
	// <app>-CoordinatorState (the lock at every read), the side tables
	// described, and scanned for the worker metrics.
	{cmds("doctor"), always, leaseTable, dynamodb("GetItem")},
	{cmds("doctor"), always, kcl3TablesOfApp, dynamodb("DescribeTable", "GetItem", "Scan")},
	{cmds("doctor"), always, stream, kinesis("ListShards", "GetShardIterator", "GetRecords")},
	{cmds("doctor"), not(flag("no-cloudwatch")), stream, kinesis("DescribeStreamSummary")},
	{cmds("doctor"), not(flag("no-cloudwatch")), anyResource, cloudwatch("GetMetricData")},
	// doctor's consumer checks (inspect/doctor/consumers.go): the stream's
	// ARN from its summary, then its enhanced fan-out consumers.
	{cmds("doctor"), always, stream, kinesis("DescribeStreamSummary", "ListStreamConsumers")},

	// top (inspect/top.Sampler) never writes: the table described once and
	// scanned every refresh, and the stream's lag probe plus one counting
	// GetRecords where a checkpoint moved. Doctor's checks run over those
	// reads (doctor.Follower): the KCL 3.x items of the lease table come
	// from the scan (no GetItem there), the side tables are read as doctor
	// reads them, and so are the consumers and CloudWatch.
	{cmds("top"), always, leaseTable, dynamodb("DescribeTable", "Scan")},
	{cmds("top"), always, kcl3TablesOfApp, dynamodb("DescribeTable", "GetItem", "Scan")},
	{cmds("top"), always, stream, kinesis("ListShards", "GetShardIterator", "GetRecords", "DescribeStreamSummary", "ListStreamConsumers")},
	{cmds("top"), not(flag("no-cloudwatch")), anyResource, cloudwatch("GetMetricData")},

	// Enhanced fan-out consumers (fanout.ListStreamConsumers): the summary
	// gives the stream's ARN, which the listing needs. deregister reads the
	// application's lease table (inspect.ReadAppActivity) and, with
	// --execute, deregisters by the consumer's ARN and describes it after.
	{cmds("consumers ls", "consumers deregister"), always, stream, kinesis("DescribeStreamSummary", "ListStreamConsumers")},
	{cmds("consumers deregister"), always, consumerAppTable, dynamodb("DescribeTable", "Scan")},
	{cmds("consumers deregister"), flag("execute"), consumer, kinesis("DeregisterStreamConsumer", "DescribeStreamConsumer")},

	// migration status (inspect.ReadMigration) only reads: coordination.Detect
	// (the tables described, Migration3.0 and TableMigration3.5 read), one
	// scan of the lease table, the worker metrics in both layouts
	// (ListWorkerMetrics) and, during tm PENDING, the coordinator state
	// table's keys. The side tables are the flags' names, else the app's.
	{cmds("migration status"), always, leaseTable, dynamodb("DescribeTable", "GetItem", "Scan")},
	{cmds("migration status"), always, coordinatorStateTable, dynamodb("DescribeTable", "GetItem", "Scan")},
	{cmds("migration status"), always, workerMetricsTable, dynamodb("DescribeTable", "Scan")},
	// migration start | rollback | finalize plan from the same reads
	// (inspect.PlanMigration) and, with --execute, write
	// (coordination.MigrationApply): Migration3.0 created (PutItem) or
	// changed (UpdateItem) where it is, in either table; start adds and
	// rollback deletes the LeaseOwnerToLeaseKeyIndex (UpdateTable, then
	// DescribeTable until done); rollback deletes a KCL 3.0-3.4 fleet's
	// WorkerMetricStats table.
	{cmds("migration start", "migration rollback", "migration finalize"), always, leaseTable, dynamodb("DescribeTable", "GetItem", "Scan")},
	{cmds("migration start", "migration rollback", "migration finalize"), always, coordinatorStateTable, dynamodb("DescribeTable", "GetItem", "Scan")},
	{cmds("migration start", "migration rollback", "migration finalize"), always, workerMetricsTable, dynamodb("DescribeTable", "Scan")},
	{cmds("migration start", "migration rollback", "migration finalize"), flag("execute"), leaseTable, dynamodb("PutItem", "UpdateItem")},
	{cmds("migration start", "migration rollback", "migration finalize"), flag("execute"), coordinatorStateTable, dynamodb("PutItem", "UpdateItem")},
	{cmds("migration start", "migration rollback"), flag("execute"), leaseTable, dynamodb("UpdateTable")},
	{cmds("migration rollback"), flag("execute"), workerMetricsTable, dynamodb("DeleteTable")},
}

// s3BackupDir: --backup-dir names an S3 bucket; s3File: --file an object.
var (
	s3BackupDir = cond{func(t Target) bool { return backupstore.IsS3(t.Flags["backup-dir"]) }, []string{"backup-dir"}}
	s3File      = cond{func(t Target) bool { return backupstore.IsS3(t.Flags["file"]) }, []string{"file"}}
)

// efoRun: run reads with enhanced fan-out with --efo. iam-policy resolves
// a properties file as run does, so RetrievalMode FANOUT and the DEFAULT
// rule arrive here as --efo.
var efoRun = cond{func(t Target) bool { return t.Flags["efo"] == "true" }, []string{"efo"}}
