package cmd

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reset"
)

// lastSequences reads every shard of the stream and returns the sequence
// number of its last record (absent for an empty shard).
func lastSequences(t *testing.T, kin *kinesis.Client, stream string) map[string]string {
	t.Helper()
	ctx := context.Background()
	shards, err := kin.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(stream)})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, sh := range shards.Shards {
		it, err := kin.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(stream), ShardId: sh.ShardId,
			ShardIteratorType: kintypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatal(err)
		}
		next := it.ShardIterator
		for next != nil {
			recs, err := kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: next})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs.Records {
				out[*sh.ShardId] = *r.SequenceNumber
			}
			if len(recs.Records) == 0 && aws.ToInt64(recs.MillisBehindLatest) == 0 {
				break
			}
			next = recs.NextShardIterator
		}
	}
	return out
}

// pause separates waves: arrival timestamps have millisecond precision.
func pause() time.Time {
	time.Sleep(100 * time.Millisecond)
	at := time.Now()
	time.Sleep(100 * time.Millisecond)
	return at
}

// checkReplay reads what the handlers handled and checks, for every key,
// that the first handlings are exactly the rounds from first on, in order.
func checkReplay(t *testing.T, out string, keys []string, first, rounds int) {
	t.Helper()
	batches := readBatches(t, out)
	next := map[string]int{}
	seen := map[string]bool{}
	for _, k := range keys {
		next[k] = first
	}
	for _, b := range batches {
		for _, r := range b.records {
			if r.n < first {
				t.Fatalf("key %s: round %d (before the reset time) handled in batch %d of %s", r.key, r.n, b.idx, b.shard)
			}
			id := r.key + ":" + strconv.Itoa(r.n)
			if seen[id] {
				continue
			}
			seen[id] = true
			if r.n != next[r.key] {
				t.Fatalf("key %s: round %d handled first when %d was due (batch %d of %s): order broken", r.key, r.n, next[r.key], b.idx, b.shard)
			}
			next[r.key]++
		}
	}
	for _, k := range keys {
		if next[k] != rounds {
			t.Fatalf("key %s: rounds %d..%d handled, want up to %d", k, first, next[k]-1, rounds-1)
		}
	}
}

// handlings counts every record handled so far, repeats included.
func handlings(t *testing.T, out string) int {
	n := 0
	for _, b := range readBatches(t, out) {
		n += len(b.records)
	}
	return n
}

// handled counts the distinct key:round records handled so far.
func handled(t *testing.T, out string) int { return distinctRecords(readBatches(t, out)) }

// The scenario of issue 6: three waves with pauses between them, shard 0
// split between waves 1 and 2, every record already processed. A reset to
// a time between waves 1 and 2, then `kcltool run`: every key's records
// from wave 2 on are handled again, in order, and none from wave 1.
//
// The second case moves the split after wave 2, so that the parent was
// open at the time and its lease, cleaned up after SHARD_END, is recreated:
// its wave-2 records must be replayed before the children's wave 3.
func TestResetAtTimeThenRun(t *testing.T) {
	for _, tc := range []struct {
		name        string
		splitBefore int // the wave the split comes before
		parent      reset.Action
	}{
		{"split between waves 1 and 2", 2, reset.ActionNone},
		{"split between waves 2 and 3 recreates the parent", 3, reset.ActionCreate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newE2EStack(t, 2)
			emulator.CreateLeaseTable(t, s.ddb, s.app)
			keys := keyNames(20)
			round := 0
			wave := func(n int) {
				for range n {
					s.putRound(t, keys, round)
					round++
				}
			}
			sc := &scenario{t: t, kin: s.kin, ddb: s.ddb, stream: s.stream, table: s.app, last: map[string]string{}, prev: map[string]string{}}
			sc.refresh()
			wave(2)
			at := pause()
			if tc.splitBefore == 2 {
				sc.split(shardID(0))
			}
			wave(2)
			pause()
			if tc.splitBefore == 3 {
				sc.split(shardID(0))
			}
			wave(2)
			// Everything was processed; the parent's lease was cleaned up.
			for shard, cp := range lastSequences(t, s.kin, s.stream) {
				if shard != shardID(0) {
					sc.lease(shard, "", cp)
				}
			}
			out, errOut, code := sc.kcltool("checkpoint", "reset", "--app", s.app, "--stream", s.stream,
				"--at", at.UTC().Format(time.RFC3339Nano), "--execute", "--sample", "300ms", "--backup-dir", t.TempDir(), "-o", "json")
			if code != 0 {
				t.Fatalf("reset exit %d\n%s\n%s", code, out, errOut)
			}
			rows := map[string]map[string]any{}
			for _, r := range jsonRows(t, out) {
				rows[r["leaseKey"].(string)] = r
			}
			if got := actionOf(rows[shardID(0)]); got != string(tc.parent) {
				t.Errorf("parent: action %s, want %s\n%s", got, tc.parent, out)
			}
			for _, child := range []string{shardID(2), shardID(3)} {
				if after := rows[child]["after"].(map[string]any)["checkpoint"]; after != leasecore.TRIM_HORIZON {
					t.Errorf("%s after %v, want TRIM_HORIZON", child, after)
				}
			}
			if !strings.Contains(errOut, "kcltool: undo with: kcltool checkpoint import --app "+s.app+" --file ") {
				t.Errorf("no undo hint:\n%s", errOut)
			}

			handledFile := filepath.Join(t.TempDir(), "handled.jsonl")
			w := startWorker(t, "A", []string{"OUT=" + handledFile}, runArgs(s, "A", "--exec", fleetHandler)...)
			want := len(keys) * 4
			eventuallyE2E(t, 60*time.Second, "waves 2 and 3 handled", func() bool { return handled(t, handledFile) >= want })
			time.Sleep(time.Second) // anything from wave 1 would show up now
			w.signal(t, 15)
			w.exitCode(t, 30*time.Second)
			checkReplay(t, handledFile, keys, 2, 6)
		})
	}
}

