package cmd

import (
	"fmt"
	"strings"

	"github.com/kcltool/kcltool/cmd/checkpoint"
	"github.com/kcltool/kcltool/cmd/consumers"
	"github.com/kcltool/kcltool/cmd/doctor"
	"github.com/kcltool/kcltool/cmd/leases"
	"github.com/kcltool/kcltool/cmd/migration"
	"github.com/kcltool/kcltool/cmd/shards"
	"github.com/kcltool/kcltool/reset"
)

// This file is the one list of every command's JSON keys. docs/json.md is
// rendered from it (jsonSchemaMarkdown), the JSON structs are checked
// against it field by field, and the end-to-end test checks the real
// binary's output against it: a key added to a struct and not here, or
// documented and not printed, fails a test.

// JSON value types. "… or null" types are null when the value is absent;
// lists are [] when empty, never null.
const (
	tString        = "string"
	tStringOrNull  = "string or null"
	tNumber        = "number"
	tNumberOrNull  = "number or null"
	tBoolean       = "boolean"
	tStrings       = "list of strings"
	tNumbers       = "list of numbers"
	tObject        = "object"
	tObjectOrNull  = "object or null"
	tObjects       = "list of objects"
	tNumberMap     = "object of numbers" // keys are names, not documented one by one
	tDynamoDBItem  = "object (DynamoDB JSON)"
	tValue         = "the field's JSON type, or null"
	tRow           = "object (the command's row)" // its keys are the command's own, documented there
	jsonSchemaNote = "Every documented key is always present. A value that is absent is `null`; a list with nothing in it is `[]`, never `null`. Keys may be added in later versions, never renamed or removed."
)

// jsonKey is one documented key. Path is the key's place in the object:
// "lease.leaseOwner" is inside the object under "lease", "findings[].id"
// inside each object of the list "findings".
type jsonKey struct {
	Path string
	Type string
	Doc  string
}

// jsonCommand documents one command's JSON.
type jsonCommand struct {
	Name  string // the lookup key: "leases ls"
	Title string // the heading; "`kcltool NAME -o json`" when empty
	Shape string // what the document is, in a sentence or two
	Keys  []jsonKey
	CSV   []string // the -o csv header; nil without CSV output
	// CSVNote says how lists and nested values go into CSV fields.
	CSVNote string
}

// planRowKeys are the keys of one reset or import plan row; the plan file
// holds the same rows under "changes".
var planRowKeys = []jsonKey{
	{"leaseKey", tString, "the lease"},
	{"shardId", tString, "its raw shard id"},
	{"action", tString, "`update`, `create`, `restore`, `delete`, `unchanged` or `skip` (for example a lease whose shard the stream no longer has)"},
	{"before", tObjectOrNull, "the position as read; null when the lease does not exist"},
	{"before.checkpoint", tString, "sequence number or sentinel"},
	{"before.subSequenceNumber", tNumber, "KPL sub-sequence number"},
	{"after", tObjectOrNull, "the position it gets; null for `delete` and `skip`"},
	{"after.checkpoint", tString, "sequence number or sentinel"},
	{"after.subSequenceNumber", tNumber, "KPL sub-sequence number"},
	{"reason", tString, "why, in words; it says when a lease is in a KCL 3.x handoff"},
	{"leaseOwner", tStringOrNull, "the owner as read; null when unassigned or when the lease does not exist"},
	{"checkpointOwner", tStringOrNull, "KCL 3.x handoff: the worker still processing; null otherwise"},
	{"leaseCounter", tNumberOrNull, "the counter as read; null when the lease does not exist"},
	{"result", tStringOrNull, "after `--execute`: `applied`, `unchanged`, `skipped` (changed since the plan: not written), `failed` or `not-attempted`; null in a dry run"},
	{"detail", tStringOrNull, "after `--execute`: the error or what changed; null when there is nothing to say or in a dry run"},
	{"confirmedBy", tStringOrNull, "after `--execute`: `read-back` when the write's answer was lost or it failed ambiguously (timeout, reset connection, 5xx, or a retried conditional write failing against its own earlier attempt) and a read of the lease showed it applied as meant; null otherwise"},
}

func prefixed(prefix string, keys []jsonKey) []jsonKey {
	out := make([]jsonKey, len(keys))
	for i, k := range keys {
		out[i] = jsonKey{prefix + k.Path, k.Type, k.Doc}
	}
	return out
}

