package cmd

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// import --to-app into a table that does not exist names it, its region
// and --create-table; with --create-table the dry run plans the leases and
// creates nothing, and --execute creates the table as run does and writes
// the exported positions, which read back equal.
func TestImportToAMissingTable(t *testing.T) {
	src, _ := positionsTable(t, "worker-a", "")
	ddb := emulator.DynamoDB(t)
	export := filepath.Join(t.TempDir(), "export.json")
	if _, errOut, code := kcltoolEnv(t, nil, "checkpoint", "export", "--app", src, "--file", export); code != 0 {
		t.Fatalf("export exit %d: %s", code, errOut)
	}
	dest := emulator.Name(t, "copy")
	backups := t.TempDir()
	base := []string{"checkpoint", "import", "--app", src, "--file", export, "--to-app", dest, "--backup-dir", backups, "--sample", "100ms"}

	_, errOut, code := kcltoolEnv(t, nil, base...)
	if code != cmdutil.ExitFailure {
		t.Fatalf("exit %d, want 1: %s", code, errOut)
	}
	for _, want := range []string{
		`kcltool: error: lease table "` + dest + `" (--to-app ` + dest + `) not found in ` + emulator.Region,
		"kcltool: hint: add --create-table to create it the way kcltool run --create-table does",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}

	out, errOut, code := kcltoolEnv(t, nil, append(base, "--create-table", "-o", "json")...)
	if code != 0 {
		t.Fatalf("dry run exit %d: %s", code, errOut)
	}
	rows := jsonRows(t, out)
	if len(rows) != 2 || rows[0]["action"] != "create" || rows[1]["action"] != "create" {
		t.Errorf("dry run plan %v, want two creates", rows)
	}
	if !strings.Contains(errOut, `lease table "`+dest+`" does not exist in `+emulator.Region+`: --execute creates it`) || !strings.Contains(errOut, "dry run: 2 create; nothing written") {
		t.Errorf("dry run stderr:\n%s", errOut)
	}
	if _, err := ddb.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(dest)}); err == nil {
		t.Fatal("the dry run created the table")
	}

	_, errOut, code = kcltoolEnv(t, nil, append(base, "--create-table", "--execute")...)
	if code != 0 {
		t.Fatalf("execute exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, `created lease table "`+dest+`" in `+emulator.Region) || !strings.Contains(errOut, "applied 2, skipped 0") {
		t.Errorf("execute stderr:\n%s", errOut)
	}
	desc, err := ddb.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(dest)})
	if err != nil {
		t.Fatal(err)
	}
	if d := desc.Table; d.BillingModeSummary == nil || d.BillingModeSummary.BillingMode != types.BillingModePayPerRequest ||
		len(d.KeySchema) != 1 || aws.ToString(d.KeySchema[0].AttributeName) != leasecore.AttrLeaseKey {
		t.Errorf("table not created the way run creates it: %+v", d)
	}
	for i := range 2 {
		l, ok, err := leasecore.GetLease(context.Background(), ddb, dest, shardID(i), true)
		if err != nil || !ok || l.Checkpoint.SequenceNumber != "100" || l.LeaseOwner != "" {
			t.Errorf("%s in the new table: %+v (found %v, %v); want checkpoint 100, no owner", shardID(i), l, ok, err)
		}
	}
}
