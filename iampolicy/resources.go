package iampolicy

import (
	"slices"
	"strings"

	"github.com/kcltool/kcltool/reset/backupstore"
)

// resource is a kind of resource a rule grants on; each becomes one
// statement, with its Sid.
type resource struct {
	sid       string
	arns      func(Target) []string
	condition func(Target) map[string]map[string]string
}

// KCL3IndexName is the KCL 3.x lease table's global secondary index
// (leasecore.KCL3IndexName; iampolicy_test checks they agree).
const KCL3IndexName = "LeaseOwnerToLeaseKeyIndex"

// KCL 3.0-3.4's side tables, named after the application
// (coordination.DefaultTables).
var kcl3Suffixes = []string{"-CoordinatorState", "-WorkerMetricStats"}

// The lease table: --table, else --app (KCL names it after the application).
func (t Target) leaseTable() string { return t.or(TablePlaceholder, "table", "app") }

// The application: --app, else the table's name (as run and doctor do).
func (t Target) app() string { return t.or(AppPlaceholder, "app", "table") }

var (
	leaseTable = &resource{sid: "LeaseTable", arns: func(t Target) []string {
		return []string{t.tableARN(t.leaseTable())}
	}}
	// importTable is where checkpoint import writes: --to-table or
	// --to-app when given.
	importTable = &resource{sid: "LeaseTable", arns: func(t Target) []string {
		return []string{t.tableARN(t.or(t.leaseTable(), "to-table", "to-app"))}
	}}
	kcl3TablesOfApp = &resource{sid: "KCL3Tables", arns: func(t Target) []string {
		return t.kcl3Tables(t.app())
	}}
	// leaseOwnerIndex is the KCL 3.x lease table's index: a Query names
	// it, and IAM judges the call on the index's ARN.
	leaseOwnerIndex = &resource{sid: "LeaseTableIndex", arns: func(t Target) []string {
		return []string{t.tableARN(t.leaseTable()) + "/index/" + KCL3IndexName}
	}}
	// The KCL 3.x side tables as run names them: the flags (or the
	// properties file's coordinatorStateTableName and
	// workerMetricsTableName), else after the application
	// (coordination.DefaultTables, as the KCL's DdbTableConfig).
	coordinatorStateTable = &resource{sid: "CoordinatorState", arns: func(t Target) []string {
		return []string{t.tableARN(t.or(t.app()+kcl3Suffixes[0], "coordinator-state-table"))}
	}}
	workerMetricsTable = &resource{sid: "WorkerMetrics", arns: func(t Target) []string {
		return []string{t.tableARN(t.or(t.app()+kcl3Suffixes[1], "worker-metrics-table"))}
	}}
	// stream is every --stream given: run takes several (multi-stream mode),
	// whose flag value pflag prints as [a,b].
	stream = &resource{sid: "Stream", arns: func(t Target) []string {
		var out []string
		for _, s := range splitList(t.or(StreamPlaceholder, "stream")) {
			out = append(out, t.streamARN(s))
		}
		return out
	}}
	// runConsumer is run --efo's stream consumer: --consumer-arn, else
	// --consumer-name (default the application) on every --stream, with
	// any creation timestamp (the ARN's last part).
	runConsumer = &resource{sid: "StreamConsumer", arns: func(t Target) []string {
		if t.given("consumer-arn") {
			return []string{t.Flags["consumer-arn"]}
		}
		name := t.or(t.app(), "consumer-name")
		var out []string
		for _, s := range splitList(t.or(StreamPlaceholder, "stream")) {
			out = append(out, t.streamARN(s)+"/consumer/"+name+":*")
		}
		return out
	}}
	// PutMetricData has no resource to scope to; the namespace condition
	// keeps run to the application's own metrics (runner's namespace is the
	// application name).
	metricsNamespace = &resource{sid: "CloudWatchPut", arns: anywhere,
		condition: func(t Target) map[string]map[string]string {
			return map[string]map[string]string{"StringEquals": {"cloudwatch:namespace": t.app()}}
		}}
	// GetMetricData has no resource-level permissions nor a namespace key.
	anyResource = &resource{sid: "CloudWatchRead", arns: anywhere}
	// The backups under --backup-dir s3://bucket/prefix: its objects, and
	// the bucket listed only under the prefix (s3:prefix); a bucket given
	// without a prefix is listed whole.
	backupObjects = &resource{sid: "BackupObjects", arns: func(t Target) []string {
		bucket, prefix := t.s3Location("backup-dir")
		return []string{S3ARN(bucket, prefix+"*")}
	}}
	backupBucket = &resource{sid: "BackupBucket", arns: func(t Target) []string {
		bucket, _ := t.s3Location("backup-dir")
		return []string{S3ARN(bucket, "")}
	}, condition: func(t Target) map[string]map[string]string {
		if _, prefix := t.s3Location("backup-dir"); prefix != "" {
			return map[string]map[string]string{"StringLike": {"s3:prefix": prefix + "*"}}
		}
		return nil
	}}
	// importObject is checkpoint import's --file s3://bucket/key.
	importObject = &resource{sid: "ImportFile", arns: func(t Target) []string {
		bucket, key := t.s3Location("file")
		return []string{S3ARN(bucket, key)}
	}}
)

// s3Location is the bucket and key (a prefix ends with "/") of an s3://
// flag, as the command reads it (backupstore). A malformed one, which the
// command refuses, still gives a policy: the text as written.
func (t Target) s3Location(flag string) (bucket, key string) {
	v := t.Flags[flag]
	var err error
	if flag == "backup-dir" {
		bucket, key, err = backupstore.ParseS3Prefix(v)
	} else {
		bucket, key, err = backupstore.ParseS3(v)
	}
	if err != nil {
		bucket, key, _ = strings.Cut(v[min(len(v), 5):], "/")
	}
	return bucket, key
}

// sids is the order of the statements.
var sids = []string{"LeaseTable", "LeaseTableIndex", "KCL3Tables", "CoordinatorState", "WorkerMetrics", "Stream", "StreamConsumer", "CloudWatchPut", "CloudWatchRead", "BackupObjects", "BackupBucket", "ImportFile"}

func sidRank(sid string) int { return slices.Index(sids, sid) }

func anywhere(Target) []string { return []string{"*"} }

func (t Target) kcl3Tables(base string) []string {
	var out []string
	for _, s := range kcl3Suffixes {
		out = append(out, t.tableARN(base+s))
	}
	return out
}

// splitList reads a list flag's value, as pflag prints a string slice
// ("[a,b]") or as given ("a,b").
func splitList(v string) []string {
	v = strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
