package iampolicy

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func target(cmd string, flags ...string) Target {
	t := Target{Command: cmd, Flags: map[string]string{}}
	for i := 0; i+1 < len(flags); i += 2 {
		t.Flags[flags[i]] = flags[i+1]
	}
	return t
}

// actions lists every Sid: action pair of the policy.
func actions(t *testing.T, tg Target) []string {
	t.Helper()
	p, err := For(tg)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, st := range p.Statement {
		for _, a := range st.Action {
			out = append(out, st.Sid+" "+a)
		}
	}
	return out
}

func TestRunGrantsFollowFlags(t *testing.T) {
	base := actions(t, target("run", "app", "orders", "stream", "orders"))
	for _, a := range []string{"LeaseTable dynamodb:UpdateItem", "LeaseTable dynamodb:PutItem", "LeaseTable dynamodb:DeleteItem",
		"LeaseTableIndex dynamodb:Query", "CoordinatorState dynamodb:DescribeTable", "WorkerMetrics dynamodb:UpdateItem", "Stream kinesis:GetRecords"} {
		if !slices.Contains(base, a) {
			t.Errorf("run lacks %s: %v", a, base)
		}
	}
	for _, a := range []string{"LeaseTable dynamodb:CreateTable", "CloudWatchPut cloudwatch:PutMetricData"} {
		if slices.Contains(base, a) {
			t.Errorf("run without flags has %s", a)
		}
	}
	more := actions(t, target("run", "app", "orders", "create-table", "true", "cloudwatch-metrics", "true"))
	for _, a := range []string{"LeaseTable dynamodb:CreateTable", "CloudWatchPut cloudwatch:PutMetricData"} {
		if !slices.Contains(more, a) {
			t.Errorf("run --create-table --cloudwatch-metrics lacks %s: %v", a, more)
		}
	}
}

func TestReadCommandsNeverWrite(t *testing.T) {
	for _, tg := range []Target{
		target("leases ls", "app", "a"), target("leases owners", "app", "a"), target("lag", "app", "a"),
		target("checkpoint diff", "app", "a"), target("shards lineage", "app", "a", "stream", "s"),
		target("checkpoint export", "app", "a"), target("doctor", "app", "a"),
		target("checkpoint reset", "app", "a", "stream", "s", "at", "1h"), // a dry run
		target("checkpoint import", "app", "a", "file", "f"),
	} {
		for _, a := range actions(t, tg) {
			for _, w := range []string{"Put", "Update", "Delete", "Create"} {
				if strings.Contains(a, ":"+w) {
					t.Errorf("%s grants %s", tg.Command, a)
				}
			}
		}
	}
}

func TestResetAndImportWritesNeedExecute(t *testing.T) {
	got := actions(t, target("checkpoint reset", "app", "a", "stream", "s", "to", "latest", "execute", "true"))
	want := []string{"LeaseTable dynamodb:GetItem", "LeaseTable dynamodb:PutItem", "LeaseTable dynamodb:Scan", "LeaseTable dynamodb:UpdateItem", "Stream kinesis:ListShards"}
	if !slices.Equal(got, want) {
		t.Errorf("reset --to latest --execute:\n got %v\nwant %v", got, want)
	}
	got = actions(t, target("checkpoint reset", "app", "a", "from-file", "f.csv"))
	if !slices.Equal(got, []string{"LeaseTable dynamodb:Scan"}) {
		t.Errorf("reset --from-file reads the stream: %v", got)
	}
	got = actions(t, target("checkpoint import", "app", "a", "to-app", "b", "execute", "true", "prune", "true", "force", "true"))
	want = []string{"LeaseTable dynamodb:DeleteItem", "LeaseTable dynamodb:GetItem", "LeaseTable dynamodb:PutItem", "LeaseTable dynamodb:Scan", "LeaseTable dynamodb:UpdateItem"}
	if !slices.Equal(got, want) {
		t.Errorf("import --to-app --execute --prune --force:\n got %v\nwant %v", got, want)
	}
}

