package cmd

import (
	"context"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// createdBy starts one worker with args, waits until it has started (the
// table made, its mode read) and stops it with SIGTERM. No fleet runs: on
// a table created for KCL 3.x the worker would wait for a leader.
func createdBy(t *testing.T, s e2eStack, table, id string, args ...string) string {
	t.Helper()
	base := []string{"run", "--app", s.app, "--table", table, "--stream", s.stream, "--worker-id", id, "--create-table",
		"--shard-sync-interval", "1s", "--log-format", "json", "--exec", "cat > /dev/null"}
	w := startWorker(t, id, nil, append(base, args...)...)
	eventuallyE2E(t, 60*time.Second, id+" to start", func() bool { return strings.Contains(w.logs.String(), `"msg":"worker started"`) })
	w.signal(t, syscall.SIGTERM)
	if code := w.exitCode(t, 60*time.Second); code != 0 {
		t.Fatalf("%s: exit %d after SIGTERM, want 0", id, code)
	}
	return w.logs.String()
}

// shape is what a lease table's description says of how it was made.
func shape(t *testing.T, ddb *dynamodb.Client, table string) []string {
	t.Helper()
	out, err := ddb.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	d := out.Table
	var sh []string
	if d.BillingModeSummary != nil {
		sh = append(sh, "billing "+string(d.BillingModeSummary.BillingMode))
	}
	for _, k := range d.KeySchema {
		sh = append(sh, "key "+aws.ToString(k.AttributeName)+" "+string(k.KeyType))
	}
	for _, a := range d.AttributeDefinitions {
		sh = append(sh, "attribute "+aws.ToString(a.AttributeName)+" "+string(a.AttributeType))
	}
	for _, g := range d.GlobalSecondaryIndexes {
		for _, k := range g.KeySchema {
			sh = append(sh, "index "+aws.ToString(g.IndexName)+" "+aws.ToString(k.AttributeName)+" "+string(k.KeyType))
		}
		sh = append(sh, "index "+aws.ToString(g.IndexName)+" projection "+string(g.Projection.ProjectionType))
	}
	sort.Strings(sh)
	return sh
}

func detect(t *testing.T, ddb *dynamodb.Client, app, table string) coordination.State {
	t.Helper()
	st, err := coordination.Detect(context.Background(), ddb, coordination.DefaultTables(table, app))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// run --create-table makes a new application a KCL 3.x one, as KCL 3.5.1
// does: the table with the LeaseOwnerToLeaseKeyIndex, the Migration3.0
// item at CLIENT_VERSION_3X in the lease table, which Detect reads as the
// single-table layout with leader assignment. checkpoint import
// --create-table makes the same table.
func TestRunCreateTableKCL3(t *testing.T) {
	s := newE2EStack(t, 1)
	ddb := s.ddb
	table := emulator.Name(t, "kcl3")
	createdBy(t, s, table, "creator")

	want := []string{
		"attribute leaseKey S", "attribute leaseOwner S", "billing PAY_PER_REQUEST",
		"index LeaseOwnerToLeaseKeyIndex leaseKey RANGE", "index LeaseOwnerToLeaseKeyIndex leaseOwner HASH",
		"index LeaseOwnerToLeaseKeyIndex projection KEYS_ONLY", "key leaseKey HASH",
	}
	if got := shape(t, ddb, table); !reflect.DeepEqual(got, want) {
		t.Errorf("run's table:\n%q\nwant\n%q", got, want)
	}
	st := detect(t, ddb, s.app, table)
	if st.Layout != coordination.LayoutLeaseTable || st.Assignment != leasecore.AssignByLeader ||
		st.ClientVersion != coordination.ClientVersion3X || st.ClientVersionIn != table || st.ClientVersionBy != "creator" {
		t.Errorf("Detect: %+v; want KCL 3.x, lease-table layout, cv CLIENT_VERSION_3X by creator", st)
	}

	// The import's table, from an export of a 2.x application.
	src, _ := positionsTable(t, "worker-a", "")
	export := filepath.Join(t.TempDir(), "export.json")
	if _, errOut, code := kcltoolEnv(t, nil, "checkpoint", "export", "--app", src, "--file", export); code != 0 {
		t.Fatalf("export exit %d: %s", code, errOut)
	}
	dest := emulator.Name(t, "imported")
	_, errOut, code := kcltoolEnv(t, nil, "checkpoint", "import", "--app", src, "--file", export, "--to-app", dest,
		"--create-table", "--execute", "--backup-dir", t.TempDir(), "--sample", "100ms")
	if code != 0 || !strings.Contains(errOut, "applied 2, skipped 0") || !strings.Contains(errOut, "CLIENT_VERSION_3X: KCL 3.x") {
		t.Fatalf("import exit %d:\n%s", code, errOut)
	}
	if got := shape(t, ddb, dest); !reflect.DeepEqual(got, want) {
		t.Errorf("import's table:\n%q\nwant run's\n%q", got, want)
	}
	if st := detect(t, ddb, dest, dest); st.Layout != coordination.LayoutLeaseTable || st.Assignment != leasecore.AssignByLeader || st.ClientVersion != coordination.ClientVersion3X {
		t.Errorf("Detect of the import's table: %+v; want run's", st)
	}
}

// --kcl-version 2 keeps KCL 2.x's table, and checkpoint import
// --kcl-version 2 makes the same; a later run (default --kcl-version 3)
// leaves that existing table as it is and takes leases as 2.x.
func TestRunCreateTableKCL2(t *testing.T) {
	s := newE2EStack(t, 1)
	ddb := s.ddb
	table := emulator.Name(t, "kcl2")
	createdBy(t, s, table, "creator", "--kcl-version", "2")
	want := []string{"attribute leaseKey S", "billing PAY_PER_REQUEST", "key leaseKey HASH"}
	if got := shape(t, ddb, table); !reflect.DeepEqual(got, want) {
		t.Errorf("run --kcl-version 2's table:\n%q\nwant\n%q", got, want)
	}
	if st := detect(t, ddb, s.app, table); st.Layout != coordination.LayoutNone || st.Assignment != leasecore.AssignByTaking {
		t.Errorf("Detect: %+v; want KCL 2.x", st)
	}

	logs := createdBy(t, s, table, "later")
	if got := shape(t, ddb, table); !reflect.DeepEqual(got, want) {
		t.Errorf("a run with --kcl-version 3 changed the existing table:\n%q", got)
	}
	if st := detect(t, ddb, s.app, table); st.Layout != coordination.LayoutNone || st.ClientVersion != "" {
		t.Errorf("Detect after a --kcl-version 3 run: %+v; want KCL 2.x still", st)
	}
	if !strings.Contains(logs, `"assignment":"`+leasecore.AssignByTaking.String()+`"`) {
		t.Errorf("the later worker did not take leases as 2.x:\n%s", logs)
	}

	src, _ := positionsTable(t, "")
	export := filepath.Join(t.TempDir(), "export.json")
	if _, errOut, code := kcltoolEnv(t, nil, "checkpoint", "export", "--app", src, "--file", export); code != 0 {
		t.Fatalf("export exit %d: %s", code, errOut)
	}
	dest := emulator.Name(t, "imported")
	if _, errOut, code := kcltoolEnv(t, nil, "checkpoint", "import", "--app", src, "--file", export, "--to-app", dest,
		"--create-table", "--kcl-version", "2", "--execute", "--backup-dir", t.TempDir(), "--sample", "100ms"); code != 0 {
		t.Fatalf("import exit %d:\n%s", code, errOut)
	}
	if got := shape(t, ddb, dest); !reflect.DeepEqual(got, want) {
		t.Errorf("import --kcl-version 2's table:\n%q\nwant run's\n%q", got, want)
	}
	if st := detect(t, ddb, dest, dest); st.Layout != coordination.LayoutNone {
		t.Errorf("Detect of the import's table: %+v; want KCL 2.x", st)
	}
}
