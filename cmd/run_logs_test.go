package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// decodeLogLine decodes one JSON log line, failing on a key that appears
// twice: encoding/json would keep the last one silently, and a log
// pipeline may keep either.
func decodeLogLine(line []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object: %q", line)
	}
	out := map[string]any{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := tok.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("key %q twice in %s", key, line)
		}
		out[key] = v
	}
	return out, nil
}

// runLogHandler writes to stderr on every run; its first attempt fails.
const runLogHandler = `data=$(cat)
echo "range $KCLTOOL_FIRST_SEQUENCE $KCLTOOL_LAST_SEQUENCE attempt $KCLTOOL_ATTEMPT" >&2
if [ "$KCLTOOL_ATTEMPT" = 1 ]; then echo "downstream refused the batch" >&2; exit 3; fi
printf '%s\n' "$data" >> "$OUT"
echo "stored" >&2`

// A worker logs its handler's stderr line by line at info, with the shard
// (once) and the batch's sequence range, when the handler fails and when
// it succeeds; durations are Go duration strings.
func TestRunLogsHandlerStderr(t *testing.T) {
	s := newE2EStack(t, 1)
	out := filepath.Join(t.TempDir(), "out.txt")
	s.putRound(t, keyNames(6), 0)
	w := startWorker(t, "w", []string{"OUT=" + out}, runArgs(s, "w", "--format", "raw", "--batch-size", "100",
		"--retry-backoff", "100ms", "--exec", runLogHandler)...)
	eventuallyE2E(t, 30*time.Second, "6 records", func() bool { return len(lines(t, out)) >= 6 })
	w.signal(t, syscall.SIGTERM)
	if code := w.exitCode(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}

	var stderrLines, failed []map[string]any
	var started, stopping map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace([]byte(w.logs.String())), []byte("\n")) {
		rec, err := decodeLogLine(line)
		if err != nil {
			t.Fatal(err)
		}
		switch rec["msg"] {
		case "handler stderr":
			stderrLines = append(stderrLines, rec)
		case "handler failed":
			failed = append(failed, rec)
		case "worker started":
			started = rec
		}
		if strings.HasPrefix(fmt.Sprint(rec["msg"]), "stopping:") {
			stopping = rec
		}
	}
	if len(failed) == 0 || len(stderrLines) < 4 {
		t.Fatalf("%d failures and %d stderr lines logged, want a failure and its line, and the lines of the retry", len(failed), len(stderrLines))
	}
	var sawFailure, sawSuccess bool
	for _, rec := range stderrLines {
		if rec["level"] != "INFO" || rec["shard"] != "shardId-000000000000" || rec["worker"] != "w" {
			t.Errorf("stderr line %v: want level INFO, the shard and the worker", rec)
		}
		first, last := fmt.Sprint(rec["first_sequence"]), fmt.Sprint(rec["last_sequence"])
		text := fmt.Sprint(rec["line"])
		if strings.HasPrefix(text, "range ") {
			// The handler printed the range it was given: the log line
			// carries the same one.
			var f, l string
			var attempt int
			if _, err := fmt.Sscanf(text, "range %s %s attempt %d", &f, &l, &attempt); err != nil || f != first || l != last || fmt.Sprint(rec["attempt"]) != fmt.Sprint(attempt) {
				t.Errorf("stderr line %q logged with range %s-%s, attempt %v", text, first, last, rec["attempt"])
			}
			continue
		}
		if first == "" || last == "" || first == "<nil>" || last == "<nil>" {
			t.Errorf("stderr line %v lacks the sequence range", rec)
		}
		switch text {
		case "downstream refused the batch":
			sawFailure = true
		case "stored":
			sawSuccess = true
		}
	}
	if !sawFailure || !sawSuccess {
		t.Errorf("stderr of the failed run logged: %v, of the successful run: %v", sawFailure, sawSuccess)
	}
	f := failed[0]
	if f["shard"] != "shardId-000000000000" || fmt.Sprint(f["exit_code"]) != "3" || f["first_sequence"] == nil || f["last_sequence"] == nil {
		t.Errorf("handler failed line %v: want the shard, exit code 3 and the range", f)
	}
	if _, ok := f["stderr_tail"]; ok {
		t.Errorf("handler failed line repeats the stderr: %v", f)
	}
	if started == nil || started["failover"] != "2s" {
		t.Errorf("worker started line %v: want failover \"2s\"", started)
	}
	if stopping == nil {
		t.Fatal("no stopping line")
	}
	if g, ok := stopping["grace"].(string); !ok {
		t.Errorf("stopping line's grace %v is not a duration string", stopping["grace"])
	} else if _, err := time.ParseDuration(g); err != nil {
		t.Errorf("stopping line's grace %q: %v", g, err)
	}
}

// shortRange is a batch's range shortened as cmdutil.Shorten does (head…tail,
// whatever lengths it keeps).
var shortRange = regexp.MustCompile(`first_sequence=\d{1,10}…\d{1,10} last_sequence=\d{1,10}…\d{1,10}(\s|$)`)

// In the text log (--log-format text, a terminal's), a handler's stderr
// line and a failure's error come right after the message, and the batch's
// sequence numbers are shortened: the runner's own keys are the ones
// cmdutil's text handler knows.
func TestRunTextLogPutsHandlerWordsFirst(t *testing.T) {
	t.Parallel()
	s := newE2EStack(t, 1)
	out := filepath.Join(t.TempDir(), "out.txt")
	s.putRound(t, keyNames(2), 0)
	w := startWorker(t, "w", []string{"OUT=" + out}, runArgs(s, "w", "--format", "raw", "--batch-size", "100",
		"--retry-backoff", "100ms", "--log-format", "text", "--exec", runLogHandler)...)
	eventuallyE2E(t, 30*time.Second, "2 records", func() bool { return len(lines(t, out)) >= 2 })
	w.signal(t, syscall.SIGTERM)
	if code := w.exitCode(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	var sawLine, sawFailure bool
	for _, l := range strings.Split(w.logs.String(), "\n") {
		_, rest, _ := strings.Cut(l, " level=")
		switch {
		case strings.HasPrefix(rest, `INFO msg="handler stderr" line="downstream refused the batch" worker=w shard=shardId-000000000000 attempt=1 first_sequence=`):
			sawLine = true
			if m := shortRange.FindStringSubmatch(rest); m == nil {
				t.Errorf("sequence numbers not shortened: %s", l)
			}
		case strings.HasPrefix(rest, `WARN msg="handler failed" error=`):
			sawFailure = true
		}
	}
	if !sawLine || !sawFailure {
		t.Errorf("text log: handler's line first %v, failure's error first %v", sawLine, sawFailure)
	}
}
