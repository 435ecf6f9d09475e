package processor

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/proctest"
	"github.com/kcltool/kcltool/kinesisrec"
)

// script writes an executable sh script into a fresh directory and returns
// its path and the directory, which the script sees as $OUT.
func script(t *testing.T, body string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "handler.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, dir
}

// newHandler runs body through sh -c, as --exec does, with $OUT set.
func newHandler(t *testing.T, body string) (*Handler, string) {
	t.Helper()
	dir := t.TempDir()
	return &Handler{Argv: ShellCommand(body), Env: append(os.Environ(), "OUT="+dir)}, dir
}

// testBatch is n records with sequence numbers 100, 101, … on one shard.
// arrival is the first test record's arrival time; its milliseconds are
// not round so that a truncation shows.
var arrival = time.Date(2025, 3, 4, 5, 6, 7, 891e6, time.UTC)

func testBatch(n int) Batch {
	b := Batch{App: "orders", Stream: "orders-stream", ShardID: "shardId-000000000003", WorkerID: "worker-1", MillisBehindLatest: 1234, Attempt: 1}
	for i := range n {
		b.Records = append(b.Records, kinesisrec.Record{
			Data: fmt.Appendf(nil, "record-%d", i), PartitionKey: fmt.Sprintf("pk-%d", i%3),
			SequenceNumber: strconv.Itoa(100 + i), ApproximateArrivalTimestamp: arrival.Add(time.Duration(i) * time.Millisecond),
			ShardID: "shardId-000000000003",
		})
	}
	return b
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestHandlerStdinJSONAndEnvironment(t *testing.T) {
	h, out := newHandler(t, `cat > "$OUT/stdin"; env > "$OUT/env"`)
	// A stale KCLTOOL_APP in the parent environment (kcltool reads its flags
	// from such variables) must not reach the handler.
	h.Env = append(h.Env, "KCLTOOL_APP=stale", "KEEP_ME=yes")
	b := testBatch(3)
	b.Records[1].ExplicitHashKey = "340282366920938463463374607431768211455"
	b.Records[1].SubSequenceNumber = 4
	b.Records[2].PartitionKey = "quote\" backslash\\ tab\t newline\n ctl\x01 bad\xff ünï"
	b.Records[2].Data = []byte{0, 1, 2, 0xff, '\n'}
	b.Records[2].ApproximateArrivalTimestamp = time.Time{}
	b.Attempt = 3

	res := h.Run(context.Background(), b)
	if res.Outcome != Succeeded || res.Err != nil || res.ExitCode != 0 {
		t.Fatalf("result = %+v", res)
	}
	lines := strings.Split(strings.TrimSuffix(readFile(t, filepath.Join(out, "stdin")), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("handler read %d lines:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	// The exact shape of the first line: field names, order, types, the
	// timestamp format.
	wantFirst := `{"data":"cmVjb3JkLTA=","partitionKey":"pk-0","sequenceNumber":"100","subSequenceNumber":0,` +
		`"approximateArrivalTimestamp":"2025-03-04T05:06:07.891Z","shardId":"shardId-000000000003"}`
	if lines[0] != wantFirst {
		t.Errorf("line 1:\n got %s\nwant %s", lines[0], wantFirst)
	}
	for i, line := range lines {
		var got map[string]any
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", i+1, err, line)
		}
		// The hand-written encoder must agree with encoding/json on the
		// documented shape (recordJSON, also used by failure files).
		ref, _ := json.Marshal(toRecordJSON(b.Records[i]))
		var want map[string]any
		_ = json.Unmarshal(ref, &want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("line %d:\n got %v\nwant %v", i+1, got, want)
		}
	}
	var second map[string]any
	_ = json.Unmarshal([]byte(lines[1]), &second)
	if second["explicitHashKey"] != b.Records[1].ExplicitHashKey || second["subSequenceNumber"] != 4.0 {
		t.Errorf("line 2 = %v", second)
	}
	var third map[string]any
	_ = json.Unmarshal([]byte(lines[2]), &third)
	if data, _ := base64.StdEncoding.DecodeString(third["data"].(string)); !bytes.Equal(data, b.Records[2].Data) {
		t.Errorf("binary data came back as %q", data)
	}
	if _, ok := third["approximateArrivalTimestamp"]; ok {
		t.Errorf("zero arrival time written: %v", third)
	}
	if _, ok := third["explicitHashKey"]; ok {
		t.Errorf("absent explicit hash key written: %v", third)
	}

	env := map[string]string{}
	for _, kv := range strings.Split(readFile(t, filepath.Join(out, "env")), "\n") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	want := map[string]string{
		"KCLTOOL_APP": "orders", "KCLTOOL_STREAM": "orders-stream", "KCLTOOL_SHARD_ID": "shardId-000000000003",
		"KCLTOOL_WORKER_ID": "worker-1", "KCLTOOL_BATCH_SIZE": "3", "KCLTOOL_FIRST_SEQUENCE": "100",
		"KCLTOOL_LAST_SEQUENCE": "102", "KCLTOOL_MILLIS_BEHIND_LATEST": "1234", "KCLTOOL_ATTEMPT": "3",
		"KEEP_ME": "yes",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
}

// A handler's CPU time includes the commands its shell waited for: here
// the outer shell only waits, and an inner one does the work.
func TestHandlerReportsCPUOfItsCommands(t *testing.T) {
	h, _ := newHandler(t, `cat >/dev/null; sh -c 'i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done'`)
	res := h.Run(context.Background(), testBatch(3))
	if res.Outcome != Succeeded {
		t.Fatalf("result = %+v", res)
	}
	// The loop takes tens of milliseconds of CPU on any machine; it cannot
	// take more CPU than wall time, being one process at a time.
	if res.CPU < 10*time.Millisecond || res.CPU > res.Duration+10*time.Millisecond {
		t.Errorf("handler CPU = %s over a run of %s; want the inner loop's (at least 10ms, at most the run)", res.CPU, res.Duration)
	}
}

func TestHandlerRawFormat(t *testing.T) {
	h, out := newHandler(t, `cat > "$OUT/stdin"`)
	h.Format = FormatRaw
	res := h.Run(context.Background(), testBatch(3))
	if res.Outcome != Succeeded {
		t.Fatalf("result = %+v", res)
	}
	if got := readFile(t, filepath.Join(out, "stdin")); got != "record-0\nrecord-1\nrecord-2\n" {
		t.Errorf("raw stdin = %q", got)
	}
}

// `-- cmd args…` runs the program itself: no shell splits or expands the
// arguments.
func TestHandlerArgvWithoutShell(t *testing.T) {
	path, dir := script(t, `printf '%s\n' "$@" > "$(dirname "$0")/args"`)
	h := &Handler{Argv: []string{path, "two words", "$HOME", "*"}, Env: os.Environ()}
	if res := h.Run(context.Background(), testBatch(1)); res.Outcome != Succeeded {
		t.Fatalf("result = %+v", res)
	}
	if got := readFile(t, filepath.Join(dir, "args")); got != "two words\n$HOME\n*\n" {
		t.Errorf("args = %q", got)
	}
	res := (&Handler{Argv: []string{filepath.Join(dir, "missing")}, Env: os.Environ()}).Run(context.Background(), testBatch(1))
	if res.Outcome != Failed || res.ExitCode != -1 || res.Err == nil {
		t.Errorf("missing program: %+v", res)
	}
}

func TestHandlerFailureKeepsStderrTail(t *testing.T) {
	// 1 MB of stderr: more than a pipe holds, so a handler whose stderr
	// were not drained would hang here.
	h, _ := newHandler(t, `head -c 1000000 /dev/zero | tr '\0' e >&2; echo "the end" >&2; exit 3`)
	res := h.Run(context.Background(), testBatch(2))
	if res.Outcome != Failed || res.ExitCode != 3 || !strings.Contains(res.Err.Error(), "status 3") {
		t.Fatalf("result = %+v", res)
	}
	if !strings.HasSuffix(res.StderrTail, "eeethe end\n") || len(res.StderrTail) > StderrTailSize+100 {
		t.Errorf("stderr tail (%d bytes) ends %q", len(res.StderrTail), res.StderrTail[max(0, len(res.StderrTail)-40):])
	}
	if !strings.HasPrefix(res.StderrTail, "[") || !strings.Contains(res.StderrTail, "earlier bytes not kept") {
		t.Errorf("stderr tail does not say it was cut: %q", res.StderrTail[:60])
	}
}

// A handler may exit without reading its input; the write then fails with
// EPIPE, which must not count as a failure.
func TestHandlerIgnoresUnreadStdin(t *testing.T) {
	big := testBatch(2000) // ~200 KB of JSON, more than a pipe buffer
	for _, body := range []string{`exit 0`, `head -n 1 > /dev/null`, `exec 0<&-; sleep 0.1`} {
		h, _ := newHandler(t, body)
		if res := h.Run(context.Background(), big); res.Outcome != Succeeded {
			t.Errorf("%s: %+v", body, res)
		}
	}
	h, _ := newHandler(t, `exit 4`)
	if res := h.Run(context.Background(), big); res.Outcome != Failed || res.ExitCode != 4 {
		t.Errorf("exit 4 without reading: %+v", res)
	}
}

func TestHandlerBatchItemFailures(t *testing.T) {
	// Records 0-1 share sequence number 100 (sub-records of one aggregate),
	// then 101, 102, 103.
	b := testBatch(5)
	b.Records[1].SequenceNumber, b.Records[1].SubSequenceNumber = "100", 1
	for i := 2; i < 5; i++ {
		b.Records[i].SequenceNumber = strconv.Itoa(99 + i)
	}
	cases := []struct {
		name    string
		stdout  string
		exit    int
		outcome Outcome
		from    int
		output  string
		errText string
	}{
		{name: "one item", stdout: `{"batchItemFailures":[{"itemIdentifier":"102"}]}`, outcome: PartiallyFailed, from: 3},
		{name: "first of several wins", stdout: `{"batchItemFailures":[{"itemIdentifier":"103"},{"itemIdentifier":"101"}]}`, outcome: PartiallyFailed, from: 2},
		{name: "aggregate fails from its first sub-record", stdout: `{"batchItemFailures":[{"itemIdentifier":"100"}]}`, outcome: PartiallyFailed, from: 0},
		{name: "empty list is success", stdout: `{"batchItemFailures":[]}`, outcome: Succeeded},
		{name: "null list is success", stdout: `{"batchItemFailures":null}`, outcome: Succeeded},
		{name: "other JSON is just output", stdout: `{"status":"ok"}`, outcome: Succeeded, output: `{"status":"ok"}`},
		{name: "mixed with text, pretty-printed", outcome: PartiallyFailed, from: 4, output: "processing\ndone",
			stdout: "processing\n{\n  \"batchItemFailures\": [\n    {\"itemIdentifier\": \"103\"}\n  ]\n}\ndone"},
		{name: "unknown identifier", stdout: `{"batchItemFailures":[{"itemIdentifier":"999"}]}`, outcome: Failed, errText: "not a sequence number"},
		{name: "numeric identifier", stdout: `{"batchItemFailures":[{"itemIdentifier":102}]}`, outcome: Failed, errText: "malformed"},
		{name: "missing identifier", stdout: `{"batchItemFailures":[{}]}`, outcome: Failed, errText: "no itemIdentifier"},
		{name: "garbled response", stdout: `{"batchItemFailures":[{"itemIdentifier":"102"}`, outcome: Failed, errText: "no readable response"},
		{name: "two responses", stdout: "{\"batchItemFailures\":[]}\n{\"batchItemFailures\":[]}", outcome: Failed, errText: "more than one"},
		// A key in another case is not the response, but a success would
		// checkpoint records the handler meant to report as failed.
		{name: "mis-cased key fails the batch", stdout: `{"BatchItemFailures":[{"itemIdentifier":"102"}]}`, outcome: Failed, errText: `key "BatchItemFailures"`},
		{name: "lower-cased key fails the batch", stdout: `{"batchitemfailures":[]}`, outcome: Failed, errText: `key "batchitemfailures"`},
		{name: "mis-cased key beside the right one", stdout: `{"batchItemFailures":[],"BATCHITEMFAILURES":[{"itemIdentifier":"102"}]}`, outcome: Failed, errText: `key "BATCHITEMFAILURES"`},
		{name: "mis-cased key after text, pretty-printed", stdout: "working\n{\n  \"BatchItemFailures\": []\n}", outcome: Failed, errText: `key "BatchItemFailures"`},
		{name: "mis-cased itemIdentifier", stdout: `{"batchItemFailures":[{"ItemIdentifier":"102"}]}`, outcome: Failed, errText: `key "ItemIdentifier"`},
		{name: "mis-cased itemIdentifier beside the right one", stdout: `{"batchItemFailures":[{"itemIdentifier":"102","itemidentifier":"101"}]}`, outcome: Failed, errText: `key "itemidentifier"`},
		{name: "non-zero exit wins", stdout: `{"batchItemFailures":[{"itemIdentifier":"102"}]}`, exit: 1, outcome: Failed, errText: "status 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, dir := script(t, fmt.Sprintf(`cat > /dev/null; cat "$(dirname "$0")/stdout"; exit %d`, c.exit))
			if err := os.WriteFile(filepath.Join(dir, "stdout"), []byte(c.stdout+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			res := (&Handler{Argv: []string{path}, Env: os.Environ()}).Run(context.Background(), b)
			if res.Outcome != c.outcome || (c.outcome == PartiallyFailed && res.FailedFrom != c.from) {
				t.Fatalf("outcome %v from %d (%v), want %v from %d", res.Outcome, res.FailedFrom, res.Err, c.outcome, c.from)
			}
			if c.errText != "" && (res.Err == nil || !strings.Contains(res.Err.Error(), c.errText)) {
				t.Errorf("error %v, want it to mention %q", res.Err, c.errText)
			}
			if c.output != "" && res.Output != c.output {
				t.Errorf("output %q, want %q", res.Output, c.output)
			}
			if c.outcome == PartiallyFailed && c.output == "" && res.Output != "" {
				t.Errorf("the response leaked into the output: %q", res.Output)
			}
		})
	}
}

// A handler that echoes megabytes before its response: the response is
// still found (it is at the end), and the logs get a bounded head.
func TestHandlerLargeStdout(t *testing.T) {
	h, _ := newHandler(t, `cat > /dev/null; head -c 3000000 /dev/zero | tr '\0' x; echo; echo '{"batchItemFailures":[{"itemIdentifier":"101"}]}'`)
	res := h.Run(context.Background(), testBatch(3))
	if res.Outcome != PartiallyFailed || res.FailedFrom != 1 {
		t.Fatalf("result = %v from %d: %v", res.Outcome, res.FailedFrom, res.Err)
	}
	if len(res.Output) > outputLogMax+100 || !strings.Contains(res.Output, "more bytes not kept") {
		t.Errorf("output is %d bytes: %q…", len(res.Output), res.Output[:min(80, len(res.Output))])
	}
	// The same response early in a huge stdout is out of sight: failure,
	// not a silent success.
	h, _ = newHandler(t, `cat > /dev/null; echo '{"batchItemFailures":[{"itemIdentifier":"101"}]}'; head -c 3000000 /dev/zero | tr '\0' x`)
	if res := h.Run(context.Background(), testBatch(3)); res.Outcome != Failed || !strings.Contains(res.Err.Error(), "not within the last") {
		t.Fatalf("early response: %v %v", res.Outcome, res.Err)
	}
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !proctest.Gone(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL) // our own leftover: do not leak it
			t.Fatalf("process %d still running", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHandlerTimeoutKillsProcessGroup(t *testing.T) {
	h, out := newHandler(t, `sleep 100 & echo $! > "$OUT/grandchild"; sleep 100`)
	h.Timeout = 300 * time.Millisecond
	start := time.Now()
	res := h.Run(context.Background(), testBatch(1))
	if res.Outcome != Failed || !res.TimedOut || res.ExitCode != -1 || !strings.Contains(res.Err.Error(), "timed out") {
		t.Fatalf("result = %+v", res)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Run took %s after a 300ms timeout", took)
	}
	waitGone(t, readPID(t, filepath.Join(out, "grandchild")))
}

func TestHandlerCancelKillsProcessGroup(t *testing.T) {
	h, out := newHandler(t, `sleep 100 & echo $! > "$OUT/grandchild"; sleep 100`)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		readPID(t, filepath.Join(out, "grandchild"))
		cancel()
	}()
	res := h.Run(ctx, testBatch(1))
	if res.Outcome != Failed || res.TimedOut || !strings.Contains(res.Err.Error(), "stopped") {
		t.Fatalf("result = %+v", res)
	}
	waitGone(t, readPID(t, filepath.Join(out, "grandchild")))
}

// A background process left holding stdout must not hold the shard: Run
// returns shortly after the handler itself exits.
func TestHandlerDoesNotWaitForBackgroundChildren(t *testing.T) {
	h, out := newHandler(t, `sleep 30 & echo $! > "$OUT/bg"; exit 0`)
	start := time.Now()
	res := h.Run(context.Background(), testBatch(1))
	pid := readPID(t, filepath.Join(out, "bg"))
	defer syscall.Kill(pid, syscall.SIGKILL) // the test's own leftover
	if res.Outcome != Succeeded {
		t.Fatalf("result = %+v", res)
	}
	if took := time.Since(start); took > pipeGrace+3*time.Second {
		t.Errorf("Run took %s", took)
	}
}

// A background process left holding stdin without reading it must not
// hold the shard either, even when the batch is larger than the pipe: the
// write still pending when the handler exits is ended.
func TestHandlerDoesNotWaitForUnreadStdin(t *testing.T) {
	// Through fd 3: sh gives a background command /dev/null as stdin.
	h, out := newHandler(t, `exec 3<&0; sleep 30 <&3 & echo $! > "$OUT/bg"; exit 0`)
	b := testBatch(20000) // about 3 MB of JSON Lines, above the 1 MiB pipe
	start := time.Now()
	res := h.Run(context.Background(), b)
	pid := readPID(t, filepath.Join(out, "bg"))
	defer syscall.Kill(pid, syscall.SIGKILL) // the test's own leftover
	if res.Outcome != Succeeded {
		t.Fatalf("result = %+v", res)
	}
	if took := time.Since(start); took > pipeGrace+3*time.Second {
		t.Errorf("Run took %s", took)
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"json": FormatJSON, "": FormatJSON, "raw": FormatRaw} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseFormat("xml"); err == nil {
		t.Error("ParseFormat(xml) accepted")
	}
}
