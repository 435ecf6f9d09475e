package processor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/leasecore"
)

// checkpoints collects the positions a Policy reports.
type checkpoints struct {
	mu  sync.Mutex
	got []string
	err error
}

func (c *checkpoints) fn(_ context.Context, at leasecore.SequenceNumber) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, at.SequenceNumber+"."+strconv.FormatInt(at.SubSequenceNumber, 10))
	return c.err
}

func newPolicy(h BatchHandler) (*Policy, *clocktest.Step, *bytes.Buffer) {
	clk := clocktest.NewStep(arrival.Add(10 * time.Millisecond))
	logs := &bytes.Buffer{}
	return &Policy{
		Handler: h, Clock: clk, MaxRetries: UnlimitedRetries,
		Backoff: Backoff{Initial: time.Second, Max: 3 * time.Second},
		Rand:    func() float64 { return 0.5 },
		Log:     slog.New(slog.NewJSONHandler(logs, nil)),
	}, clk, logs
}

// runsLog is the KCLTOOL_* view of each run a test handler appends to
// $OUT/runs: "attempt first-last size".
const logRun = `echo "$KCLTOOL_ATTEMPT $KCLTOOL_FIRST_SEQUENCE-$KCLTOOL_LAST_SEQUENCE $KCLTOOL_BATCH_SIZE" >> "$OUT/runs"`

// runNumber makes $n the 1-based number of this run.
const runNumber = `n=$(cat "$OUT/n" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$OUT/n"`

func lines(t *testing.T, path string) []string {
	t.Helper()
	return strings.Split(strings.TrimSuffix(readFile(t, path), "\n"), "\n")
}

func TestPolicySuccess(t *testing.T) {
	h, out := newHandler(t, logRun+`; cat > /dev/null`)
	p, clock, _ := newPolicy(h)
	var cps checkpoints
	st, err := p.Process(context.Background(), nil, testBatch(5), cps.fn)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cps.got, []string{"104.0"}) || st.Runs != 1 || st.Failures != 0 || len(clock.Sleeps()) != 0 {
		t.Errorf("checkpoints %v, stats %+v, sleeps %v", cps.got, st, clock.Sleeps())
	}
	if got := lines(t, filepath.Join(out, "runs")); !reflect.DeepEqual(got, []string{"1 100-104 5"}) {
		t.Errorf("runs %q", got)
	}
}

func TestPolicyPartialFailureRetriesFromFailedRecord(t *testing.T) {
	h, out := newHandler(t, runNumber+`; `+logRun+`; cat > /dev/null
		if [ $n = 1 ]; then echo "working"; echo '{"batchItemFailures":[{"itemIdentifier":"104"},{"itemIdentifier":"103"}]}'; fi`)
	p, clock, logs := newPolicy(h)
	var cps checkpoints
	st, err := p.Process(context.Background(), nil, testBatch(6), cps.fn)
	if err != nil {
		t.Fatal(err)
	}
	// Checkpoint just before the first failed record, then the rest.
	if !reflect.DeepEqual(cps.got, []string{"102.0", "105.0"}) {
		t.Errorf("checkpoints %v", cps.got)
	}
	if got := lines(t, filepath.Join(out, "runs")); !reflect.DeepEqual(got, []string{"1 100-105 6", "2 103-105 3"}) {
		t.Errorf("runs %q", got)
	}
	if st.Runs != 2 || st.Failures != 1 || len(clock.Sleeps()) != 1 {
		t.Errorf("stats %+v, sleeps %v", st, clock.Sleeps())
	}
	// Stdout other than the response goes to the logs.
	if !strings.Contains(logs.String(), `"msg":"handler output"`) || !strings.Contains(logs.String(), `"output":"working"`) {
		t.Errorf("logs lack the handler output:\n%s", logs)
	}
}

