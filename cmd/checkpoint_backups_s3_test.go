package cmd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// kcltoolS3 runs the built binary as one "machine" with its own HOME and
// no XDG_STATE_HOME, against the local DynamoDB, Kinesis and S3 servers,
// its calls recorded for the iam-policy check.
func kcltoolS3(t *testing.T, home string, args ...string) (string, string, int) {
	t.Helper()
	return runKcltool(t, recordCalls(t, args, append(append(os.Environ(), emulator.S3Env(t)...), "HOME="+home, "XDG_STATE_HOME=")), args...)
}

// Issue 28, point 6: one responder resets to a shared bucket; a second,
// on another machine (another HOME, nothing of the first one's files),
// lists the backups there and runs the printed undo, which reads the
// backup from S3 and restores the checkpoints. Nothing is saved locally on
// the first machine.
func TestResetBackupToS3UndoneFromAnotherMachine(t *testing.T) {
	t.Parallel()
	table, file := positionsTable(t, "", "")
	bucket := emulator.Bucket(t)
	emulator.CreateBucket(t, emulator.S3(t), bucket)
	dir := "s3://" + bucket + "/team/kcltool"
	first, second := t.TempDir(), t.TempDir()

	_, errOut, code := kcltoolS3(t, first, "checkpoint", "reset", "--app", table, "--from-file", file, "--execute", "--sample", "100ms", "--backup-dir", dir)
	if code != 0 {
		t.Fatalf("reset exit %d: %s", code, errOut)
	}
	prefix := dir + "/kcltool-reset-" + table + "-"
	if !strings.Contains(errOut, "plan saved to "+prefix) || !strings.Contains(errOut, "saved to "+prefix) {
		t.Errorf("the S3 paths are not printed:\n%s", errOut)
	}
	m := undoLine.FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("no undo line:\n%s", errOut)
	}
	undo := m[1]
	if !strings.Contains(undo, " --file "+prefix) {
		t.Fatalf("undo does not read the backup from S3: %s", undo)
	}
	if entries, _ := os.ReadDir(first); len(entries) != 0 {
		t.Errorf("the first machine's HOME holds %v: the backup was to go to S3 only", entries)
	}

	// The second machine lists the shared backups: the reset's, with its
	// plan beside it, what it undoes and the undo itself.
	out, errOut, code := kcltoolS3(t, second, "checkpoint", "backups", "ls", "--backup-dir", dir, "-o", "json")
	if code != 0 {
		t.Fatalf("backups ls exit %d: %s", code, errOut)
	}
	rows := jsonRows(t, out)
	if len(rows) != 1 {
		t.Fatalf("backups ls in S3: %v", rows)
	}
	r := rows[0]
	if r["kind"] != "reset" || r["table"] != table || r["leases"] != float64(2) || !strings.HasPrefix(r["path"].(string), prefix) ||
		r["plan"] != strings.TrimSuffix(r["path"].(string), ".backup.json")+".plan.json" || r["sizeBytes"].(float64) <= 0 || r["undo"] != undo {
		t.Errorf("row %v", r)
	}
	if w, _ := r["writes"].([]any); len(w) != 2 {
		t.Errorf("writes %v", r["writes"])
	}
	out, _, _ = kcltoolS3(t, second, "checkpoint", "backups", "ls", "--backup-dir", dir+"/")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !regexp.MustCompile(`^kcltool-reset-\S+\.backup\.json +`+regexp.QuoteMeta(table)+` +\S+ +2 +`).MatchString(lines[1]) {
		t.Errorf("backups ls table:\n%s", out)
	}

	// The dry run of the undo reads the backup from S3 too.
	dry := strings.Fields(strings.TrimSuffix(strings.TrimPrefix(undo, "kcltool "), " --execute"))
	if out, errOut, code := kcltoolS3(t, second, dry...); code != 0 || !strings.Contains(out, "restore") {
		t.Fatalf("undo's dry run exit %d:\n%s\n%s", code, out, errOut)
	}
	// The undo exactly as printed, through a shell, on the second machine.
	sh := exec.Command("sh", "-c", undo+" --sample 100ms")
	sh.Env = append(append(os.Environ(), emulator.S3Env(t)...), "HOME="+second, "XDG_STATE_HOME=")
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("the undo command failed: %v\n%s", err, out)
	}
	for i := range 2 {
		if l, _, _ := leasecore.GetLease(context.Background(), emulator.DynamoDB(t), table, shardID(i), true); l.Checkpoint.SequenceNumber != "100" {
			t.Errorf("%s at %s after the undo, want 100", shardID(i), l.Checkpoint.SequenceNumber)
		}
	}
}

