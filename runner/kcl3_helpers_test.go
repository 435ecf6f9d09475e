package runner

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/runner/processor"
)

// kcl3Stack is a stream and a KCL 3.x application's tables (kcl3fleet)
// with a lease per shard, created as the Java shard sync does.
type kcl3Stack struct {
	stack
	fleet  *kcl3fleet.Fleet
	shards []string
}

func newKCL3Stack(t *testing.T, shards int32, l kcl3fleet.Layout) kcl3Stack {
	t.Helper()
	st := emulator.NewStack(t, shards, emulator.StackOptions{NoTable: true})
	l.LeaseTable = st.Table
	f := kcl3fleet.Setup(t, st.DynamoDB, l)
	ids := make([]string, shards)
	for i := range ids {
		ids[i] = "shardId-" + strings.Repeat("0", 12-len(strconv.Itoa(i))) + strconv.Itoa(i)
	}
	if err := f.CreateLeases(context.Background(), ids...); err != nil {
		t.Fatal(err)
	}
	return kcl3Stack{stack: stack{ddb: st.DynamoDB, kin: st.Kinesis, stream: st.Stream, table: st.Table}, fleet: f, shards: ids}
}

// kcl3Timings are test timings shared by the leader, the Java-like
// workers and kcltool: failover 1.5 s (assignment every 3 s, discovery
// every 1.5 s), metrics every second.
const (
	kcl3Failover      = 1500 * time.Millisecond
	kcl3MetricsPeriod = time.Second
)

