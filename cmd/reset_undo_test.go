package cmd

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/cmd/checkpoint"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reset"
)

// Issue 23, point 7, as an on-call user meets it: one shard of five is
// reset, a worker runs afterwards and moves all five, and is stopped. The
// undo the reset printed, run as printed by a shell, puts the reset shard
// back and leaves the four others where the worker left them (restoring
// the whole backup would move them back and replay their records). The
// plan file names the same single lease and the same command.
func TestResetUndoRestoresOnlyTheResetShards(t *testing.T) {
	s := newE2EStack(t, 5)
	emulator.CreateLeaseTable(t, s.ddb, s.app)
	keys := keyNames(40)
	s.putRound(t, keys, 0)
	s.putRound(t, keys, 1)
	sc := &scenario{t: t, kin: s.kin, ddb: s.ddb, stream: s.stream, table: s.app, last: map[string]string{}, prev: map[string]string{}}
	sc.refresh()
	seeded := lastSequences(t, s.kin, s.stream)
	if len(seeded) != 5 {
		t.Fatalf("records in %d shards, want all 5: %v", len(seeded), seeded)
	}
	for shard, cp := range seeded {
		sc.lease(shard, "", cp) // everything so far processed
	}
	resetShard := shardID(3)

	dir := t.TempDir()
	_, errOut, code := sc.kcltool("checkpoint", "reset", "--app", s.app, "--stream", s.stream, "--to", "trim-horizon",
		"--shard", resetShard, "--execute", "--sample", "300ms", "--backup-dir", dir)
	if code != 0 {
		t.Fatalf("reset exit %d: %s", code, errOut)
	}
	m := undoLine.FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("no undo line:\n%s", errOut)
	}
	undo := m[1]
	for shard, l := range s.leases(t) {
		if want := map[bool]string{true: leasecore.TRIM_HORIZON, false: seeded[shard]}[shard == resetShard]; l.Checkpoint.SequenceNumber != want {
			t.Fatalf("%s at %s after the reset, want %s", shard, l.Checkpoint.SequenceNumber, want)
		}
	}

	// New records on every shard; the worker handles them all, and the
	// reset shard from its start.
	s.putRound(t, keys, 2)
	s.putRound(t, keys, 3)
	tips := lastSequences(t, s.kin, s.stream)
	handledFile := filepath.Join(t.TempDir(), "handled.jsonl")
	w := startWorker(t, "A", []string{"OUT=" + handledFile}, runArgs(s, "A", "--exec", fleetHandler)...)
	eventuallyE2E(t, 90*time.Second, "every shard checkpointed at its last record", func() bool {
		ls := s.leases(t)
		for shard, tip := range tips {
			if ls[shard].Checkpoint.SequenceNumber != tip {
				return false
			}
		}
		return true
	})
	w.signal(t, 15)
	if c := w.exitCode(t, 30*time.Second); c != 0 {
		t.Fatalf("worker exit %d", c)
	}
	left := s.leases(t)

	// The undo exactly as printed, through a shell; --sample only shortens
	// the wait (the worker is stopped: no counter moves).
	sh := exec.Command("sh", "-c", undo+" --sample 500ms")
	sh.Env = append(append(os.Environ(), emulator.Env(t)...), "XDG_STATE_HOME="+t.TempDir())
	shOut, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("the undo failed: %v\n%s", err, shOut)
	}
	after := s.leases(t)
	for shard, l := range left {
		got := after[shard]
		if shard == resetShard {
			if got.Checkpoint.SequenceNumber != seeded[shard] {
				t.Errorf("%s (reset) at %s after the undo, want its checkpoint before the reset %s", shard, got.Checkpoint.SequenceNumber, seeded[shard])
			}
			continue
		}
		if got.Checkpoint != l.Checkpoint || got.LeaseCounter != l.LeaseCounter || got.LeaseOwner != l.LeaseOwner {
			t.Errorf("%s (not reset) changed by the undo: checkpoint %s counter %d owner %q, the worker left %s %d %q",
				shard, got.Checkpoint.SequenceNumber, got.LeaseCounter, got.LeaseOwner, l.Checkpoint.SequenceNumber, l.LeaseCounter, l.LeaseOwner)
		}
	}
	if !strings.Contains(string(shOut), "applied 1,") {
		t.Errorf("the undo's output:\n%s", shOut)
	}
	if !strings.HasSuffix(undo, " --shard "+resetShard+" --execute") {
		t.Errorf("undo %q does not name --shard %s alone", undo, resetShard)
	}

	plans, _ := filepath.Glob(filepath.Join(dir, "kcltool-reset-*.plan.json"))
	if len(plans) != 1 {
		t.Fatalf("plan files %v, want one", plans)
	}
	data, err := os.ReadFile(plans[0])
	if err != nil {
		t.Fatal(err)
	}
	var plan struct {
		Writes []string `json:"writes"`
		Undo   string   `json:"undo"`
	}
	if err := json.Unmarshal(data, &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan.Writes) != 1 || plan.Writes[0] != resetShard || plan.Undo != undo {
		t.Errorf("plan file: writes %v, undo %q; want [%s] and the printed undo %q", plan.Writes, plan.Undo, resetShard, undo)
	}
	// backups ls says what the reset's backup is the undo of.
	out, errOut, code := sc.kcltool("checkpoint", "backups", "ls", "--backup-dir", dir, "-o", "json")
	rows := jsonRows(t, out)
	if code != 0 || len(rows) != 1 {
		t.Fatalf("backups ls: exit %d, %s\n%s", code, out, errOut)
	}
	if w, _ := rows[0]["writes"].([]any); len(w) != 1 || w[0] != resetShard || rows[0]["undo"] != undo {
		t.Errorf("backups ls: writes %v, undo %v; want [%s] and %q", rows[0]["writes"], rows[0]["undo"], resetShard, undo)
	}
}

// The undo names leases by key, so that in a multi-stream table a shard
// id cannot select the same shard of another stream; the list is one
// shell word; --prune only when a named lease is one the command creates.
func TestUndoImportNamesExactlyTheWrittenLeases(t *testing.T) {
	a := "123456789012:orders:1700000000:shardId-000000000001"
	b := "123456789012:audit:1700000001:shardId-000000000001"
	plan := &reset.Plan{Changes: []reset.Change{
		{LeaseKey: a, ShardID: "shardId-000000000001", Action: reset.ActionUpdate},
		{LeaseKey: b, ShardID: "shardId-000000000001", Action: reset.ActionCreate},
	}}
	const start = "kcltool checkpoint import --app o"
	if got, want := checkpoint.UndoImport(start, "/b/x y.json", plan, []string{a}), start+" --file '/b/x y.json' --shard "+a+" --execute"; got != want {
		t.Errorf("undo\n  %s\nwant\n  %s", got, want)
	}
	if got, want := checkpoint.UndoImport(start, "/b/x.json", plan, []string{a, b}), start+" --file /b/x.json --shard "+a+","+b+" --prune --execute"; got != want {
		t.Errorf("undo\n  %s\nwant\n  %s", got, want)
	}
	if got := checkpoint.UndoImport(start, "/b/x.json", plan, nil); got != "" {
		t.Errorf("undo of nothing written: %q, want none", got)
	}
}