func TestResourcesScopedToFlags(t *testing.T) {
	tg := target("checkpoint import", "app", "a", "to-app", "b", "execute", "true")
	tg.Region, tg.Account = "eu-west-1", "123456789012"
	p, _ := For(tg)
	if got := p.Statement[0].Resource; !slices.Equal(got, []string{"arn:aws:dynamodb:eu-west-1:123456789012:table/b"}) {
		t.Errorf("import --to-app b writes to %v", got)
	}
	p, _ = For(target("doctor", "app", "orders", "table", "orders-leases"))
	byID := map[string][]string{}
	for _, st := range p.Statement {
		byID[st.Sid] = st.Resource
	}
	if got := byID["LeaseTable"]; !slices.Equal(got, []string{"arn:aws:dynamodb:${Region}:${Account}:table/orders-leases"}) {
		t.Errorf("doctor --table: %v", got)
	}
	if got := byID["KCL3Tables"]; got[0] != "arn:aws:dynamodb:${Region}:${Account}:table/orders-CoordinatorState" {
		t.Errorf("doctor's KCL 3.x tables are named after the application: %v", got)
	}
	if got := byID["Stream"]; got[0] != "arn:aws:kinesis:${Region}:${Account}:stream/${Stream}" {
		t.Errorf("doctor without --stream: %v", got)
	}
	if got := byID["CloudWatchRead"]; !slices.Equal(got, []string{"*"}) {
		t.Errorf("GetMetricData: %v", got)
	}
	p, _ = For(target("lag", "app", "a", "stream", "111122223333:orders:1700000000"))
	if got := p.Statement[1].Resource[0]; got != "arn:aws:kinesis:${Region}:111122223333:stream/orders" {
		t.Errorf("multi-stream identifier: %v", got)
	}
}

func TestLineageReadsTheTableOnlyWithApp(t *testing.T) {
	if got := actions(t, target("lineage", "stream", "s")); !slices.Equal(got, []string{"Stream kinesis:ListShards"}) {
		t.Errorf("lineage without --app: %v", got)
	}
	if got := actions(t, target("shards lineage", "stream", "s", "table", "t")); len(got) != 3 {
		t.Errorf("lineage --table: %v", got)
	}
}

func TestNoCallsAndUniqueSids(t *testing.T) {
	if _, err := For(target("completion")); !errors.Is(err, ErrNoCalls) {
		t.Errorf("completion: %v", err)
	}
	on := []string{"create-table", "cloudwatch-metrics", "execute", "force", "prune", "no-cloudwatch"}
	for _, c := range Commands() {
		tg := target(c, "app", "a", "stream", "s", "at", "1h", "to-app", "b", "backup-dir", "s3://team/kcltool", "file", "s3://team/f.json")
		for _, f := range on {
			tg.Flags[f] = "true"
		}
		p, err := For(tg)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, st := range p.Statement {
			if seen[st.Sid] || st.Sid == "" || len(st.Action) == 0 || len(st.Resource) == 0 {
				t.Errorf("%s: bad or repeated statement %+v", c, st)
			}
			seen[st.Sid] = true
		}
	}
}

func TestAllows(t *testing.T) {
	p, _ := For(target("run", "app", "orders", "stream", "s", "cloudwatch-metrics", "true"))
	table := TableARN("us-east-1", "123456789012", "orders")
	for _, c := range []struct {
		r    Request
		want bool
	}{
		{Request{Action: "dynamodb:Scan", Resource: table}, true},
		{Request{Action: "dynamodb:Scan", Resource: TableARN("us-east-1", "123456789012", "other")}, false},
		{Request{Action: "dynamodb:CreateTable", Resource: table}, false},
		{Request{Action: "kinesis:GetRecords"}, true},
		{Request{Action: "kinesis:GetRecords", Resource: StreamARN("us-east-1", "1", "t")}, false},
		{Request{Action: "cloudwatch:PutMetricData", Resource: "*", Namespace: "orders"}, true},
		{Request{Action: "cloudwatch:PutMetricData", Resource: "*", Namespace: "AWS/Kinesis"}, false},
	} {
		if got := p.Allows(c.r); got != c.want {
			t.Errorf("Allows(%+v) = %v, want %v", c.r, got, c.want)
		}
	}
}