func (s kcl3Stack) leader(t *testing.T) *kcl3fleet.Leader {
	t.Helper()
	l := s.fleet.NewLeader(kcl3fleet.LeaderConfig{
		WorkerID: "java-leader", AssignmentInterval: 500 * time.Millisecond, FailoverTime: kcl3Failover,
		MetricsReporterFreq: kcl3MetricsPeriod, HeartbeatPeriod: 500 * time.Millisecond, LockLeaseDuration: 3 * time.Second,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = l.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return l
}

func (s kcl3Stack) javaWorker(t *testing.T, id string, handoffDelay time.Duration) *kcl3fleet.OtherWorker {
	t.Helper()
	w := s.fleet.NewWorker(kcl3fleet.WorkerConfig{
		ID: id, MetricsPeriod: kcl3MetricsPeriod, DiscoveryInterval: 300 * time.Millisecond,
		RenewInterval: 400 * time.Millisecond, HandoffDelay: handoffDelay,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

// kcl3Config is a kcltool worker of the application with the test timings.
func (s kcl3Stack) kcl3Config(t *testing.T, id, out string, argv ...string) Config {
	t.Helper()
	cfg := s.config(t, id, out, argv...)
	cfg.CreateTable = false
	cfg.Lease.FailoverTime = kcl3Failover
	cfg.KCL3.WorkerMetricsInterval = kcl3MetricsPeriod
	// The issue 25 tests are of a follower under the Java port's leader:
	// no contention for the lock (kcl3_leader_test.go tests that).
	cfg.KCL3.NoLeader = true
	return cfg
}

func (s kcl3Stack) lease(t *testing.T, key string) leasecore.Lease {
	t.Helper()
	l, err := s.fleet.Lease(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func (s kcl3Stack) owners(t *testing.T) map[string]string {
	t.Helper()
	ls, err := s.fleet.Leases(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range ls {
		out[l.LeaseKey] = l.LeaseOwner
	}
	return out
}

// timedHandler is a --exec handler that appends its records to $OUT and
// logs each batch's start and end (unix nanoseconds, shard) to $TIMES,
// sleeping $SLEEP seconds in between: a batch in flight to hand over.
func timedHandler(t *testing.T, cfg *Config, sleep string) string {
	t.Helper()
	times := filepath.Join(t.TempDir(), "times")
	cfg.Handler = &processor.Handler{
		Argv: processor.ShellCommand(`echo "start $(date +%s%N) $KCLTOOL_SHARD_ID $$" >> "$TIMES"; cat >> "$OUT"; sleep "$SLEEP"; echo "end $(date +%s%N) $KCLTOOL_SHARD_ID $$" >> "$TIMES"`),
		Env:  append(cfg.Handler.Env, "TIMES="+times, "SLEEP="+sleep),
	}
	return times
}

// batchSpan is one batch of the timed handler.
type batchSpan struct {
	shard      string
	start, end time.Time // end zero: never finished (killed)
	pid        int
}

func readSpans(t *testing.T, path string) []batchSpan {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]int{}
	var out []batchSpan
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 {
			continue
		}
		ns, _ := strconv.ParseInt(f[1], 10, 64)
		pid, _ := strconv.Atoi(f[3])
		at := time.Unix(0, ns)
		switch f[0] {
		case "start":
			open[f[3]] = len(out)
			out = append(out, batchSpan{shard: f[2], start: at, pid: pid})
		case "end":
			if i, ok := open[f[3]]; ok {
				out[i].end = at
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start.Before(out[j].start) })
	return out
}

// logTimes records when log messages containing a text were written.
type logTimes struct {
	slog.Handler
	mu   sync.Mutex
	seen map[string][]time.Time
}

func (h *logTimes) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	h.seen[r.Message] = append(h.seen[r.Message], time.Now())
	h.mu.Unlock()
	return h.Handler.Handle(ctx, r)
}

func (h *logTimes) WithAttrs(as []slog.Attr) slog.Handler {
	return &logTimesChild{Handler: h.Handler.WithAttrs(as), root: h}
}

func (h *logTimes) WithGroup(name string) slog.Handler {
	return &logTimesChild{Handler: h.Handler.WithGroup(name), root: h}
}

type logTimesChild struct {
	slog.Handler
	root *logTimes
}

func (h *logTimesChild) Handle(ctx context.Context, r slog.Record) error {
	h.root.mu.Lock()
	h.root.seen[r.Message] = append(h.root.seen[r.Message], time.Now())
	h.root.mu.Unlock()
	return h.Handler.Handle(ctx, r)
}

func (h *logTimesChild) WithAttrs(as []slog.Attr) slog.Handler {
	return &logTimesChild{Handler: h.Handler.WithAttrs(as), root: h.root}
}

func (h *logTimesChild) WithGroup(name string) slog.Handler {
	return &logTimesChild{Handler: h.Handler.WithGroup(name), root: h.root}
}

// timedLogger logs into the test's output and the buffer, and records
// when each message was written.
func timedLogger(t *testing.T, id string) (*slog.Logger, *logTimes, *logBuffer) {
	l, buf := recordedLogger(t, id)
	h := &logTimes{Handler: l.Handler(), seen: map[string][]time.Time{}}
	return slog.New(h), h, buf
}

// first is when a message containing text was first logged (zero: never).
func (h *logTimes) first(text string) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	var at time.Time
	for msg, ts := range h.seen {
		if strings.Contains(msg, text) && len(ts) > 0 && (at.IsZero() || ts[0].Before(at)) {
			at = ts[0]
		}
	}
	return at
}

// setCheckpoint writes a lease's checkpoint as its owner's record
// processor left it, without touching the counter (the Java-like owner
// keeps renewing).
func setCheckpoint(t *testing.T, s kcl3Stack, key, seq string) {
	t.Helper()
	_, err := s.ddb.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       map[string]ddbtypes.AttributeValue{"leaseKey": &ddbtypes.AttributeValueMemberS{Value: key}},
		UpdateExpression:          aws.String("SET checkpoint = :cp, checkpointSubSequenceNumber = :zero"),
		ConditionExpression:       aws.String("attribute_exists(leaseKey)"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":cp": &ddbtypes.AttributeValueMemberS{Value: seq}, ":zero": &ddbtypes.AttributeValueMemberN{Value: "0"}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// startWith is start with the worker's own DynamoDB client.
func startWith(t *testing.T, s stack, cfg Config, ddb DynamoDBAPI) *running {
	t.Helper()
	w, err := NewWorker(cfg, ddb, s.kin)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{w: w, done: make(chan error, 1), kill: cancel}
	go func() { r.done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// watchedDDB calls before at every UpdateItem, before it is sent.
type watchedDDB struct {
	*dynamodb.Client
	before func(*dynamodb.UpdateItemInput)
}

func (w watchedDDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	w.before(in)
	return w.Client.UpdateItem(ctx, in, opts...)
}

// heldRuns lists the leases the worker runs, sorted.
func (w *Worker) heldRuns() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for k := range w.runs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (w *Worker) runOf(key string) *shardRun {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.runs[key]
}

// assignment is the coordinator's protocol, nil-safe and race-free for
// tests that poll a running worker.
func (w *Worker) assignment() (leasecore.Assignment, bool) {
	w.mu.Lock()
	c := w.coord
	w.mu.Unlock()
	if c == nil {
		return 0, false
	}
	return c.Assignment(), true
}

// assignmentIs reports whether the worker runs with protocol a.
func (w *Worker) assignmentIs(a leasecore.Assignment) bool {
	got, ok := w.assignment()
	return ok && got == a
}

// coordAssignment is assignment (AssignByTaking before the worker has
// started).
func (w *Worker) coordAssignment() leasecore.Assignment {
	a, _ := w.assignment()
	return a
}
