package cmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kcltool/kcltool/cmd/checkpoint"
	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// kcltoolEnv runs the built binary like scenario.kcltool, with env added
// after the local servers' environment (a later entry wins).
func kcltoolEnv(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	return runKcltool(t, append(append(os.Environ(), emulator.Env(t)...), env...), args...)
}

// runKcltool runs the built binary with exactly env: stdout, stderr and
// the exit code.
func runKcltool(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command("kcltool", args...)
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// positionsTable is a lease table with two leases at checkpoint 100, held
// by owners (empty: none), and a positions file that moves both to
// TRIM_HORIZON.
func positionsTable(t *testing.T, owners ...string) (table, file string) {
	t.Helper()
	ddb := emulator.DynamoDB(t)
	table = emulator.Name(t, "app")
	emulator.CreateLeaseTable(t, ddb, table)
	var csv strings.Builder
	for i, owner := range owners {
		l := leasecore.Lease{LeaseKey: shardID(i), LeaseOwner: owner, LeaseCounter: 3, Checkpoint: leasecore.SequenceNumber{SequenceNumber: "100"}}
		if _, err := leasecore.CreateLease(context.Background(), ddb, table, l); err != nil {
			t.Fatal(err)
		}
		csv.WriteString(shardID(i) + ",TRIM_HORIZON\n")
	}
	file = filepath.Join(t.TempDir(), "positions.csv")
	if err := os.WriteFile(file, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return table, file
}

var undoLine = regexp.MustCompile(`kcltool: undo with: (kcltool checkpoint import .*)`)

// Without --backup-dir the backup goes to $XDG_STATE_HOME/kcltool/backups,
// created 0700; the undo command names the region (from KCLTOOL_REGION),
// the profile and the endpoint the reset used, quoted for the shell, and
// run by a shell it restores the table; backups ls lists both backups.
func TestResetDefaultBackupDirAndUndoFlags(t *testing.T) {
	table, file := positionsTable(t, "", "")
	state := t.TempDir()
	awsConfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(awsConfig, []byte("[profile ops team]\nregion = "+emulator.Region+"\naws_access_key_id = local\naws_secret_access_key = local\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	endpoint := emulator.DynamoDBEndpoint(t)
	env := []string{"XDG_STATE_HOME=" + state, "HOME=" + t.TempDir(), "AWS_CONFIG_FILE=" + awsConfig, "KCLTOOL_REGION=" + emulator.Region}
	_, errOut, code := kcltoolEnv(t, env, "checkpoint", "reset", "--app", table, "--from-file", file, "--execute", "--sample", "100ms",
		"--profile", "ops team", "--endpoint-url", endpoint)
	if code != 0 {
		t.Fatalf("reset exit %d: %s", code, errOut)
	}
	dir := filepath.Join(state, "kcltool", "backups")
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("backup folder %s: %v, %v; want a folder with mode 0700", dir, st, err)
	}
	if !strings.Contains(errOut, "saved to "+dir+"/kcltool-reset-"+table+"-") {
		t.Errorf("the backup path is not printed under %s:\n%s", dir, errOut)
	}
	m := undoLine.FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("no undo line:\n%s", errOut)
	}
	undo := m[1]
	want := "kcltool checkpoint import --app " + table + " --region " + emulator.Region + " --profile 'ops team' --endpoint-url " + endpoint + " --file " + dir + "/kcltool-reset-"
	if !strings.HasPrefix(undo, want) || !strings.HasSuffix(undo, " --execute") {
		t.Fatalf("undo command\n  %s\nwant it to start with\n  %s", undo, want)
	}

	// A shell parses the quoting, without KCLTOOL_REGION or AWS_REGION set.
	sh := exec.Command("sh", "-c", undo+" --sample 100ms")
	sh.Env = append(append(os.Environ(), emulator.Env(t)...), "XDG_STATE_HOME="+state, "AWS_CONFIG_FILE="+awsConfig, "AWS_REGION=")
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("the undo command failed: %v\n%s", err, out)
	}
	for i := range 2 {
		if l, _, _ := leasecore.GetLease(context.Background(), emulator.DynamoDB(t), table, shardID(i), true); l.Checkpoint.SequenceNumber != "100" {
			t.Errorf("%s at %s after the undo, want 100", shardID(i), l.Checkpoint.SequenceNumber)
		}
	}

	out, errOut, code := kcltoolEnv(t, env, "checkpoint", "backups", "ls", "--app", table, "-o", "json")
	if code != 0 {
		t.Fatalf("backups ls exit %d: %s", code, errOut)
	}
	rows := jsonRows(t, out)
	if len(rows) != 2 || rows[0]["kind"] != "reset" || rows[1]["kind"] != "import" {
		t.Fatalf("backups ls lists %v, want the reset's backup then the import's", rows)
	}
	for _, r := range rows {
		if r["table"] != table || r["leases"] != float64(2) || r["plan"] == nil || !strings.HasPrefix(r["path"].(string), dir+"/") || r["sizeBytes"].(float64) <= 0 {
			t.Errorf("row %v", r)
		}
	}
	// What the reset's backup is the undo of, from its plan file.
	if w, _ := rows[0]["writes"].([]any); len(w) != 2 || w[0] != shardID(0) || w[1] != shardID(1) || rows[0]["undo"] != undo {
		t.Errorf("reset's backup: writes %v, undo %v; want both leases and %q", rows[0]["writes"], rows[0]["undo"], undo)
	}
	out, _, _ = kcltoolEnv(t, env, "checkpoint", "backups", "ls", "--table", table)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !regexp.MustCompile(`^FILE +TABLE +TIME +LEASES +SIZE +UNDOES$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^kcltool-reset-\S+\.backup\.json +`+regexp.QuoteMeta(table)+` +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ +2 +\d+(\.\d)?(B|KiB) +`+shardID(0)+`, `+shardID(1)+`$`).MatchString(lines[1]) {
		t.Errorf("backups ls table:\n%s", out)
	}

	// Fitted to 80 and 200 columns (docs/output.md), as the other read
	// commands' tables are in TestTablesFitTheTerminal. The table's name
	// has the test's pid in it, so its width would move the wrapping: the
	// files are copied as a table named "orders" had written them.
	same := t.TempDir()
	src := filepath.Join(state, "kcltool", "backups")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		name := strings.ReplaceAll(e.Name(), table, "orders")
		if err := os.WriteFile(filepath.Join(same, name), bytes.ReplaceAll(b, []byte(table), []byte("orders")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var fitted strings.Builder
	for _, cols := range []int{80, 200} {
		out, errOut, code := kcltoolEnv(t, append(slices.Clone(env), fmt.Sprintf("COLUMNS=%d", cols)), "checkpoint", "backups", "ls", "--table", "orders", "--backup-dir", same)
		if code != 0 {
			t.Fatalf("backups ls at %d columns: exit %d: %s", cols, code, errOut)
		}
		for _, l := range strings.Split(out, "\n") {
			if w := utf8.RuneCountInString(l); w > cols {
				t.Errorf("backups ls at %d columns: a line of %d: %q", cols, w, l)
			}
		}
		fmt.Fprintf(&fitted, "## COLUMNS=%d\n%s", cols, out)
	}
	golden(t, "tables/backups-ls.txt", anyDigit.ReplaceAllString(fitted.String(), "0"))

	// --backup-dir points elsewhere; an empty folder lists nothing, exit 0.
	out, errOut, code = kcltoolEnv(t, env, "checkpoint", "backups", "ls", "--backup-dir", t.TempDir(), "-o", "json")
	if code != 0 || strings.TrimSpace(out) != "[]" || !strings.Contains(errOut, "no backups in") {
		t.Errorf("empty folder: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// The default folder follows XDG_STATE_HOME, then HOME; a relative
// XDG_STATE_HOME is ignored as the XDG rules say. --backup-dir wins.
func TestBackupDirDefault(t *testing.T) {
	for _, tc := range []struct {
		env        map[string]string
		flag, want string
	}{
		{map[string]string{"XDG_STATE_HOME": "/x/state", "HOME": "/home/u"}, "", "/x/state/kcltool/backups"},
		{map[string]string{"HOME": "/home/u"}, "", "/home/u/.local/state/kcltool/backups"},
		{map[string]string{"XDG_STATE_HOME": "state", "HOME": "/home/u"}, "", "/home/u/.local/state/kcltool/backups"},
		{map[string]string{"XDG_STATE_HOME": "/x/state"}, "here", "here"},
	} {
		f := cmdutil.NewFactory(&cmdutil.IOStreams{}, func(k string) string { return tc.env[k] })
		if got, err := checkpoint.BackupDir(f, tc.flag); err != nil || got != tc.want {
			t.Errorf("env %v, --backup-dir %q: %q, %v; want %q", tc.env, tc.flag, got, err, tc.want)
		}
	}
}

// The help shows the default as a rule, the same on every machine, never
// this machine's path: the command reference is generated from it.
func TestBackupDirHelpIsMachineIndependent(t *testing.T) {
	for _, args := range [][]string{{"checkpoint", "reset", "--help"}, {"checkpoint", "import", "--help"}, {"checkpoint", "backups", "ls", "--help"}} {
		out, _, _ := kcltoolEnv(t, []string{"XDG_STATE_HOME=/some/where", "HOME=/home/someone"}, args...)
		if !strings.Contains(out, "(default $XDG_STATE_HOME/kcltool/backups or ~/.local/state/kcltool/backups)") ||
			strings.Contains(out, "/some/where") || strings.Contains(out, "/home/someone") {
			t.Errorf("%v: --backup-dir help:\n%s", args, out)
		}
	}
}