func actionOf(row map[string]any) string {
	if row == nil {
		return string(reset.ActionNone) // no row: no lease, nothing to do
	}
	return row["action"].(string)
}

// A forced reset of a running `kcltool run`: the worker loses the lease and
// starts again from the new checkpoint, so every record is handled again.
func TestResetForceAgainstARunningWorker(t *testing.T) {
	s := newE2EStack(t, 1)
	keys := keyNames(10)
	for r := range 3 {
		s.putRound(t, keys, r)
	}
	handledFile := filepath.Join(t.TempDir(), "handled.jsonl")
	w := startWorker(t, "A", []string{"OUT=" + handledFile}, runArgs(s, "A", "--exec", fleetHandler)...)
	eventuallyE2E(t, 60*time.Second, "every record handled", func() bool { return handled(t, handledFile) == 30 })
	eventuallyE2E(t, 10*time.Second, "the checkpoint at the last record", func() bool {
		l := s.leases(t)[shardID(0)]
		return !leasecore.IsSentinel(l.Checkpoint.SequenceNumber) && l.LeaseOwner == "A"
	})
	first := handlings(t, handledFile)

	sc := &scenario{t: t}
	out, errOut, code := sc.kcltool("checkpoint", "reset", "--app", s.app, "--stream", s.stream, "--to", "trim-horizon",
		"--execute", "--force", "--sample", "1s", "--backup-dir", t.TempDir(), "-o", "json")
	if code != 0 {
		t.Fatalf("reset exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "--force: the application was running (workers A)") {
		t.Errorf("stderr does not name the live worker:\n%s", errOut)
	}
	rows := jsonRows(t, out)
	if len(rows) != 1 || rows[0]["result"] != "applied" || !strings.Contains(rows[0]["detail"].(string), "held by A") {
		t.Fatalf("rows %v", rows)
	}
	// The worker notices at its next renewal, takes the lease back and
	// reads the shard again from TRIM_HORIZON.
	eventuallyE2E(t, 30*time.Second, "every record handled twice", func() bool { return handlings(t, handledFile) >= first+30 })
	w.signal(t, 15)
	w.exitCode(t, 30*time.Second)
	count := map[string]int{}
	for _, b := range readBatches(t, handledFile) {
		for _, r := range b.records {
			count[r.key+":"+strconv.Itoa(r.n)]++
		}
	}
	for id, n := range count {
		if n < 2 {
			t.Errorf("%s handled %d times after the reset to TRIM_HORIZON", id, n)
		}
	}
}

// A worker renewing its lease during the sample makes --execute refuse,
// name it, and write nothing.
func TestResetRefusesALiveApplication(t *testing.T) {
	ddb := emulator.DynamoDB(t)
	table := emulator.Name(t, "app")
	emulator.CreateLeaseTable(t, ddb, table)
	ctx := context.Background()
	for i, owner := range []string{"worker-live", "worker-dead"} {
		l := leasecore.Lease{LeaseKey: shardID(i), LeaseOwner: owner, LeaseCounter: 3, Checkpoint: leasecore.SequenceNumber{SequenceNumber: "100"}}
		if _, err := leasecore.CreateLease(ctx, ddb, table, l); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(t.TempDir(), "positions.csv")
	if err := os.WriteFile(file, []byte(shardID(0)+",TRIM_HORIZON\n"+shardID(1)+",TRIM_HORIZON\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		l, _, _ := leasecore.GetLease(ctx, ddb, table, shardID(0), true)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			var err error
			if l, err = leasecore.RenewLease(ctx, ddb, table, l, "worker-live"); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	backups := t.TempDir()
	out, errOut, code := (&scenario{t: t}).kcltool("checkpoint", "reset", "--app", table, "--from-file", file, "--execute", "--sample", "500ms", "--backup-dir", backups)
	close(stop)
	wg.Wait()
	if code != cmdutil.ExitProblems {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "the application is running") || !strings.Contains(errOut, "(workers worker-live)") || strings.Contains(errOut, "worker-dead") {
		t.Errorf("the refusal does not name exactly the live worker:\n%s", errOut)
	}
	for i := range 2 {
		if l, _, _ := leasecore.GetLease(ctx, ddb, table, shardID(i), true); l.Checkpoint.SequenceNumber != "100" {
			t.Errorf("%s checkpoint %s: the refused reset wrote", l.LeaseKey, l.Checkpoint.SequenceNumber)
		}
	}
	if entries, _ := os.ReadDir(backups); len(entries) != 0 {
		t.Errorf("a refused reset saved %d files", len(entries))
	}
}

// A lease that changes during the sample without its counter moving (KCL
// writes childShardIds that way at SHARD_END) is skipped, not overwritten,
// and the exit code says so; the undo names only the lease written.
func TestResetSkipsALeaseChangedDuringTheSample(t *testing.T) {
	ddb := emulator.DynamoDB(t)
	table := emulator.Name(t, "app")
	emulator.CreateLeaseTable(t, ddb, table)
	ctx := context.Background()
	for i := range 2 {
		if _, err := leasecore.CreateLease(ctx, ddb, table, leasecore.Lease{LeaseKey: shardID(i), Checkpoint: leasecore.SequenceNumber{SequenceNumber: "100"}}); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(t.TempDir(), "positions.csv")
	if err := os.WriteFile(file, []byte("leaseKey,checkpoint,subSequenceNumber\n"+shardID(0)+",7,0\n"+shardID(1)+",7,0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The change comes once the plan is read (the sample starts there),
	// not after a fixed sleep that a loaded machine outruns.
	out, errOut, code := kcltoolAfterLine(t, "checking that the application is stopped", func() {
		if err := leasecore.SetChildShardIDs(ctx, ddb, table, shardID(1), []string{shardID(5)}); err != nil {
			t.Error(err)
		}
	}, "checkpoint", "reset", "--app", table, "--from-file", file, "--execute", "--sample", "1s", "--backup-dir", t.TempDir(), "-o", "json")
	if code != cmdutil.ExitProblems {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, out, errOut)
	}
	rows := jsonRows(t, out)
	if rows[0]["result"] != "applied" || rows[1]["result"] != "skipped" || !strings.Contains(rows[1]["detail"].(string), "changed since the plan (childShardIds)") {
		t.Fatalf("rows %v", rows)
	}
	if !strings.Contains(errOut, "1 lease changed since the plan and not written: plan again") {
		t.Errorf("stderr:\n%s", errOut)
	}
	// Its undo restores the lease written, not the one skipped.
	if m := undoLine.FindStringSubmatch(errOut); m == nil || !strings.HasSuffix(m[1], " --shard "+shardID(0)+" --execute") {
		t.Errorf("the undo does not name %s alone:\n%s", shardID(0), errOut)
	}
	if l, _, _ := leasecore.GetLease(ctx, ddb, table, shardID(1), true); l.Checkpoint.SequenceNumber != "100" {
		t.Errorf("the changed lease was overwritten: %+v", l)
	}
}

// kcltoolAfterLine runs kcltool like scenario.kcltool and calls then once
// its stderr has a line containing marker.
func kcltoolAfterLine(t *testing.T, marker string, then func(), args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command("kcltool", args...)
	cmd.Env = recordCalls(t, args, append(os.Environ(), emulator.Env(t)...))
	var out, errOut bytes.Buffer
	cmd.Stdout = &out
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		errOut.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), marker) && then != nil {
			then()
			then = nil
		}
	}
	code := 0
	if err := cmd.Wait(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	return out.String(), errOut.String(), code
}

// Bad input exits 2 with a clear message and writes nothing.
func TestResetBadInputWritesNothing(t *testing.T) {
	s := newScenario(t, 2)
	s.put(shardID(0), 2)
	s.put(shardID(1), 2)
	s.lease(shardID(0), "", s.last[shardID(0)])
	s.lease(shardID(1), "", s.last[shardID(1)])
	before, _, _ := s.kcltool("checkpoint", "export", "--app", s.table)
	base := []string{"checkpoint", "reset", "--app", s.table, "--stream", s.stream, "--execute", "--sample", "100ms", "--backup-dir", t.TempDir()}
	for name, tc := range map[string]struct {
		args []string
		code int
		msg  string
	}{
		"unknown shard":    {[]string{"--to", "latest", "--shard", "shardId-000000000042"}, 2, "unknown shard shardId-000000000042: the lease table has no lease for it and the stream has no such shard"},
		"unparseable time": {[]string{"--at", "yesterday at ten"}, 2, `invalid --at: cannot parse "yesterday at ten" as a time`},
		"future time":      {[]string{"--at", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, 2, "is in the future"},
		"other shard's":    {[]string{"--to-sequence", s.last[shardID(0)], "--shard", shardID(1)}, 2, "is not a record of shard " + shardID(1)},
		"two targets":      {[]string{"--to", "latest", "--by-duration", "1h"}, 2, "give exactly one target"},
		"no shard":         {[]string{"--to-sequence", s.last[shardID(0)]}, 2, "--to-sequence needs exactly one --shard"},
		"AT_TIMESTAMP":     {[]string{"--to-sequence", "AT_TIMESTAMP", "--shard", shardID(0)}, 2, "use --at TIME"},
		"bad --to":         {[]string{"--to", "earliest"}, 2, `invalid --to "earliest"`},
	} {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := s.kcltool(append(base, tc.args...)...)
			if code != tc.code || !strings.Contains(errOut, tc.msg) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q (stdout %s)", code, errOut, tc.code, tc.msg, out)
			}
		})
	}
	after, _, _ := s.kcltool("checkpoint", "export", "--app", s.table)
	if stripExportedAt(before) != stripExportedAt(after) {
		t.Errorf("bad input changed the table:\n%s\n%s", before, after)
	}
}

var exportedAt = regexp.MustCompile(`"exportedAt": "[^"]*"`)

func stripExportedAt(s string) string {
	return exportedAt.ReplaceAllString(s, `"exportedAt": "<time>"`)
}

// export → reset (recreating cleaned-up parents) → import of the backup the
// reset saved, with --prune, restores the table attribute for attribute
// except leaseCounter.
func TestResetUndoWithTheBackup(t *testing.T) {
	s := newScenario(t, 2)
	s.put(shardID(0), 2)
	at := pause()
	s.put(shardID(0), 2)
	s.split(shardID(0))
	s.put(shardID(2), 2)
	s.put(shardID(1), 2)
	s.lease(shardID(1), "worker-a", s.last[shardID(1)])
	s.lease(shardID(2), "worker-a", s.last[shardID(2)])
	before := exportItems(t, s)
	dir := t.TempDir()
	_, errOut, code := s.kcltool("checkpoint", "reset", "--app", s.table, "--stream", s.stream, "--at", at.UTC().Format(time.RFC3339Nano),
		"--execute", "--sample", "200ms", "--backup-dir", dir)
	if code != 0 {
		t.Fatalf("reset exit %d: %s", code, errOut)
	}
	undo := regexp.MustCompile(`kcltool: undo with: (kcltool checkpoint import .*)`).FindStringSubmatch(errOut)
	if undo == nil || !strings.HasSuffix(undo[1], "--prune --execute") {
		t.Fatalf("no undo command with --prune:\n%s", errOut)
	}
	if n := len(exportItems(t, s)); n != 3 {
		t.Fatalf("%d leases after the reset, want 3 (0 recreated)", n)
	}
	args := append(strings.Fields(undo[1])[1:], "--sample", "200ms", "--backup-dir", dir)
	if out, errOut, code := s.kcltool(args...); code != 0 {
		t.Fatalf("import exit %d\n%s\n%s", code, out, errOut)
	}
	after := exportItems(t, s)
	if len(after) != len(before) {
		t.Fatalf("%d items after the undo, want %d", len(after), len(before))
	}
	for key, it := range before {
		if !reset.EqualItems(it.Item, after[key].Item, leasecore.AttrLeaseCounter) {
			t.Errorf("%s differs after the undo", key)
		}
		if after[key].Lease.LeaseCounter <= it.Lease.LeaseCounter {
			t.Errorf("%s leaseCounter %d, want more than %d", key, after[key].Lease.LeaseCounter, it.Lease.LeaseCounter)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "kcltool-*"))
	sort.Strings(files)
	if len(files) != 4 {
		t.Errorf("backup folder holds %v, want a plan and a backup for the reset and for the import", files)
	}
}

func exportItems(t *testing.T, s *scenario) map[string]reset.ExportItem {
	t.Helper()
	out, errOut, code := s.kcltool("checkpoint", "export", "--app", s.table)
	if code != 0 {
		t.Fatalf("export exit %d: %s", code, errOut)
	}
	e, err := reset.ReadExport([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]reset.ExportItem{}
	for _, it := range e.Items {
		m[it.LeaseKey] = it
	}
	return m
}