func TestPolicyRetriesWithBackoff(t *testing.T) {
	h, out := newHandler(t, runNumber+`; `+logRun+`; cat > /dev/null; [ $n -ge 5 ] || { echo "downstream down" >&2; exit 2; }`)
	p, clock, logs := newPolicy(h)
	var cps checkpoints
	st, err := p.Process(context.Background(), nil, testBatch(3), cps.fn)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cps.got, []string{"102.0"}) || st.Runs != 5 || st.Failures != 4 {
		t.Errorf("checkpoints %v, stats %+v", cps.got, st)
	}
	// 1s, 2s, then capped at 3s; with equal jitter at 0.5 each is 3/4 of that.
	want := []time.Duration{750 * time.Millisecond, 1500 * time.Millisecond, 2250 * time.Millisecond, 2250 * time.Millisecond}
	if got := clock.Sleeps(); !reflect.DeepEqual(got, want) {
		t.Errorf("sleeps %v, want %v", got, want)
	}
	if got := lines(t, filepath.Join(out, "runs")); !reflect.DeepEqual(got, []string{"1 100-102 3", "2 100-102 3", "3 100-102 3", "4 100-102 3", "5 100-102 3"}) {
		t.Errorf("runs %q", got)
	}
	// Each failed run logs its stderr line, then the failure.
	if n := strings.Count(logs.String(), `"msg":"handler stderr","attempt":1,"first_sequence":"100","last_sequence":"102","line":"downstream down"}`); n != 1 {
		t.Errorf("attempt 1's stderr line logged %d times, want once:\n%s", n, logs)
	}
	if strings.Count(logs.String(), `"line":"downstream down"`) != 4 || !strings.Contains(logs.String(), `"exit_code":2`) {
		t.Errorf("failure logs lack the exit code or stderr:\n%s", logs)
	}
	if strings.Contains(logs.String(), "stderr_tail") {
		t.Errorf("the failure line repeats the stderr already logged line by line:\n%s", logs)
	}
}

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Initial: 100 * time.Millisecond, Max: time.Second}
	for failures, want := range map[int][2]time.Duration{
		1:  {50 * time.Millisecond, 100 * time.Millisecond},
		2:  {100 * time.Millisecond, 200 * time.Millisecond},
		4:  {400 * time.Millisecond, 800 * time.Millisecond},
		5:  {500 * time.Millisecond, time.Second},
		60: {500 * time.Millisecond, time.Second},
	} {
		lo, hi := b.Delay(failures, func() float64 { return 0 }), b.Delay(failures, func() float64 { return 0.999999999 })
		if lo != want[0] || hi > want[1] || hi < want[1]-time.Millisecond {
			t.Errorf("failure %d: delays %s..%s, want %s..%s", failures, lo, hi, want[0], want[1])
		}
	}
	if d := (Backoff{}).Delay(100, func() float64 { return 1 }); d != 30*time.Second {
		t.Errorf("default cap = %s", d)
	}
}

func TestPolicyTimeoutIsRetried(t *testing.T) {
	h, out := newHandler(t, runNumber+`; cat > /dev/null
		if [ $n = 1 ]; then sleep 100 & echo $! > "$OUT/grandchild"; sleep 100; fi`)
	h.Timeout = 300 * time.Millisecond
	p, _, logs := newPolicy(h)
	var cps checkpoints
	st, err := p.Process(context.Background(), nil, testBatch(2), cps.fn)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cps.got, []string{"101.0"}) || st.Runs != 2 || st.Failures != 1 {
		t.Errorf("checkpoints %v, stats %+v", cps.got, st)
	}
	if !strings.Contains(logs.String(), `"timed_out":true`) {
		t.Errorf("logs do not say it timed out:\n%s", logs)
	}
	waitGone(t, readPID(t, filepath.Join(out, "grandchild")))
}

