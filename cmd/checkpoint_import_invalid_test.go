package cmd

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reset"
)

// invalidExport is a table of six leases at TRIM_HORIZON and a seventh
// (shardId-6) that the file does not have, and an export file restoring
// shardId-0..5 to checkpoint 200, whose entries for shardId-4 and
// shardId-5 are marked leases but cannot be used: shardId-4's leaseCounter
// is a string, shardId-5 has none.
func invalidExport(t *testing.T, csv bool) (table, file string) {
	t.Helper()
	ddb := emulator.DynamoDB(t)
	table = emulator.Name(t, "app")
	emulator.CreateLeaseTable(t, ddb, table)
	e := &reset.Export{Table: table, ExportedAt: time.Now()}
	for i := range 7 {
		l := leasecore.Lease{LeaseKey: shardID(i), LeaseCounter: 3, Checkpoint: leasecore.SequenceNumber{SequenceNumber: "TRIM_HORIZON"}}
		if _, err := ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: leasecore.EncodeLease(l)}); err != nil {
			t.Fatal(err)
		}
		if i == 6 {
			continue
		}
		l.Checkpoint.SequenceNumber = "200"
		item := leasecore.EncodeLease(l)
		switch i {
		case 4:
			item[leasecore.AttrLeaseCounter] = &types.AttributeValueMemberS{Value: "three"}
		case 5:
			delete(item, leasecore.AttrLeaseCounter)
		}
		cp := l.Checkpoint
		e.Items = append(e.Items, reset.ExportItem{LeaseKey: l.LeaseKey, Kind: reset.KindLease, Checkpoint: &cp, Item: item})
	}
	var buf bytes.Buffer
	name := "export.json"
	write := e.WriteJSON
	if csv {
		name, write = "export.csv", e.WriteCSV
	}
	if err := write(&buf); err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return table, file
}

// checkpoints reads every lease's checkpoint ("" for a missing lease).
func checkpoints(t *testing.T, table string, n int) []string {
	t.Helper()
	ddb := emulator.DynamoDB(t)
	var out []string
	for i := range n {
		l, ok, err := leasecore.GetLease(context.Background(), ddb, table, shardID(i), true)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			out = append(out, "")
			continue
		}
		out = append(out, l.Checkpoint.SequenceNumber)
	}
	return out
}