// jsonSchemas is every command's JSON, in the order docs/json.md shows them.
var jsonSchemas = []jsonCommand{
	{
		Name:  "leases ls",
		Shape: "An array, one object per lease, one object per line (`[]` when no lease matches). Keys are the KCL attribute names.",
		Keys: []jsonKey{
			{"leaseKey", tString, "the shard id, or `account:stream:epoch:shardId` in a multi-stream table"},
			{"leaseOwner", tStringOrNull, "the worker holding the lease; null when unassigned"},
			{"leaseCounter", tNumber, "incremented by every renewal, take and checkpoint"},
			{"ownerSwitchesSinceCheckpoint", tNumber, "owner changes since the last checkpoint"},
			{"checkpoint", tString, "a sequence number (a string: 56 digits overflow JSON numbers) or `TRIM_HORIZON`, `LATEST`, `SHARD_END`, `AT_TIMESTAMP`"},
			{"checkpointSubSequenceNumber", tNumber, "KPL sub-record index"},
			{"pendingCheckpoint", tStringOrNull, "a two-phase checkpoint in progress; null when none"},
			{"pendingCheckpointSubSequenceNumber", tNumberOrNull, "null when no pending checkpoint"},
			{"pendingCheckpointState", tStringOrNull, "base64 of the binary attribute; null when absent"},
			{"parentShardId", tStrings, "one parent after a split, two after a merge (the KCL attribute name is singular); `[]` for none"},
			{"childShardIds", tStrings, "written at SHARD_END; `[]` before"},
			{"startingHashKey", tStringOrNull, "decimal, up to 2^128−1; null when the lease does not record it"},
			{"endingHashKey", tStringOrNull, "decimal; null when the lease does not record it"},
			{"throughputKBps", tNumberOrNull, "KCL 3.x; null otherwise"},
			{"checkpointOwner", tStringOrNull, "KCL 3.x graceful handoff: the worker still processing; null otherwise"},
			{"entityType", tStringOrNull, "`LEASE` in KCL 3.5+; null before"},
			{"streamName", tStringOrNull, "multi-stream tables: `account:stream:epoch`; null in a single-stream table"},
			{"shardId", tString, "the raw shard id, in every table: the lease key in a single-stream table, the attribute (or the key's last part) in a multi-stream one; builds before this change gave null in a single-stream table (CHANGELOG)"},
			{"state", tString, "derived: `shard-end`, `handoff`, `waiting-on-parent`, `expired`, `owned` or `unassigned`"},
			{"blockedBy", tStrings, "derived: the parents a `waiting-on-parent` lease waits for; `[]` otherwise"},
			{"renewalsSeen", tNumberOrNull, "derived, with `--sample`: how far the counter moved; null without `--sample`"},
		},
		CSV:     leases.LeaseCSVColumns,
		CSVNote: "`shardId` is the shard id in every table; lists are joined with `;`.",
	},
	{
		Name:  "leases ls --non-leases",
		Shape: "An array, one object per KCL 3.x non-lease item (leader lock, migration state, worker metrics).",
		Keys: []jsonKey{
			{"leaseKey", tString, "the item's key"},
			{"entityType", tStringOrNull, "`LEADER`, `CLIENT_VERSION_MIGRATION`, `WORKER_METRIC_STATS`, …; null when the item has none"},
		},
		CSV: leases.NonLeaseCSVColumns,
	},
	{
		Name:  "leases owners",
		Shape: "An array, one object per worker holding a lease.",
		Keys: []jsonKey{
			{"worker", tString, "the worker id (`leaseOwner`)"},
			{"leases", tNumber, "leases it holds, SHARD_END ones not counted"},
			{"fairShare", tNumber, "ceil(leases / workers), the KCL 2.x taker's target"},
			{"shards", tStrings, "the shard ids (lease keys) it holds"},
			{"expired", tNumberOrNull, "with `--sample`: its leases whose counter did not move; null without `--sample`"},
			{"renewals", tNumberOrNull, "with `--sample`: how far its counters moved; null without `--sample`"},
			{"lastUpdate", tStringOrNull, "KCL 3.x: when its worker-metrics item was last updated (RFC 3339, UTC); null without one"},
			{"cpu", tNumbers, "KCL 3.x: its worker-metrics CPU series; `[]` without one"},
			{"leader", tBoolean, "KCL 3.x: it holds the leader lock"},
			{"throughputKBps", tNumberOrNull, "KCL 3.x: the sum of its leases' `throughputKBps`; null when none of its leases has one"},
			{"metricsTable", tStringOrNull, "KCL 3.x: the table its worker-metrics item was read from (the lease table, or `<app>-WorkerMetricStats`); null without one"},
			{"assignment", tStringOrNull, "the table's lease assignment mode, the same in every row: what a `kcltool run` worker would do on it now, `taking` (KCL 2.x, or 3.x upgrading from or rolled back to 2.x) or `leader` (KCL 3.x: the leader assigns); null when the mode could not be read"},
			{"assignmentReason", tStringOrNull, "why: the evidence read (the `LeaseOwnerToLeaseKeyIndex`, the `Migration3.0` item's `cv`, the `TableMigration3.5` item's `tm`), as `kcltool run` logs it at start; null when the mode could not be read"},
			{"clientVersion", tStringOrNull, "KCL 3.x: the `Migration3.0` item's `cv` (`CLIENT_VERSION_3X`, …); null without one"},
			{"tableMigration", tStringOrNull, "KCL 3.5: the `TableMigration3.5` item's `tm`; null without one"},
			{"layout", tStringOrNull, "where the KCL 3.x coordination items live: `none` (KCL 2.x), `side-tables` (`<app>-CoordinatorState` and `<app>-WorkerMetricStats`), `pending` (table migration under way) or `lease-table`; null when the mode could not be read"},
		},
		CSV:     leases.OwnersCSVColumns,
		CSVNote: "`shards` is joined with `;`.",
	},
	{
		Name:  "checkpoint diff",
		Shape: "`checkpoint diff` and its alias `lag`: an array, one object per shard or lease.",
		Keys: []jsonKey{
			{"streamName", tStringOrNull, "the stream the row belongs to"},
			{"shardId", tString, "the shard id"},
			{"leaseKey", tStringOrNull, "null for a shard without a lease"},
			{"leaseOwner", tStringOrNull, "null without a lease or when unassigned"},
			{"checkpoint", tStringOrNull, "null without a lease"},
			{"checkpointSubSequenceNumber", tNumberOrNull, "null without a lease"},
			{"shardStatus", tStringOrNull, "`open` or `closed`; null for an `orphan-lease`"},
			{"millisBehindLatest", tNumberOrNull, "milliseconds behind the tip (the table's BEHIND shows it rounded: `32s`, `4m10s`, `2h3m`); null where not measured: closed shards, sentinel checkpoints, no lease"},
			{"state", tString, "`at-tip`, `behind`, `not-started`, `drained`, `closed-undrained`, `blocked`, `missing-lease` or `orphan-lease`"},
			{"blockedBy", tStrings, "the parents a `blocked` row waits for; `[]` otherwise"},
			{"note", tStringOrNull, "a few words for `missing-lease`, `orphan-lease` and cleaned-up shards; null otherwise"},
		},
		CSV:     checkpoint.LagCSVColumns,
		CSVNote: "`blockedBy` is joined with `;`.",
	},
	{
		Name:  "watch events",
		Title: "`kcltool leases ls|leases owners|lag --watch -o json`",
		Shape: "JSON Lines: one object per change, one a line, after kubectl's watch events (docs/watch.md). The first read comes as one `ADDED` event per row with `initial` true; every later read that changed something adds one event per changed row. A read with no change prints nothing.",
		Keys: []jsonKey{
			{"time", tString, "when the read ended, RFC 3339 UTC, milliseconds"},
			{"type", tString, "`ADDED` (a new row, or the first read), `MODIFIED` (a watched field changed) or `DELETED` (the row is gone; `object` is its last read)"},
			{"initial", tBoolean, "true for the first read's events"},
			{"key", tString, "the row: `leaseKey` for `leases ls`, `worker` for `leases owners`, `streamName/shardId` for `lag`"},
			{"changed", tObjects, "`MODIFIED`: the watched fields that changed; `[]` for the other types"},
			{"changed[].field", tString, "the key in `object`: `leases ls` watches `leaseOwner`, `checkpoint`, `checkpointSubSequenceNumber`, `pendingCheckpoint`, `checkpointOwner`, `state`, `blockedBy` (not `leaseCounter`, which every renewal moves); `leases owners` `leases`, `shards`, `leader`; `lag` `leaseOwner`, `checkpoint`, `shardStatus`, `millisBehindLatest`, `state`, `blockedBy`"},
			{"changed[].from", tValue, "its value in the previous read"},
			{"changed[].to", tValue, "its value now"},
			{"object", tRow, "the row as the command's one-shot `-o json` prints it, with the same keys (above)"},
		},
	},
	{
		Name:  "shards lineage",
		Shape: "`shards lineage` and its alias `lineage`: an array, one object per shard, parents before children. Leases of shards the stream does not have are not in it (see `checkpoint diff`).",
		Keys: []jsonKey{
			{"shardId", tString, "the shard id"},
			{"parentShardId", tStringOrNull, "null for a shard without a parent"},
			{"adjacentParentShardId", tStringOrNull, "the second parent of a merge; null otherwise"},
			{"childShardIds", tStrings, "`[]` for an open shard"},
			{"open", tBoolean, "the shard takes writes"},
			{"startingHashKey", tString, "decimal"},
			{"endingHashKey", tString, "decimal"},
			{"share", tNumber, "its fraction of the hash key space, 0..1"},
			{"lease", tObjectOrNull, "its lease; null without `--app` or without a lease"},
			{"lease.leaseKey", tString, "the lease key"},
			{"lease.leaseOwner", tStringOrNull, "null when unassigned"},
			{"lease.checkpoint", tString, "sequence number or sentinel"},
			{"lease.checkpointSubSequenceNumber", tNumber, "KPL sub-record index"},
			{"lease.state", tString, "as in `leases ls`"},
			{"lease.blockedBy", tStrings, "the parents an idle child waits for; `[]` otherwise"},
			{"lease.waiting", tStringOrNull, "why an idle child waits, in words; null when it does not"},
		},
		CSV:     shards.LineageCSVColumns,
		CSVNote: "`childShardIds` is joined with `;`; the lease columns are empty without a lease.",
	},
	{
		Name:  "consumers ls",
		Shape: "An array, one object per enhanced fan-out consumer registered on the stream, sorted by name (`[]` when none). Keys are the AWS names, as `DescribeStreamConsumer` gives them. `consumers deregister` prints its consumer the same way: an array of one, its status after `--execute`.",
		Keys: []jsonKey{
			{"ConsumerName", tString, "the consumer's name (the KCL names it after the application)"},
			{"ConsumerARN", tString, "its ARN; it ends with the creation time, so a consumer registered again under the same name has a new one"},
			{"ConsumerStatus", tString, "`CREATING`, `ACTIVE` or `DELETING`"},
			{"ConsumerCreationTimestamp", tString, "when it was registered, RFC 3339 UTC"},
			{"StreamARN", tString, "the stream it reads"},
		},
		CSV: consumers.CSVColumns,
	},
	{
		Name:  "migration status",
		Shape: "One object, indented: the application's KCL 3.x migration state and the next steps with what blocks them.",
		Keys: []jsonKey{
			{"table", tString, "the lease table"},
			{"coordinatorStateTable", tString, "the KCL 3.0-3.4 coordinator state table read (`--coordinator-state-table`, else `APP-CoordinatorState`)"},
			{"workerMetricsTable", tString, "the KCL 3.0-3.4 worker metrics table read (`--worker-metrics-table`, else `APP-WorkerMetricStats`)"},
			{"kcl", tString, "`2.x`, `3.x upgrading from 2.x`, `3.x rolled back to 2.x` or `3.x`"},
			{"layout", tString, "where the KCL 3.x coordination items live: `none` (KCL 2.x), `side-tables`, `pending` (table migration under way) or `lease-table`, as in `leases owners`"},
			{"cv", tStringOrNull, "the Migration3.0 item's client version; null without the item"},
			{"mb", tStringOrNull, "who wrote cv (the item's `mb`); null when unknown"},
			{"mts", tStringOrNull, "when cv was written (the item's `mts`), RFC 3339 UTC; null when unknown"},
			{"h", tObjects, "cv's history (the item's `h`): the earlier client versions as the item keeps them, newest first; `[]` without one"},
			{"h[].cv", tString, "an earlier client version"},
			{"h[].mb", tString, "who wrote it"},
			{"h[].mts", tStringOrNull, "when, RFC 3339 UTC; null when unknown"},
			{"tm", tStringOrNull, "the TableMigration3.5 item's status; null without the item"},
			{"tmMts", tStringOrNull, "when tm was written (that item's `mts`), RFC 3339 UTC; null when unknown"},
			{"index", tStringOrNull, "the LeaseOwnerToLeaseKeyIndex's status (`ACTIVE`, `CREATING`, ...); null without the index"},
			{"leases", tNumber, "leases in the table"},
			{"unassigned", tNumber, "leases without an owner"},
			{"owners", tStrings, "the workers holding a lease"},
			{"freshWorkers", tStrings, "the workers with worker metrics newer than 60s"},
			{"next", tStringOrNull, "the next step in a line; null when nothing is pending"},
			{"checks", tObjects, "the cv flip's readiness checks, one by one (MigrationReadyMonitor); `[]` unless cv is `CLIENT_VERSION_UPGRADE_FROM_2X`"},
			{"checks[].check", tString, "what is checked"},
			{"checks[].ok", tBoolean, "it passes"},
			{"checks[].detail", tString, "what was found"},
			{"steps", tObjects, "the pending steps of the cv and tm migrations; `[]` when none"},
			{"steps[].step", tString, "the step: `cv FROM → TO` or `tm FROM → TO`"},
			{"steps[].by", tString, "`leader` (the KCL's leader takes it when ready) or `operator` (a deployment or the KCL's migration script)"},
			{"steps[].note", tString, "what happens next"},
			{"steps[].blockers", tStrings, "what holds the step, one condition each"},
			{"steps[].workers", tStrings, "the workers named in the blockers"},
			{"steps[].waitLeftMillis", tNumberOrNull, "the time left of the KCL's own wait since the state was written; null when it has run out or the step has none"},
			{"steps[].overdue", tBoolean, "something blocks and the KCL's own wait has run out"},
			{"blocked", tBoolean, "something blocks a step (the command exits 3)"},
		},
		CSV:     migration.CSVColumns,
		CSVNote: "One row per pending step (one row with `next` in `step` when none is pending); `blockers` joined with `; `, `workers` with spaces.",
	},
	{
		Name:  "migration start",
		Shape: "One object, indented: the plan of `migration start`, `migration rollback` or `migration finalize` (the same keys for the three) and, with `--execute`, which steps were done.",
		Keys: []jsonKey{
			{"command", tString, "`start`, `rollback` or `finalize`"},
			{"table", tString, "the lease table"},
			{"coordinatorStateTable", tString, "the KCL 3.0-3.4 coordinator state table (`--coordinator-state-table`, else `APP-CoordinatorState`)"},
			{"workerMetricsTable", tString, "the KCL 3.0-3.4 worker metrics table (`--worker-metrics-table`, else `APP-WorkerMetricStats`)"},
			{"layout", tString, "where the KCL 3.x coordination items live, as in `migration status`"},
			{"cv", tStringOrNull, "the Migration3.0 item's client version as read; null without the item"},
			{"index", tStringOrNull, "the LeaseOwnerToLeaseKeyIndex's status as read; null without the index"},
			{"execute", tBoolean, "`--execute` was given (false: a dry run, nothing written)"},
			{"after", tObjectOrNull, "the application read again after `--execute`'s writes (`checks` are then as they now stand); null in a dry run, or when nothing was written"},
			{"after.cv", tStringOrNull, "cv after the writes; null without the item"},
			{"after.index", tStringOrNull, "the index's status after the writes; null without the index"},
			{"steps", tObjects, "the planned steps in order; `[]` when there is nothing to do or the step is blocked before any"},
			{"steps[].action", tString, "`create-cv` (Migration3.0 created if none exists), `update-cv` (cv changed if cv and mts are still the ones read), `add-index` (UpdateTable, then waited for ACTIVE), `wait-index`, `wait` (rollback's wait before the index deletion), `delete-index` or `delete-table` (a KCL 3.0-3.4 fleet's WorkerMetricStats)"},
			{"steps[].table", tString, "the table written; empty for a wait"},
			{"steps[].from", tStringOrNull, "the cv read, which the write is conditioned on; null unless `update-cv`"},
			{"steps[].to", tStringOrNull, "the cv written; null unless a cv write"},
			{"steps[].waitMillis", tNumberOrNull, "the wait of a `wait` step; null otherwise"},
			{"steps[].detail", tString, "the step in a line"},
			{"steps[].done", tBoolean, "applied by this run (`--execute`)"},
			{"checks", tObjects, "the readiness checks of the leader's flip to `CLIENT_VERSION_3X_WITH_ROLLBACK` (MigrationReadyMonitor), as in `migration status`, with one `owner W: ...` check per lease owner after the aggregate (at most 20); `[]` when that flip is not ahead (start and finalize only)"},
			{"checks[].check", tString, "what is checked"},
			{"checks[].ok", tBoolean, "it passes"},
			{"checks[].detail", tString, "what was found"},
			{"blockers", tStrings, "what holds this command's step, one condition each; `[]` when nothing does"},
			{"blocked", tBoolean, "something holds the step: nothing was written and the command exits 3"},
			{"nothingToDo", tStringOrNull, "why there is nothing to do; null when there is"},
			{"next", tStringOrNull, "what follows the step; null when nothing does"},
		},
	},
	{
		Name:  "doctor",
		Shape: "One object, indented. With `--watch`, one compact object per line per report.",
		Keys: []jsonKey{
			{"app", tString, "the application"},
			{"table", tString, "the lease table"},
			{"stream", tStringOrNull, "the stream; null without `--stream` (and not a multi-stream table)"},
			{"started", tString, "start of the window, RFC 3339 UTC"},
			{"ended", tString, "end of the window, RFC 3339 UTC"},
			{"windowMillis", tNumber, "the window's length"},
			{"failoverTimeMillis", tNumber, "the failover time: how far apart the reads are"},
			{"reads", tNumber, "lease-table reads in the window"},
			{"partial", tBoolean, "`--watch`'s first report, made at once from one read: the findings that compare reads a failover time apart (expired leases, dead workers, churn, stuck shards) cannot be in it; false otherwise"},
			{"leases", tNumber, "leases in the table"},
			{"workers", tNumber, "workers holding a lease"},
			{"kcl3", tBoolean, "the table is a KCL 3.x table"},
			{"worst", tString, "`critical`, `warn`, `info`, or `none` without findings"},
			{"failOn", tString, "the `--fail-on` threshold; `never` for `--fail-on never`"},
			{"failed", tBoolean, "exit 3 applies"},
			{"findings", tObjects, "worst first; `[]` when none"},
			{"findings[].id", tString, "the finding's id (a contract, as the keys are)"},
			{"findings[].severity", tString, "`info`, `warn` or `critical`"},
			{"findings[].summary", tString, "one line"},
			{"findings[].evidence", tObject, "what the finding rests on"},
			{"findings[].evidence.lines", tStrings, "the facts in words, one per lease, shard or worker"},
			{"findings[].evidence.values", tNumberMap, "the numbers by name; `{}` when none"},
			{"findings[].evidence.shards", tStrings, "shard ids (lease keys in multi-stream tables) involved"},
			{"findings[].evidence.workers", tStrings, "worker ids involved"},
			{"findings[].cause", tString, "why it happens"},
			{"findings[].fix", tString, "what to do"},
			{"cost", tObject, "what the run read"},
			{"cost.dynamodb", tObject, "lease-table reads"},
			{"cost.dynamodb.scans", tNumber, "full scans of the lease table"},
			{"cost.dynamodb.pages", tNumber, "Scan pages read"},
			{"cost.dynamodb.legacyScans", tNumber, "scans of `<app>-CoordinatorState` (KCL 3.x, table migration PENDING only)"},
			{"cost.dynamodb.coordination", tNumber, "requests reading the KCL 3.x coordination state in either layout: table descriptions and items (cv, tm, the leader lock at every read) and the worker-metrics scans"},
			{"cost.dynamodb.describeTable", tNumber, "DescribeTable calls"},
			{"cost.dynamodb.readCapacityUnits", tNumber, "read capacity consumed"},
			{"cost.kinesis", tObject, "stream reads (with `--stream`)"},
			{"cost.kinesis.getRecords", tNumber, "GetRecords probes"},
			{"cost.kinesis.listShards", tNumber, "ListShards calls"},
			{"cost.kinesis.describeStreamSummary", tNumber, "DescribeStreamSummary calls"},
			{"cost.kinesis.listStreamConsumers", tNumber, "ListStreamConsumers calls (the streams' enhanced fan-out consumers)"},
			{"cost.cloudwatch", tObject, "CloudWatch reads"},
			{"cost.cloudwatch.getMetricData", tNumber, "GetMetricData requests"},
			{"cost.cloudwatch.metrics", tNumber, "metrics read"},
			{"capacity", tObject, "the fleet's consumed capacity units against the lease table's capacity (the `table-capacity` check)"},
			{"capacity.billingMode", tString, "`PROVISIONED` or `PAY_PER_REQUEST`"},
			{"capacity.provisionedReadUnits", tNumberOrNull, "provisioned RCU; null on demand"},
			{"capacity.provisionedWriteUnits", tNumberOrNull, "provisioned WCU; null on demand"},
			{"capacity.readUnitsPerSecond", tNumber, "the fleet's read units per second: CloudWatch's peak one-minute average, or the estimate"},
			{"capacity.readUnitsSource", tString, "`cloudwatch` (ConsumedReadCapacityUnits) or `estimate` (live workers × a scan's read units ÷ the taker's interval)"},
			{"capacity.writeUnitsPerSecond", tNumber, "the fleet's write units per second: CloudWatch's peak one-minute average, or the estimate"},
			{"capacity.writeUnitsSource", tString, "`cloudwatch` (ConsumedWriteCapacityUnits) or `estimate` (the larger of the renewals the held leases need and the counter increments seen)"},
		},
		CSV:     doctor.CSVColumns,
		CSVNote: "One row per finding; `shards` and `workers` are joined with `;`.",
	},
	{
		Name:    "checkpoint reset",
		Shape:   "`checkpoint reset` and `checkpoint import` print their plan: an array, one object per lease. After `--execute` the same rows carry `result` and `detail`.",
		Keys:    planRowKeys,
		CSV:     checkpoint.PlanCSVColumns,
		CSVNote: "`before` and `after` are the checkpoints, their sub-sequence numbers in the next columns.",
	},
	{
		Name:  "plan file",
		Title: "The plan file saved by `--execute`",
		Shape: "The `.plan.json` that `--execute` saves beside the backup: one object.",
		Keys: append([]jsonKey{
			{"kind", tString, "`reset` or `import`"},
			{"table", tString, "the lease table"},
			{"target", tString, "the target, in words"},
			{"readAt", tString, "when the table was read, RFC 3339 UTC"},
			{"warnings", tStrings, "`[]` when none"},
			{"writes", tStrings, "the keys of the leases `--execute` is about to write (the plan's writes less any lease that changed since the plan); `[]` when none"},
			{"undo", tStringOrNull, "the command that undoes exactly those writes: an import of the backup with `--shard` naming them (and `--prune` when some are created); null when nothing is written"},
			{"changes", tObjects, "the plan rows, as `checkpoint reset` prints them"},
		}, prefixed("changes[].", planRowKeys)...),
	},
	{
		Name:  "checkpoint backups ls",
		Shape: "An array, one object per backup in the backup folder (or under the `--backup-dir s3://` prefix), oldest first (`[]` when there is none).",
		Keys: []jsonKey{
			{"file", tString, "the backup's file name"},
			{"path", tString, "its absolute path, or its `s3://bucket/key` in a bucket: what `checkpoint import --file` takes"},
			{"kind", tString, "the command that saved it: `reset` or `import`"},
			{"table", tString, "the table it holds, from the file's header"},
			{"exportedAt", tString, "when the table was read, from the file's header"},
			{"leases", tNumber, "lease items, from the header"},
			{"nonLeases", tNumber, "non-lease items, from the header"},
			{"malformed", tNumber, "malformed items, from the header"},
			{"sizeBytes", tNumber, "the file's size"},
			{"plan", tStringOrNull, "the `.plan.json` saved with it (a path or an `s3://` URL, as `path`); null when absent"},
			{"writes", tStrings, "the leases the command was about to write, from the plan file: what the backup is the undo of; `[]` when nothing was written, or the plan file is absent or older than this key"},
			{"undo", tStringOrNull, "the command that restores exactly those leases, from the plan file; null when it is absent, older than this key, or nothing was written"},
		},
		CSV:     checkpoint.BackupCSVColumns,
		CSVNote: "`writes` is joined with `;`.",
	},
	{
		Name:  "run --print-config",
		Title: "`kcltool run --print-config -o json`",
		Shape: "One object: the configuration `run` would start with, resolved from flags, `KCLTOOL_*` variables, a `--properties` file and defaults. Only the `lease-assignment` row reads AWS (DescribeTable and GetItem on the lease and side tables); when that fails its value starts with `unknown` and its note says why.",
		Keys: []jsonKey{
			{"properties", tStringOrNull, "the `--properties` file read; null without one"},
			{"settings", tObjects, "one per run setting, in the order of `run --help`"},
			{"settings[].setting", tString, "the flag's name"},
			{"settings[].value", tString, "its value as the flag would take it"},
			{"settings[].source", tString, "`flag`, `env`, `file` or `default`; `table` for `lease-assignment`, read from the lease table"},
			{"settings[].property", tStringOrNull, "the properties key that can set it, also when a flag or variable overrode it; null when none"},
			{"settings[].note", tStringOrNull, "what kcltool did with the key (recorded for later, ignored, …); null when nothing to say"},
			{"warnings", tStrings, "the file's warnings (unknown keys); `[]` when none"},
		},
	},
	{
		Name:  "version",
		Shape: "One object: which kcltool this is (`internal/buildinfo`).",
		Keys: []jsonKey{
			{"version", tString, "the version a release or `make build` stamped in, else the module version `go install …@vX` recorded, else `dev`"},
			{"commit", tString, "the full commit: stamped, else the Go toolchain's `vcs.revision`, else `unknown`"},
			{"modified", tBoolean, "the toolchain recorded uncommitted changes in the work tree it built (`vcs.modified`); false when it recorded nothing (release builds, `go install`)"},
			{"goVersion", tString, "the Go release it was built with, e.g. `go1.26.8`"},
			{"os", tString, "`GOOS`: `linux`, `darwin`, `windows`, …"},
			{"arch", tString, "`GOARCH`: `amd64`, `arm64`, …"},
		},
	},
	{
		Name:  "checkpoint export",
		Title: "`kcltool checkpoint export` (`-o json`, the default)",
		Shape: "One object with one item per line; `checkpoint import` reads it back (also files written before these keys were always present).",
		Keys: []jsonKey{
			{"format", tString, "`kcltool-lease-table-export`"},
			{"version", tNumber, "1; it changes only when an older reader would misread the file"},
			{"table", tString, "the table exported"},
			{"exportedAt", tString, "when it was read, RFC 3339 UTC, milliseconds"},
			{"counts", tObject, "the items by kind"},
			{"counts.leases", tNumber, "lease items"},
			{"counts.nonLeases", tNumber, "non-lease items"},
			{"counts.malformed", tNumber, "malformed items"},
			{"items", tObjects, "every item of the table"},
			{"items[].leaseKey", tString, "the item's key"},
			{"items[].kind", tString, "`lease`, `non-lease` or `malformed`"},
			{"items[].entityType", tStringOrNull, "non-lease items: their `entityType`; null for the others"},
			{"items[].checkpoint", tStringOrNull, "leases: the checkpoint; null for the others"},
			{"items[].subSequenceNumber", tNumberOrNull, "leases: the checkpoint's sub-sequence number; null for the others"},
			{"items[].error", tStringOrNull, "malformed items: why KCL could not read it; null for the others"},
			{"items[].item", tDynamoDBItem, "the item as DynamoDB holds it (`aws dynamodb put-item --item` form), attributes sorted"},
		},
		CSV:     reset.ExportCSVHeader,
		CSVNote: "`item` holds the item in DynamoDB JSON, so the CSV is as complete as the JSON; the first three columns are a positions file for `checkpoint reset --from-file`. A CSV export does not record the table name.",
	},
}