// A backup that cannot be uploaded (here: no such bucket) stops the reset
// before its first write: exit 1, the bucket named with the fix, and the
// leases untouched.
func TestResetBackupUploadFailureWritesNothing(t *testing.T) {
	t.Parallel()
	table, file := positionsTable(t, "", "")
	bucket := emulator.Bucket(t) // never created
	_, errOut, code := kcltoolS3(t, t.TempDir(), "checkpoint", "reset", "--app", table, "--from-file", file, "--execute", "--sample", "100ms", "--backup-dir", "s3://"+bucket+"/kcltool")
	if code != 1 {
		t.Fatalf("reset exit %d, want 1: %s", code, errOut)
	}
	for _, want := range []string{"save the backup to s3://" + bucket + "/kcltool/", "NoSuchBucket", "(nothing was written)",
		`bucket "` + bucket + `" exists`, "s3:PutObject on arn:aws:s3:::" + bucket + "/kcltool/*", "or pass a local --backup-dir"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	for i := range 2 {
		if l, _, _ := leasecore.GetLease(context.Background(), emulator.DynamoDB(t), table, shardID(i), true); l.Checkpoint.SequenceNumber != "100" {
			t.Errorf("%s at %s after a failed backup, want 100 (untouched)", shardID(i), l.Checkpoint.SequenceNumber)
		}
	}
	// Listing a bucket that does not exist names it too.
	_, errOut, code = kcltoolS3(t, t.TempDir(), "checkpoint", "backups", "ls", "--backup-dir", "s3://"+bucket)
	if code != 1 || !strings.Contains(errOut, "list the backups in s3://"+bucket+"/") || !strings.Contains(errOut, "s3:ListBucket") {
		t.Errorf("backups ls of a missing bucket: exit %d\n%s", code, errOut)
	}
	// An import of an object that is not there is a usage error.
	emptyBucket := emulator.Bucket(t)
	emulator.CreateBucket(t, emulator.S3(t), emptyBucket)
	_, errOut, code = kcltoolS3(t, t.TempDir(), "checkpoint", "import", "--app", table, "--file", "s3://"+emptyBucket+"/none.backup.json")
	if code != 2 || !strings.Contains(errOut, "NoSuchKey") {
		t.Errorf("import of a missing object: exit %d\n%s", code, errOut)
	}
}

// Malformed S3 locations are usage errors (exit 2), refused before any
// call; a local folder still works as before.
func TestBackupDirS3UsageErrors(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	positions := filepath.Join(home, "positions.csv")
	if err := os.WriteFile(positions, []byte(shardID(0)+",TRIM_HORIZON\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for want, args := range map[string][]string{
		"lower-case letters": {"checkpoint", "reset", "--app", "a", "--from-file", positions, "--backup-dir", "s3://Bad_Bucket/x"},
		"names no bucket":    {"checkpoint", "import", "--app", "a", "--file", positions, "--backup-dir", "s3://"},
		"empty path segment": {"checkpoint", "backups", "ls", "--backup-dir", "s3://ok-bucket//x"},
		"not a file":         {"checkpoint", "import", "--app", "a", "--file", "s3://ok-bucket/prefix/"},
	} {
		if _, errOut, code := kcltoolEnv(t, []string{"HOME=" + home}, args...); code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("%v: exit %d, want 2 and %q:\n%s", args, code, want, errOut)
		}
	}
}