// An export with entries that cannot be used is refused whole: exit 2,
// every bad entry named with its place, key and why, nothing written.
// --skip-invalid applies the rest and exits 3, naming the skipped ones.
// --prune never deletes a live lease whose key the file has, valid or not.
// The same for a CSV export.
func TestImportRefusesInvalidEntries(t *testing.T) {
	for _, form := range []string{"json", "csv"} {
		t.Run(form, func(t *testing.T) {
			table, file := invalidExport(t, form == "csv")
			base := []string{"checkpoint", "import", "--app", table, "--file", file, "--execute", "--sample", "100ms", "--backup-dir", t.TempDir()}
			place := map[string][2]string{"json": {"item 5", "item 6"}, "csv": {"line 6", "line 7"}}[form]

			out, errOut, code := kcltoolEnv(t, nil, base...)
			if code != cmdutil.ExitUsage {
				t.Errorf("exit %d, want 2\n%s\n%s", code, out, errOut)
			}
			for _, want := range []string{
				place[0] + " (" + shardID(4) + "): ", "leaseCounter",
				place[1] + " (" + shardID(5) + "): ",
				"2 entries cannot be used", "nothing was written", "--skip-invalid",
			} {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
			if got := strings.Join(checkpoints(t, table, 7), " "); got != strings.TrimSpace(strings.Repeat("TRIM_HORIZON ", 7)) {
				t.Errorf("refused import wrote: %s", got)
			}

			// --prune alone: refused as well, no live lease deleted.
			if _, errOut, code := kcltoolEnv(t, nil, append(base, "--prune")...); code != cmdutil.ExitUsage {
				t.Errorf("--prune: exit %d, want 2\n%s", code, errOut)
			}
			if got := strings.Join(checkpoints(t, table, 7), " "); got != strings.TrimSpace(strings.Repeat("TRIM_HORIZON ", 7)) {
				t.Errorf("refused --prune import changed the table: %q", got)
			}

			out, errOut, code = kcltoolEnv(t, nil, append(base, "--skip-invalid", "--prune", "-o", "json")...)
			if code != cmdutil.ExitProblems {
				t.Errorf("--skip-invalid: exit %d, want 3\n%s\n%s", code, out, errOut)
			}
			for _, want := range []string{place[0] + " (" + shardID(4) + ")", place[1] + " (" + shardID(5) + ")", "2 entries of " + file + " skipped"} {
				if !strings.Contains(errOut, want) {
					t.Errorf("--skip-invalid: stderr lacks %q:\n%s", want, errOut)
				}
			}
			want := "200 200 200 200 TRIM_HORIZON TRIM_HORIZON " // shardId-6, not in the file, pruned
			if got := strings.Join(checkpoints(t, table, 7), " "); got != want {
				t.Errorf("after --skip-invalid --prune: %q, want %q (the invalid entries' live leases kept)", got, want)
			}
		})
	}
}

// checkpoint reset --from-file: a positions file with bad lines is refused
// whole, every bad line named; --skip-invalid applies the rest, exit 3.
func TestResetFromFileNamesEveryBadLine(t *testing.T) {
	table, _ := positionsTable(t, "", "", "", "")
	file := filepath.Join(t.TempDir(), "positions.csv")
	body := "leaseKey,checkpoint,subSequenceNumber\n" + shardID(0) + ",TRIM_HORIZON,0\n" + shardID(1) + ",yesterday,0\n" +
		shardID(2) + ",LATEST,-1\n" + shardID(3) + ",LATEST,0\n"
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"checkpoint", "reset", "--app", table, "--from-file", file, "--execute", "--sample", "100ms", "--backup-dir", t.TempDir()}
	_, errOut, code := kcltoolEnv(t, nil, base...)
	if code != cmdutil.ExitUsage {
		t.Errorf("exit %d, want 2\n%s", code, errOut)
	}
	for _, want := range []string{"line 3 (" + shardID(1) + "): checkpoint \"yesterday\"", "line 4 (" + shardID(2) + "): subSequenceNumber \"-1\"", "nothing was written"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if got := strings.Join(checkpoints(t, table, 4), " "); got != "100 100 100 100" {
		t.Errorf("refused reset wrote: %s", got)
	}
	_, errOut, code = kcltoolEnv(t, nil, append(base, "--skip-invalid")...)
	if code != cmdutil.ExitProblems || !strings.Contains(errOut, "2 entries of "+file+" skipped") {
		t.Errorf("--skip-invalid: exit %d, want 3\n%s", code, errOut)
	}
	if got := strings.Join(checkpoints(t, table, 4), " "); got != "TRIM_HORIZON 100 100 LATEST" {
		t.Errorf("after --skip-invalid: %s", got)
	}
}

// A reset of a table holding a malformed lease item and KCL 3.5's non-lease
// items saves a backup with them (marked malformed and non-lease), and the
// undo it prints restores the table: the marked items are carried, not
// refused as invalid.
func TestResetUndoWithMalformedAndNonLeaseItems(t *testing.T) {
	table, file := positionsTable(t, "", "")
	ddb := emulator.DynamoDB(t)
	seedFiles(t, ddb, table, fixturesDir(t), "f6-kcl35-non-lease.jsonl")
	bad := leasecore.EncodeLease(leasecore.Lease{LeaseKey: shardID(7), LeaseCounter: 2, Checkpoint: leasecore.SequenceNumber{SequenceNumber: "100"}})
	bad[leasecore.AttrLeaseCounter] = &types.AttributeValueMemberS{Value: "2"}
	if _, err := ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: bad}); err != nil {
		t.Fatal(err)
	}
	s := &scenario{t: t, table: table}
	before := exportItems(t, s)
	dir := t.TempDir()
	_, errOut, code := s.kcltool("checkpoint", "reset", "--app", table, "--from-file", file, "--execute", "--sample", "100ms", "--backup-dir", dir)
	if code != 0 {
		t.Fatalf("reset exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "3 non-lease items, 1 malformed") {
		t.Errorf("backup line:\n%s", errOut)
	}
	undo := regexp.MustCompile(`kcltool: undo with: (kcltool checkpoint import .*)`).FindStringSubmatch(errOut)
	if undo == nil {
		t.Fatalf("no undo command:\n%s", errOut)
	}
	// Run the printed line through a shell, as an operator would.
	cmd := exec.Command("sh", "-c", undo[1]+" --sample 100ms --backup-dir "+dir)
	cmd.Env = append(os.Environ(), emulator.Env(t)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("undo: %v\n%s", err, out)
	}
	after := exportItems(t, s)
	if len(after) != len(before) {
		t.Fatalf("%d items after the undo, want %d", len(after), len(before))
	}
	for key, it := range before {
		if !reset.EqualItems(it.Item, after[key].Item, leasecore.AttrLeaseCounter) || it.Kind != after[key].Kind {
			t.Errorf("%s differs after the undo:\n%v\n%v", key, it.Item, after[key].Item)
		}
	}
}