func TestPolicyBisectIsolatesPoisonRecord(t *testing.T) {
	// The handler fails whenever record-6 (sequence number 106) is in its
	// batch, and otherwise notes the records it handled.
	h, out := newHandler(t, `in=$(cat); echo "$KCLTOOL_FIRST_SEQUENCE-$KCLTOOL_LAST_SEQUENCE" >> "$OUT/runs"
		case "$in" in *'"data":"cmVjb3JkLTY="'*) echo "poison in batch" >&2; exit 1;; esac
		printf '%s\n' "$in" | sed 's/.*"sequenceNumber":"\([0-9]*\)".*/\1/' >> "$OUT/handled"`)
	p, clock, logs := newPolicy(h)
	p.BisectOnError, p.MaxRetries = true, 1
	p.OnFailureDir = filepath.Join(t.TempDir(), "failed") // created on demand
	var cps checkpoints
	b := testBatch(10)
	st, err := p.Process(context.Background(), nil, b, cps.fn)
	if err != nil {
		t.Fatal(err)
	}
	wantRuns := []string{"100-109", "100-104", "105-109", "105-106", "105-105", "106-106", "106-106", "107-109"}
	if got := lines(t, filepath.Join(out, "runs")); !reflect.DeepEqual(got, wantRuns) {
		t.Errorf("runs %q\nwant %q", got, wantRuns)
	}
	if want := []string{"104.0", "105.0", "106.0", "109.0"}; !reflect.DeepEqual(cps.got, want) {
		t.Errorf("checkpoints %v, want %v", cps.got, want)
	}
	// Every other record succeeded exactly once.
	if got, want := lines(t, filepath.Join(out, "handled")), []string{"100", "101", "102", "103", "104", "105", "107", "108", "109"}; !reflect.DeepEqual(got, want) {
		t.Errorf("handled %q", got)
	}
	if st.Runs != 8 || st.Failures != 5 || st.Bisections != 3 || st.Skipped != 1 || len(clock.Sleeps()) != 1 {
		t.Errorf("stats %+v, sleeps %v", st, clock.Sleeps())
	}

	files, _ := filepath.Glob(filepath.Join(p.OnFailureDir, "*"))
	if len(files) != 1 {
		t.Fatalf("failure dir holds %v", files)
	}
	if want := "shardId-000000000003_106.0_106.0.json"; filepath.Base(files[0]) != want {
		t.Errorf("failure file %s, want %s", filepath.Base(files[0]), want)
	}
	var f struct {
		App, Stream, ShardID, WorkerID, Reason, Error, StderrTail string
		ExitCode, Attempts                                        int
		TimedOut                                                  bool
		FirstSequence, LastSequence                               position
		FailedAt                                                  time.Time
		Records                                                   []map[string]any
	}
	if err := json.Unmarshal([]byte(readFile(t, files[0])), &f); err != nil {
		t.Fatal(err)
	}
	poison := toRecordJSON(b.Records[6])
	if len(f.Records) != 1 || f.Records[0]["sequenceNumber"] != "106" || f.Records[0]["data"] != "cmVjb3JkLTY=" ||
		f.Records[0]["partitionKey"] != poison.PartitionKey || f.Records[0]["approximateArrivalTimestamp"] != poison.ApproximateArrivalTimestamp {
		t.Errorf("failure file records %v", f.Records)
	}
	if f.ShardID != b.ShardID || f.App != "orders" || f.Stream != "orders-stream" || f.WorkerID != "worker-1" ||
		f.FirstSequence != (position{"106", 0}) || f.LastSequence != (position{"106", 0}) ||
		f.ExitCode != 1 || f.TimedOut || f.StderrTail != "poison in batch\n" || !strings.Contains(f.Error, "status 1") ||
		!strings.Contains(f.Reason, "max retries 1") || f.Attempts != 5 || f.FailedAt.IsZero() {
		t.Errorf("failure file = %+v", f)
	}
	if !strings.Contains(logs.String(), "gave up on records") || !strings.Contains(logs.String(), files[0]) {
		t.Errorf("logs do not name the failure file:\n%s", logs)
	}
	if left, _ := filepath.Glob(filepath.Join(p.OnFailureDir, ".*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// Without --on-failure there is nowhere to put records, so the shard keeps
// retrying them, and the logs say why.
func TestPolicyWithoutFailureDirKeepsRetrying(t *testing.T) {
	h, _ := newHandler(t, `cat > /dev/null; exit 1`)
	p, clock, logs := newPolicy(h)
	p.MaxRetries = 0
	stop := make(chan struct{})
	clock.OnSleep = func(n int) {
		if n == 6 {
			close(stop)
		}
	}
	var cps checkpoints
	st, err := p.Process(context.Background(), stop, testBatch(3), cps.fn)
	if !errors.Is(err, ErrStopped) {
		t.Fatalf("err = %v", err)
	}
	if len(cps.got) != 0 || st.Runs != 6 || st.Skipped != 0 {
		t.Errorf("checkpoints %v, stats %+v", cps.got, st)
	}
	for _, d := range clock.Sleeps() {
		if d > p.Backoff.Max {
			t.Errorf("slept %s, over the %s cap", d, p.Backoff.Max)
		}
	}
	if n := strings.Count(logs.String(), "cannot skip failing records without --on-failure"); n != 6 {
		t.Errorf("the reason was logged %d times, want once per failure:\n%s", n, logs)
	}
}

func TestPolicyMaxRecordAge(t *testing.T) {
	h, _ := newHandler(t, `cat > /dev/null; exit 1`)
	p, clock, _ := newPolicy(h)
	p.MaxRecordAge = 5 * time.Second
	p.Backoff = Backoff{Initial: 2 * time.Second, Max: 2 * time.Second} // 1.5s with jitter at 0.5
	p.OnFailureDir = t.TempDir()
	var cps checkpoints
	st, err := p.Process(context.Background(), nil, testBatch(3), cps.fn)
	if err != nil {
		t.Fatal(err)
	}
	// Runs at +0, +1.5s, +3s, +4.5s (the oldest record is then 4.51s old)
	// and +6s, after which it is too old.
	if st.Runs != 5 || st.Skipped != 3 || !reflect.DeepEqual(cps.got, []string{"102.0"}) || len(clock.Sleeps()) != 4 {
		t.Errorf("stats %+v, checkpoints %v, sleeps %v", st, cps.got, clock.Sleeps())
	}
	files, _ := filepath.Glob(filepath.Join(p.OnFailureDir, "*.json"))
	if len(files) != 1 || !strings.Contains(readFile(t, files[0]), "max record age 5s") {
		t.Errorf("failure files %v", files)
	}
}

// A graceful stop lets the running handler finish and checkpoints what it
// did, but starts nothing new.
func TestPolicyGracefulStop(t *testing.T) {
	h, out := newHandler(t, `cat > /dev/null; touch "$OUT/started"; sleep 0.3; echo '{"batchItemFailures":[{"itemIdentifier":"102"}]}'`)
	p, _, _ := newPolicy(h)
	stop := make(chan struct{})
	go func() {
		for {
			if _, err := os.Stat(filepath.Join(out, "started")); err == nil {
				close(stop)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	var cps checkpoints
	st, err := p.Process(context.Background(), stop, testBatch(4), cps.fn)
	if !errors.Is(err, ErrStopped) || !reflect.DeepEqual(cps.got, []string{"101.0"}) || st.Runs != 1 {
		t.Errorf("err %v, checkpoints %v, stats %+v", err, cps.got, st)
	}
}

// Cancelling the context (a lost lease) kills the handler and checkpoints
// nothing, not even what the handler reported before it was killed.
func TestPolicyCancelKillsWithoutCheckpoint(t *testing.T) {
	h, out := newHandler(t, `cat > /dev/null; touch "$OUT/started"; sleep 100`)
	p, _, _ := newPolicy(h)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			if _, err := os.Stat(filepath.Join(out, "started")); err == nil {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	var cps checkpoints
	start := time.Now()
	_, err := p.Process(ctx, nil, testBatch(2), cps.fn)
	if !errors.Is(err, context.Canceled) || len(cps.got) != 0 || time.Since(start) > 10*time.Second {
		t.Errorf("err %v, checkpoints %v after %s", err, cps.got, time.Since(start))
	}
}

func TestPolicyStopsOnCheckpointError(t *testing.T) {
	h, _ := newHandler(t, `cat > /dev/null`)
	p, _, _ := newPolicy(h)
	lost := errors.New("lease lost")
	cps := checkpoints{err: lost}
	b := testBatch(4)
	p.BisectOnError = true
	if _, err := p.Process(context.Background(), nil, b, cps.fn); !errors.Is(err, lost) {
		t.Errorf("err = %v", err)
	}
}