// TestRunGrantsKCL3: every run may meet a KCL 3.x table, so its policy
// holds the 3.x worker's calls: Query on the index and nowhere else, the
// side tables named after the application or by their flags, the leader
// lock's writes in CoordinatorState (every worker contends), and in
// WorkerMetricStats this worker's own upsert and the leader's Scan.
func TestRunGrantsKCL3(t *testing.T) {
	tg := target("run", "app", "orders", "table", "orders-leases", "stream", "s")
	tg.Region, tg.Account = "eu-west-1", "123456789012"
	arn := func(table string) string { return TableARN("eu-west-1", "123456789012", table) }
	index := arn("orders-leases") + "/index/LeaseOwnerToLeaseKeyIndex"
	p, err := For(tg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		action, resource string
		want             bool
	}{
		{"dynamodb:Query", index, true},
		{"dynamodb:Query", arn("orders-leases"), false}, // the index only
		{"dynamodb:Query", arn("orders") + "/index/LeaseOwnerToLeaseKeyIndex", false},
		{"dynamodb:DescribeTable", arn("orders-CoordinatorState"), true},
		{"dynamodb:GetItem", arn("orders-CoordinatorState"), true},
		// The leader lock: acquire, heartbeat, release (runner/leader.go).
		{"dynamodb:PutItem", arn("orders-CoordinatorState"), true},
		{"dynamodb:UpdateItem", arn("orders-CoordinatorState"), true},
		{"dynamodb:DeleteItem", arn("orders-CoordinatorState"), true},
		{"dynamodb:CreateTable", arn("orders-CoordinatorState"), false},
		{"dynamodb:DescribeTable", arn("orders-WorkerMetricStats"), true},
		{"dynamodb:UpdateItem", arn("orders-WorkerMetricStats"), true},
		{"dynamodb:Scan", arn("orders-WorkerMetricStats"), true},       // the leader's run reads every worker's item
		{"dynamodb:DeleteItem", arn("orders-WorkerMetricStats"), true}, // its own item, at a graceful stop
		// In the single-table layout, the metrics item and the coordination
		// items are lease-table items.
		{"dynamodb:UpdateItem", arn("orders-leases"), true},
		{"dynamodb:GetItem", arn("orders-leases"), true},
	} {
		if got := p.Allows(Request{Action: c.action, Resource: c.resource}); got != c.want {
			t.Errorf("%s on %s: allowed %v, want %v", c.action, c.resource, got, c.want)
		}
	}
	tg.Flags["coordinator-state-table"], tg.Flags["worker-metrics-table"] = "cs", "wm"
	p, _ = For(tg)
	for _, c := range []struct {
		action, resource string
		want             bool
	}{
		{"dynamodb:GetItem", arn("cs"), true},
		{"dynamodb:UpdateItem", arn("wm"), true},
		{"dynamodb:UpdateItem", arn("orders-WorkerMetricStats"), false},
	} {
		if got := p.Allows(Request{Action: c.action, Resource: c.resource}); got != c.want {
			t.Errorf("named side tables: %s on %s: allowed %v, want %v", c.action, c.resource, got, c.want)
		}
	}
}

