package cmd

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// lines reads a text file's lines; none while it does not exist.
func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
}

// A poison record fails its batch every time: --bisect-on-error isolates it,
// --on-failure writes it to a file, and the shard moves on past it with
// every other record handled once, in order.
func TestRunBisectsPoisonRecordIntoFailureDir(t *testing.T) {
	s := newE2EStack(t, 1)
	dir := t.TempDir()
	out, failures := filepath.Join(dir, "out.txt"), filepath.Join(dir, "failed")
	keys := keyNames(40)
	s.putRound(t, keys[:17], 0)
	s.putRound(t, []string{"POISON"}, 0)
	s.putRound(t, keys[17:], 0)
	handler := `data=$(cat); case "$data" in *POISON*) echo "cannot handle $KCLTOOL_BATCH_SIZE records" >&2; exit 3;; esac; printf '%s\n' "$data" >> "$OUT"`
	w := startWorker(t, "w", []string{"OUT=" + out}, runArgs(s, "w", "--format", "raw", "--batch-size", "100",
		"--bisect-on-error", "--max-retries", "1", "--retry-backoff", "100ms", "--on-failure", failures, "--exec", handler)...)
	eventuallyE2E(t, 30*time.Second, "40 records and a failure file", func() bool {
		files, _ := os.ReadDir(failures)
		return len(lines(t, out)) >= 40 && len(files) == 1
	})
	w.signal(t, syscall.SIGTERM)
	if code := w.exitCode(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	got := lines(t, out)
	for i, k := range keys {
		if got[i] != k+":0" {
			t.Fatalf("line %d is %q, want %q: every good record once, in order (%v)", i, got[i], k+":0", got)
		}
	}
	if len(got) != len(keys) {
		t.Fatalf("%d lines, want %d", len(got), len(keys))
	}
	files, _ := os.ReadDir(failures)
	raw, err := os.ReadFile(filepath.Join(failures, files[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		ShardID    string `json:"shardId"`
		ExitCode   int    `json:"exitCode"`
		StderrTail string `json:"stderrTail"`
		Records    []struct {
			Data           string `json:"data"`
			SequenceNumber string `json:"sequenceNumber"`
		} `json:"records"`
		LastSequence struct {
			SequenceNumber string `json:"sequenceNumber"`
		} `json:"lastSequence"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	data := ""
	if len(f.Records) == 1 {
		b, _ := base64.StdEncoding.DecodeString(f.Records[0].Data)
		data = string(b)
	}
	if len(f.Records) != 1 || data != "POISON:0" || f.ExitCode != 3 || f.ShardID != "shardId-000000000000" ||
		!strings.Contains(f.StderrTail, "cannot handle 1 records") {
		t.Fatalf("failure file holds %d records (%q), exit code %d, shard %s, stderr %q; want the poison record alone, exit 3",
			len(f.Records), data, f.ExitCode, f.ShardID, f.StderrTail)
	}
	l := s.leases(t)["shardId-000000000000"]
	if leasecore.Compare(l.Checkpoint, leasecore.SequenceNumber{SequenceNumber: f.LastSequence.SequenceNumber}) <= 0 {
		t.Fatalf("checkpoint %s is not past the poison record %s", l.Checkpoint.SequenceNumber, f.LastSequence.SequenceNumber)
	}
}

// partialHandler reports the 8th record of its first attempt as failed
// (the Lambda batchItemFailures response) after writing the seven before it;
// later attempts write everything.
const partialHandler = `tmp=$(mktemp); cat > "$tmp"
echo "# attempt $KCLTOOL_ATTEMPT" >> "$OUT"
if [ "$KCLTOOL_ATTEMPT" = 1 ] && [ "$(wc -l < "$tmp")" -ge 8 ]; then
  head -n 7 "$tmp" >> "$OUT"
  seq=$(sed -n 8p "$tmp" | sed 's/.*"sequenceNumber":"\([0-9]*\)".*/\1/')
  printf '{"batchItemFailures":[{"itemIdentifier":"%s"}]}\n' "$seq"
else
  cat "$tmp" >> "$OUT"
fi
rm -f "$tmp"`

// A batchItemFailures response checkpoints before the failed record and
// retries from it: each record is written once, the retry is attempt 2.
// The same run serves Prometheus metrics and publishes KCL's CloudWatch
// metrics to a fake CloudWatch.
func TestRunPartialFailureRetriesFromFailedRecordWithMetrics(t *testing.T) {
	s := newE2EStack(t, 1)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	cw := emulator.NewCloudWatch(t)
	port := freePort(t)
	s.putRound(t, keyNames(20), 0)
	w := startWorker(t, "w", []string{"OUT=" + out, "AWS_ENDPOINT_URL_CLOUDWATCH=" + cw.URL},
		runArgs(s, "w", "--batch-size", "100", "--retry-backoff", "100ms", "--exec", partialHandler,
			"--metrics-addr", fmt.Sprintf("127.0.0.1:%d", port), "--cloudwatch-metrics", "--cloudwatch-interval", "500ms")...)
	eventuallyE2E(t, 30*time.Second, "20 records", func() bool { return len(records(t, out)) >= 20 })

	wants := []string{
		`kcltool_shard_handler_failures_total{app="` + s.app + `",stream="` + s.stream + `",shard="shardId-000000000000"} 1`,
		`kcltool_shard_handler_runs_total{app="` + s.app + `",stream="` + s.stream + `",shard="shardId-000000000000"} 2`,
		`kcltool_shard_records_total{app="` + s.app + `",stream="` + s.stream + `",shard="shardId-000000000000"} 20`,
		`kcltool_worker_leases_held{app="` + s.app + `",worker="w"} 1`,
	}
	// The handler writes its last record before it exits and kcltool
	// counts the run: scrape until the counts settle (or 10 s pass).
	var metrics string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		metrics = scrape(t, port)
		if !slices.ContainsFunc(wants, func(w string) bool { return !strings.Contains(metrics, w) }) || time.Now().After(deadline) {
			break
		}
	}
	for _, want := range wants {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	w.signal(t, syscall.SIGTERM)
	if code := w.exitCode(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}

	all := lines(t, out)
	if all[0] != "# attempt 1" || len(all) != 1+7+1+13 || all[8] != "# attempt 2" {
		t.Fatalf("handler output %v: want attempt 1 with 7 records, then attempt 2 with the other 13", all)
	}
	got := records(t, out)
	for i, k := range keyNames(20) {
		if got[i] != k+":0" {
			t.Fatalf("record %d is %q, want %q", i, got[i], k+":0")
		}
	}
	seen := map[string]bool{}
	for _, d := range cw.Data() {
		if d.Namespace == s.app {
			seen[d.Dimensions["Operation"]+"/"+d.MetricName] = true
		}
	}
	for _, want := range []string{"ProcessTask/MillisBehindLatest", "ProcessTask/RecordsProcessed", "RenewAllLeases/CurrentLeases"} {
		if !seen[want] {
			t.Errorf("CloudWatch did not get %s in namespace %s: %v", want, s.app, seen)
		}
	}
}

// records decodes the JSON Lines a handler wrote, skipping # lines.
func records(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		var r struct {
			Data string `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		b, _ := base64.StdEncoding.DecodeString(r.Data)
		out = append(out, string(b))
	}
	return out
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func scrape(t *testing.T, port int) string {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q", ct)
	}
	return string(b)
}

// A handler that runs past --handler-timeout is killed with its whole
// process group and the batch is retried.
func TestRunHandlerTimeoutKillsProcessGroupAndRetries(t *testing.T) {
	s := newE2EStack(t, 1)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	s.putRound(t, keyNames(5), 0)
	handler := `if [ "$KCLTOOL_ATTEMPT" = 1 ]; then sleep 60 & echo $! > "$OUT.pid"; wait; fi; cat >> "$OUT"`
	w := startWorker(t, "w", []string{"OUT=" + out}, runArgs(s, "w", "--handler-timeout", "1s", "--retry-backoff", "100ms", "--exec", handler)...)
	eventuallyE2E(t, 30*time.Second, "5 records on the second attempt", func() bool { return len(records(t, out)) >= 5 })
	pid := 0
	if b, err := os.ReadFile(out + ".pid"); err == nil {
		fmt.Sscan(string(b), &pid)
	}
	if pid == 0 || processAlive(pid) {
		t.Fatalf("the first attempt's background sleep (pid %d) survived the timeout", pid)
	}
	w.signal(t, syscall.SIGTERM)
	if code := w.exitCode(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(w.logs.String(), "handler timed out after 1s") {
		t.Error("the log does not say the handler timed out")
	}
	if got := records(t, out); len(got) != 5 {
		t.Fatalf("%d records written, want 5 (the timed-out attempt wrote none)", len(got))
	}
}

// processAlive reports whether pid runs. A killed process whose parent died
// too is a zombie until init reaps it, which inside a container may be
// never: that counts as dead.
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}
