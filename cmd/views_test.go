package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// everyStateScenario builds one stream whose shards and leases are in every
// `checkpoint diff` state: five shards; shard 0 split into 5 and 6; 6 merged
// with 1 into 7.
func everyStateScenario(t *testing.T) *scenario {
	s := newScenario(t, 5)
	for _, n := range []int{0, 1, 2, 3} {
		s.put(shardID(n), 3)
	}
	s.split(shardID(0))
	s.merge(shardID(6), shardID(1))
	s.put(shardID(7), 2)
	s.lease(shardID(0), "worker-a", leasecore.SHARD_END)                                                    // drained
	s.lease(shardID(1), "worker-a", s.last[shardID(1)])                                                     // closed-undrained
	s.lease(shardID(2), "worker-b", s.prev[shardID(2)])                                                     // behind
	s.lease(shardID(3), "worker-b", s.last[shardID(3)])                                                     // at-tip
	s.lease(shardID(4), "worker-b", leasecore.LATEST)                                                       // not-started
	s.lease(shardID(7), "", leasecore.TRIM_HORIZON)                                                         // blocked on shard 1
	s.lease("shardId-000000000099", "worker-c", "49590338271490256608559692538361571095921575989136588898") // orphan-lease
	// shard 5 has no lease (missing-lease); shard 6's lease was cleaned up (drained)
	return s
}

func TestCheckpointDiffEveryState(t *testing.T) {
	s := everyStateScenario(t)
	out, errOut, code := s.kcltool("checkpoint", "diff", "--app", s.table, "--stream", s.stream, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := map[string]string{
		shardID(0): "drained", shardID(1): "closed-undrained", shardID(2): "behind", shardID(3): "at-tip",
		shardID(4): "not-started", shardID(5): "missing-lease", shardID(6): "drained", shardID(7): "blocked",
		"shardId-000000000099": "orphan-lease",
	}
	rows := jsonRows(t, out)
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d:\n%s", len(rows), len(want), out)
	}
	for _, r := range rows {
		id := r["shardId"].(string)
		if r["state"] != want[id] {
			t.Errorf("%s: state %v, want %s", id, r["state"], want[id])
		}
		switch id {
		case shardID(2):
			if ms, ok := r["millisBehindLatest"].(float64); !ok || ms <= 0 {
				t.Errorf("behind shard has millisBehindLatest %v", r["millisBehindLatest"])
			}
		case shardID(3):
			if r["millisBehindLatest"] != float64(0) {
				t.Errorf("at-tip shard has millisBehindLatest %v", r["millisBehindLatest"])
			}
		case shardID(7):
			if b := r["blockedBy"].([]any); len(b) != 1 || b[0] != shardID(1) {
				t.Errorf("blocked shard names %v, want [%s]", b, shardID(1))
			}
		case shardID(4), shardID(0):
			if r["millisBehindLatest"] != nil {
				t.Errorf("%s: millisBehindLatest measured: %v", id, r["millisBehindLatest"])
			}
		}
		if id == "shardId-000000000099" && r["shardStatus"] != nil {
			t.Errorf("orphan has shardStatus %v", r["shardStatus"])
		}
	}
	golden(t, "checkpoint-diff.json", normalize(out))

	// The table names the blocking parent and sums up each state. BEHIND
	// is rounded for people: whole seconds here, 0s at the tip, "-" where
	// not measured.
	table, _, _ := s.kcltool("lag", "--app", s.table, "--stream", s.stream)
	tableRows := 0
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line) // SHARD LEASE-OWNER CHECKPOINT SHARD-STATUS BEHIND STATE
		if len(f) < 6 || !strings.HasPrefix(f[0], "shardId-") {
			continue
		}
		tableRows++
		want := "-"
		switch f[0] {
		case shardID(3):
			want = "0s"
		case shardID(2):
			if !regexp.MustCompile(`^(<1s|[1-9]\d*s|[1-9]\d*m\d+s)$`).MatchString(f[4]) {
				t.Errorf("behind shard: BEHIND %q is not rounded for people", f[4])
			}
			continue
		}
		if f[4] != want {
			t.Errorf("%s: BEHIND %q, want %q", f[0], f[4], want)
		}
	}
	if tableRows != 9 {
		t.Errorf("%d rows, want 9:\n%s", tableRows, table)
	}
	for _, w := range []string{"blocked on " + shardID(1), "9 rows: 1 at-tip, 1 behind, 1 not-started, 2 drained, 1 closed-undrained, 1 blocked, 1 missing-lease, 1 orphan-lease"} {
		if !strings.Contains(table, w) {
			t.Errorf("table lacks %q:\n%s", w, table)
		}
	}

	// --fail-on and --max-behind exit 3 on a match, 0 otherwise.
	if _, e, code := s.kcltool("lag", "--app", s.table, "--stream", s.stream, "--fail-on", "blocked,orphan-lease"); code != 3 || !strings.Contains(e, "1 shard blocked; 1 shard orphan-lease") {
		t.Errorf("--fail-on: exit %d, stderr %q", code, e)
	}
	if _, _, code := s.kcltool("lag", "--app", s.table, "--stream", s.stream, "--fail-on", "closed-undrained", "-o", "json"); code != 3 {
		t.Errorf("--fail-on closed-undrained: exit %d", code)
	}
	if _, _, code := s.kcltool("lag", "--app", s.table, "--stream", s.stream, "--max-behind", "24h"); code != 0 {
		t.Errorf("--max-behind 24h: exit %d", code)
	}
	if _, e, code := s.kcltool("lag", "--app", s.table, "--stream", s.stream, "--max-behind", "1ns"); code != 3 || !strings.Contains(e, "behind more than 1ns") {
		t.Errorf("--max-behind 1ns: exit %d, %q", code, e)
	}
	if _, e, code := s.kcltool("lag", "--app", s.table, "--stream", s.stream, "--fail-on", "late"); code != 2 || !strings.Contains(e, "invalid --fail-on state") {
		t.Errorf("--fail-on late: exit %d, %q", code, e)
	}
}