// jsonSchema returns the named command's schema; it panics on a name that
// is not in jsonSchemas, which only a test can pass.
func jsonSchema(name string) jsonCommand {
	for _, c := range jsonSchemas {
		if c.Name == name {
			return c
		}
	}
	panic("no JSON schema named " + name)
}

// Markers around the part of docs/json.md rendered from jsonSchemas.
const (
	jsonDocBegin = "<!-- BEGIN generated from cmd/json_schema.go; to change it, edit that file and run: go test ./cmd -run TestJSONDocsPage -update -->"
	jsonDocEnd   = "<!-- END generated -->"
)

// jsonSchemaMarkdown renders jsonSchemas for docs/json.md, markers included.
func jsonSchemaMarkdown() string {
	var b strings.Builder
	b.WriteString(jsonDocBegin + "\n\n")
	b.WriteString(jsonSchemaNote + "\n")
	for _, c := range jsonSchemas {
		title := c.Title
		if title == "" {
			title = "`kcltool " + c.Name + " -o json`"
		}
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n| key | type | meaning |\n|---|---|---|\n", title, c.Shape)
		for _, k := range c.Keys {
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", k.Path, k.Type, k.Doc)
		}
		if c.CSV != nil {
			fmt.Fprintf(&b, "\n`-o csv` has a header row and always these columns, in this order: `%s`. An absent value is an empty field, never `-`.", strings.Join(c.CSV, ","))
			if c.CSVNote != "" {
				b.WriteString(" " + c.CSVNote)
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n" + jsonDocEnd + "\n")
	return b.String()
}