// --backup-dir s3://bucket/prefix: reset and import --execute may put
// objects under the prefix only; backups ls lists the bucket only under it
// and reads its objects; import --file s3:// reads that object. A local
// folder needs nothing: backups ls of one makes no AWS call.
func TestS3BackupGrants(t *testing.T) {
	want := []string{"LeaseTable dynamodb:GetItem", "LeaseTable dynamodb:PutItem", "LeaseTable dynamodb:Scan", "LeaseTable dynamodb:UpdateItem", "BackupObjects s3:PutObject"}
	if got := actions(t, target("checkpoint reset", "app", "a", "from-file", "f", "execute", "true", "backup-dir", "s3://team/kcltool")); !slices.Equal(got, want) {
		t.Errorf("reset --execute to S3: %v", got)
	}
	if got := actions(t, target("checkpoint reset", "app", "a", "from-file", "f", "backup-dir", "s3://team/kcltool")); slices.ContainsFunc(got, func(a string) bool { return strings.Contains(a, "s3:") }) {
		t.Errorf("a dry run saves no backup: %v", got)
	}
	if got := actions(t, target("checkpoint reset", "app", "a", "from-file", "f", "execute", "true", "backup-dir", "/tmp/b")); slices.ContainsFunc(got, func(a string) bool { return strings.Contains(a, "s3:") }) {
		t.Errorf("a local folder needs no S3: %v", got)
	}
	if _, err := For(target("checkpoint backups ls", "backup-dir", "/tmp/b")); !errors.Is(err, ErrNoCalls) {
		t.Errorf("backups ls of a folder: %v", err)
	}
	p, err := For(target("checkpoint backups ls", "backup-dir", "s3://team/kcltool/"))
	if err != nil {
		t.Fatal(err)
	}
	objects, bucket := S3ARN("team", "kcltool/*"), S3ARN("team", "")
	if len(p.Statement) != 2 || p.Statement[0].Resource[0] != objects || p.Statement[1].Resource[0] != bucket ||
		p.Statement[1].Condition["StringLike"]["s3:prefix"] != "kcltool/*" {
		t.Fatalf("backups ls: %+v", p.Statement)
	}
	for _, c := range []struct {
		r    Request
		want bool
	}{
		{Request{Action: "s3:ListBucket", Resource: bucket, Prefix: "kcltool/"}, true},
		{Request{Action: "s3:ListBucket", Resource: bucket, Prefix: "kcltool/sub/"}, true},
		{Request{Action: "s3:ListBucket", Resource: bucket, Prefix: ""}, false},
		{Request{Action: "s3:ListBucket", Resource: bucket, Prefix: "other/"}, false},
		{Request{Action: "s3:ListBucket", Resource: S3ARN("other", ""), Prefix: "kcltool/"}, false},
		{Request{Action: "s3:GetObject", Resource: S3ARN("team", "kcltool/kcltool-reset-a-1.backup.json")}, true},
		{Request{Action: "s3:GetObject", Resource: S3ARN("team", "secrets.json")}, false},
		{Request{Action: "s3:PutObject", Resource: S3ARN("team", "kcltool/x")}, false},
	} {
		if got := p.Allows(c.r); got != c.want {
			t.Errorf("Allows(%+v) = %v, want %v", c.r, got, c.want)
		}
	}
	// A whole bucket is listed without a condition.
	if p, _ := For(target("checkpoint backups ls", "backup-dir", "s3://team")); p.Statement[1].Condition != nil || p.Statement[0].Resource[0] != S3ARN("team", "*") {
		t.Errorf("whole bucket: %+v", p.Statement)
	}
	if got := actions(t, target("checkpoint import", "app", "a", "file", "s3://team/kcltool/x.backup.json")); !slices.Contains(got, "ImportFile s3:GetObject") {
		t.Errorf("import --file s3://: %v", got)
	}
	if p, _ := For(target("checkpoint import", "app", "a", "file", "s3://team/kcltool/x.backup.json")); !p.Allows(Request{Action: "s3:GetObject", Resource: S3ARN("team", "kcltool/x.backup.json")}) ||
		p.Allows(Request{Action: "s3:GetObject", Resource: S3ARN("team", "kcltool/y.backup.json")}) {
		t.Errorf("import --file s3:// reads exactly that object: %+v", p.Statement)
	}
}

func TestStringLike(t *testing.T) {
	for _, c := range []struct {
		pat, s string
		want   bool
	}{{"a/*", "a/", true}, {"a/*", "a/b/c", true}, {"a/*", "a", false}, {"a.b*", "axb", false}, {"a?", "ab", true}} {
		if stringLike(c.pat, c.s) != c.want {
			t.Errorf("stringLike(%q, %q) != %v", c.pat, c.s, c.want)
		}
	}
}