// TestCheckpointDiffRecreatedStream: a stream deleted and created again
// under the same name has shards with the old ids; the old checkpoints must
// show as orphan-lease, never as a false at-tip.
func TestCheckpointDiffRecreatedStream(t *testing.T) {
	s := newScenario(t, 1)
	s.put(shardID(0), 3)
	s.lease(shardID(0), "worker-a", s.last[shardID(0)])
	if _, err := s.kin.DeleteStream(context.Background(), &kinesis.DeleteStreamInput{StreamName: aws.String(s.stream)}); err != nil {
		t.Fatal(err)
	}
	waitStreamGone(t, s)
	emulator.CreateStream(t, s.kin, s.stream, 1)
	s.refresh()
	s.put(shardID(0), 1)
	out, errOut, code := s.kcltool("lag", "--app", s.table, "--stream", s.stream, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows := jsonRows(t, out)
	if len(rows) != 1 || rows[0]["state"] != "orphan-lease" {
		t.Fatalf("want one orphan-lease row:\n%s", out)
	}
}

func waitStreamGone(t *testing.T, s *scenario) {
	t.Helper()
	for range 300 {
		if _, err := s.kin.DescribeStreamSummary(context.Background(), &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(s.stream)}); err != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("stream not deleted")
}

// TestCheckpointDiffMultiStream groups a multi-stream lease table by stream
// and filters with --stream.
func TestCheckpointDiffMultiStream(t *testing.T) {
	a, b := newScenario(t, 1), newScenario(t, 1)
	a.put(shardID(0), 2)
	b.put(shardID(0), 2)
	for _, sc := range []*scenario{a, b} {
		id := "123456789012:" + sc.stream + ":1700000000"
		l := leasecore.Lease{LeaseKey: id + ":" + shardID(0), StreamName: id, ShardID: shardID(0), LeaseOwner: "w",
			Checkpoint: leasecore.SequenceNumber{SequenceNumber: sc.last[shardID(0)]}}
		if _, err := leasecore.CreateLease(context.Background(), a.ddb, a.table, l); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, code := a.kcltool("lag", "--app", a.table, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows := jsonRows(t, out)
	if len(rows) != 2 || rows[0]["state"] != "at-tip" || rows[1]["state"] != "at-tip" || rows[0]["streamName"] == rows[1]["streamName"] {
		t.Fatalf("want one at-tip row per stream:\n%s", out)
	}
	out, _, _ = a.kcltool("lag", "--app", a.table, "--stream", b.stream, "-o", "json")
	if rows := jsonRows(t, out); len(rows) != 1 || rows[0]["streamName"] != b.stream {
		t.Fatalf("--stream did not filter:\n%s", out)
	}
	if _, e, code := a.kcltool("lag", "--app", a.table, "--stream", "nope"); code != 1 || !strings.Contains(e, `no leases of stream "nope"`) {
		t.Errorf("unknown stream: exit %d %q", code, e)
	}
}

// TestLineageSplitAndMerge prints the tree with a merge child under both
// parents, explains an idle child, and pins the JSON and dot outputs.
func TestLineageSplitAndMerge(t *testing.T) {
	s := everyStateScenario(t)
	out, errOut, code := s.kcltool("lineage", "--stream", s.stream, "--app", s.table)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	nb := "\u00a0"
	for _, w := range []string{
		"SHARD                          SHARE   STATUS   OWNER      CHECKPOINT ",
		"├──" + nb + shardID(5) + "       10.0%   open     -          -    ",
		"└──" + nb + shardID(6),
		// The merge child under each parent, naming the other one, waiting
		// on the parent that is not at SHARD_END.
		strings.Repeat(nb, 4) + "└──" + nb + shardID(7) + "   30.0%   open     -          TRIM_HORIZON ",
		"waiting-on-parent   " + shardID(1) + "   " + shardID(1) + "\n",
		"waiting-on-parent   " + shardID(1) + "   " + shardID(6) + "\n",
		"\nshardId-000000000099           -       -        worker-c   ",
		"orphan-lease: 1 lease of shards the stream does not have",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("lineage lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "no lease") {
		t.Errorf("lineage says \"no lease\":\n%s", out)
	}
	awkColumns(t, out, 8)
	wide, _, _ := s.kcltool("lineage", "--stream", s.stream, "--app", s.table, "-o", "wide")
	if !strings.Contains(wide, "ALSO-UNDER             HASH-RANGE ") || !strings.Contains(wide, "   SUBSEQ   LEASE-KEY\n") ||
		!regexp.MustCompile(`\n`+shardID(0)+` .* 0-68056473384187692692674921486353642290 +0 +`+shardID(0)+`\n`).MatchString(wide) {
		t.Errorf("wide lineage lacks the hash range, sub-sequence number and lease key:\n%s", wide)
	}
	awkColumns(t, wide, 11)
	bare, _, _ := s.kcltool("lineage", "--stream", s.stream)
	awkColumns(t, bare, 4)

	js, _, _ := s.kcltool("shards", "lineage", "--stream", s.stream, "--app", s.table, "-o", "json")
	rows := jsonRows(t, js)
	if len(rows) != 8 {
		t.Fatalf("%d nodes, want 8", len(rows))
	}
	golden(t, "lineage.json", normalize(js))
	dot, _, _ := s.kcltool("lineage", "--stream", s.stream, "-o", "dot")
	golden(t, "lineage.dot", normalize(dot))
	// dot is for tools: its checkpoints are whole, as in every format but
	// a fitted table (it shortened them once).
	dotApp, _, _ := s.kcltool("lineage", "--stream", s.stream, "--app", s.table, "-o", "dot")
	if strings.Contains(dotApp, "…") || !longDigits.MatchString(dotApp) {
		t.Errorf("lineage -o dot with --app: want whole sequence numbers:\n%s", dotApp)
	}
}

// awkColumns checks that every line of a table, up to the first blank
// line, has n fields as awk splits them (on spaces and tabs), and with awk
// itself where there is one.
func awkColumns(t *testing.T, out string, n int) {
	t.Helper()
	table, _, _ := strings.Cut(out, "\n\n")
	table = strings.TrimRight(table, "\n")
	for _, line := range strings.Split(table, "\n") {
		if got := len(strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })); got != n {
			t.Errorf("%d fields, want %d: %q", got, n, line)
		}
	}
	awk, err := exec.LookPath("awk")
	if err != nil {
		return
	}
	cmd := exec.Command(awk, `{ print NF }`)
	cmd.Stdin = strings.NewReader(table + "\n")
	got, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(got)) {
		if f != strconv.Itoa(n) {
			t.Errorf("awk counts %s fields on a line, want %d:\n%s", f, n, table)
			break
		}
	}
}

// TestLeasesOwnersBalance flags imbalance beyond one lease and unassigned
// leases, and pins the JSON.
func TestLeasesOwnersBalance(t *testing.T) {
	c := emulator.DynamoDB(t)
	table := emulator.Name(t, "owners")
	emulator.CreateLeaseTable(t, c, table)
	owners := []string{"worker-a", "worker-a", "worker-a", "worker-a", "worker-b", "", leasecore.SHARD_END}
	for i, o := range owners {
		l := leasecore.Lease{LeaseKey: shardID(i), Checkpoint: leasecore.SequenceNumber{SequenceNumber: leasecore.TRIM_HORIZON}}
		if o == leasecore.SHARD_END {
			l.LeaseOwner, l.Checkpoint.SequenceNumber = "worker-b", leasecore.SHARD_END
		} else {
			l.LeaseOwner = o
		}
		if _, err := leasecore.CreateLease(context.Background(), c, table, l); err != nil {
			t.Fatal(err)
		}
	}
	s := &scenario{t: t}
	out, errOut, code := s.kcltool("leases", "owners", "--app", table)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, w := range []string{"worker-a   4        3            +1", "worker-b   1        3            -2", "6 leases, 2 workers, fair share 3", "imbalanced", "unassigned: 1 lease (" + shardID(5) + ")",
		// A KCL 2.x table: a `kcltool run` worker takes leases (issue 25).
		"\nmode: workers take leases: KCL 2.x (no Migration3.0 item; no index LeaseOwnerToLeaseKeyIndex)\n"} {
		if !strings.Contains(out, w) {
			t.Errorf("owners lacks %q:\n%s", w, out)
		}
	}
	js, _, _ := s.kcltool("leases", "owners", "--app", table, "-o", "json")
	golden(t, "owners.json", js)
}

// TestLeasesOwnersKCL3 names the KCL 3.x leader under the table, not in the
// WORKER cell, so awk sees the same columns on every row; the KBPS column
// (the worker's summed throughputKBps) is there since some lease has one.
func TestLeasesOwnersKCL3(t *testing.T) {
	ddb := emulator.DynamoDB(t)
	table := seedTable(t)
	seedFiles(t, ddb, table, fixturesDir(t), "f2-kcl35-active.json", "f6-kcl35-non-lease.jsonl")
	s := &scenario{t: t}
	out, errOut, code := s.kcltool("leases", "owners", "--app", table)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "\nworker-b   1        1            +0        12.3   shardId-000000000001\n") || !strings.Contains(out, "\nKCL 3.x leader: worker-b (lock in "+table+")\n") {
		t.Errorf("owners table:\n%s", out)
	}
	// The mode a `kcltool run` worker would follow here, and why (issue 25).
	if !strings.Contains(out, "\nmode: leader assigns: KCL 3.x (") {
		t.Errorf("owners table without the leader's mode:\n%s", out)
	}
	awkColumns(t, out, 6)
	js, errOut, code := s.kcltool("leases", "owners", "--app", table, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(js), &rows); err != nil || len(rows) == 0 {
		t.Fatalf("json %v: %s", err, js)
	}
	for _, r := range rows {
		if r["assignment"] != "leader" || !strings.HasPrefix(fmt.Sprint(r["assignmentReason"]), "KCL 3.x (") || r["layout"] != "lease-table" {
			t.Errorf("json row %v", r)
		}
	}
}
