package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

var (
	stampRE   = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	tableName = regexp.MustCompile(`(?:exp|app)-Test[^"\s,]*`)
)

// normalizeReset is normalize plus the times in reasons and exports.
func normalizeReset(s string) string {
	return stampRE.ReplaceAllString(tableName.ReplaceAllString(normalize(s), "<table>"), "<time>")
}

// The plan JSON of a reset to a time across a split and a merge, with
// recreated parents, pinned by a golden file.
func TestResetPlanJSONGolden(t *testing.T) {
	s := newScenario(t, 2)
	s.put(shardID(0), 2)
	s.put(shardID(1), 2)
	at := pause()
	s.put(shardID(0), 1)
	s.split(shardID(0))
	s.put(shardID(2), 1)
	s.put(shardID(3), 1)
	s.merge(shardID(2), shardID(3))
	s.put(shardID(4), 1)
	s.put(shardID(1), 1)
	s.lease(shardID(1), "worker-a", s.last[shardID(1)])
	s.lease(shardID(4), "worker-b", s.last[shardID(4)])
	out, errOut, code := s.kcltool("checkpoint", "reset", "--app", s.table, "--stream", s.stream, "--at", at.UTC().Format(time.RFC3339Nano), "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "dry run: 2 update, 3 create; nothing written") {
		t.Errorf("stderr:\n%s", errOut)
	}
	golden(t, "reset-plan.json", normalizeReset(out))
	table, _, _ := s.kcltool("checkpoint", "reset", "--app", s.table, "--stream", s.stream, "--at", at.UTC().Format(time.RFC3339Nano))
	golden(t, "reset-plan.table", normalizeReset(table))
}

// The export of the shared fixtures, both forms, pinned by golden files.
func TestExportGolden(t *testing.T) {
	ddb := emulator.DynamoDB(t)
	table := emulator.Name(t, "exp")
	dir := fixturesDir(t)
	emulator.CreateLeaseTable(t, ddb, table)
	seedFiles(t, ddb, table, dir, "f1-kcl2-active.json", "f3-shard-end-parent.json", "f4-child-waiting.json", "f6-kcl35-non-lease.jsonl")
	sc := &scenario{t: t}
	for _, form := range []string{"json", "csv"} {
		out, errOut, code := sc.kcltool("checkpoint", "export", "--app", table, "-o", form)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		// The fixtures are fixed: only the table name and the time vary.
		golden(t, "export."+form, stripExportedAt(tableName.ReplaceAllString(out, "<table>")))
	}
}

// seedFiles puts every item of the fixture files (one per file, one per
// line in .jsonl) into the table exactly as written.
func seedFiles(t *testing.T, ddb *dynamodb.Client, table, dir string, files ...string) {
	t.Helper()
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		chunks := [][]byte{data}
		if strings.HasSuffix(f, ".jsonl") {
			chunks = bytes.Split(bytes.TrimSpace(data), []byte("\n"))
		}
		for _, c := range chunks {
			item, err := leasecore.UnmarshalItemJSON(c)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
				t.Fatal(err)
			}
		}
	}
}
