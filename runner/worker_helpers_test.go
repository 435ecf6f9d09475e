package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/kinesisrec"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
	"github.com/kcltool/kcltool/runner/processor"
)

// stack is a stream and a lease table on the local servers.
type stack struct {
	ddb    *dynamodb.Client
	kin    *kinesis.Client
	stream string
	table  string
}

func newStack(t *testing.T, shards int32) stack {
	t.Helper()
	// The worker creates its lease table, as the KCL does.
	st := emulator.NewStack(t, shards, emulator.StackOptions{NoTable: true})
	return stack{ddb: st.DynamoDB, kin: st.Kinesis, stream: st.Stream, table: st.Table}
}

// put writes one record per key, in one PutRecords call, and returns the
// sequence numbers by key.
func (s stack) put(t *testing.T, data func(key string) string, keys ...string) map[string]string {
	t.Helper()
	entries := make([]kintypes.PutRecordsRequestEntry, len(keys))
	for i, k := range keys {
		entries[i] = kintypes.PutRecordsRequestEntry{PartitionKey: aws.String(k), Data: []byte(data(k))}
	}
	out, err := s.kin.PutRecords(context.Background(), &kinesis.PutRecordsInput{StreamName: aws.String(s.stream), Records: entries})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToInt32(out.FailedRecordCount) != 0 {
		t.Fatalf("%d records failed", aws.ToInt32(out.FailedRecordCount))
	}
	seqs := map[string]string{}
	for i, r := range out.Records {
		seqs[keys[i]] = aws.ToString(r.SequenceNumber)
	}
	return seqs
}

// config is a worker with test timings: failover in seconds, reads paced
// at the per-shard limit, a handler that appends its stdin to out.
func (s stack) config(t *testing.T, id, out string, argv ...string) Config {
	t.Helper()
	if len(argv) == 0 {
		argv = processor.ShellCommand(`cat >> "$OUT"`)
	}
	cfg := DefaultConfig()
	cfg.App, cfg.Stream, cfg.WorkerID, cfg.CreateTable = s.table, reshard.Stream{Name: s.stream}, id, true
	// These workers take their leases (KCL 2.x): a table created for 3.x
	// waits for a leader.
	cfg.KCLVersion = 2
	cfg.Lease = leasecore.Config{FailoverTime: 1500 * time.Millisecond, TakerInterval: 300 * time.Millisecond, MaxLeasesToStealAtOneTime: 1}
	cfg.Initial, cfg.IdleBetweenReads = reshard.TrimHorizon(), 100*time.Millisecond
	cfg.BatchSize, cfg.Handler = 50, &processor.Handler{Argv: argv, Env: append(os.Environ(), "OUT="+out)}
	cfg.Backoff = processor.Backoff{Initial: 50 * time.Millisecond, Max: 200 * time.Millisecond}
	cfg.ShutdownGrace = 5 * time.Second
	cfg.ShardSyncInterval, cfg.CleanupInterval, cfg.ParentPollInterval = time.Second, time.Second, 200*time.Millisecond
	cfg.Log = testLogger(t, id)
	return cfg
}

// testLogger writes the worker's log into the test's output.
func testLogger(t *testing.T, id string) *slog.Logger {
	return slog.New(slog.NewTextHandler(tlogWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test_worker", id)
}

type tlogWriter struct{ t *testing.T }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// running is a worker started by a test.
type running struct {
	w    *Worker
	done chan error
	kill context.CancelFunc
}

func start(t *testing.T, s stack, cfg Config) *running {
	t.Helper()
	return startWith(t, s, cfg, s.ddb)
}

// stop stops the worker gracefully and returns Run's result.
func (r *running) stop(t *testing.T) error {
	t.Helper()
	r.w.Shutdown()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("worker did not stop within 30s")
		return nil
	}
}

// handled is a record as the handler wrote it (JSON Lines).
type handled struct {
	Data           string `json:"data"`
	PartitionKey   string `json:"partitionKey"`
	SequenceNumber string `json:"sequenceNumber"`
	SubSequence    int64  `json:"subSequenceNumber"`
	ShardID        string `json:"shardId"`
}

func (h handled) text() string {
	b, _ := base64.StdEncoding.DecodeString(h.Data)
	return string(b)
}

func readHandled(t *testing.T, path string) []handled {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []handled
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var h handled
		if err := json.Unmarshal(line, &h); err != nil {
			t.Fatalf("handler output line %q: %v", line, err)
		}
		out = append(out, h)
	}
	return out
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func leases(t *testing.T, s stack) map[string]leasecore.Lease {
	t.Helper()
	res, err := leasecore.ScanTable(context.Background(), s.ddb, s.table, leasecore.ScanOptions{ConsistentRead: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Malformed) > 0 || len(res.NonLeases) > 0 {
		t.Fatalf("lease table holds malformed items %v or non-lease items %v", res.Malformed, res.NonLeases)
	}
	m := map[string]leasecore.Lease{}
	for _, l := range res.Leases {
		m[l.LeaseKey] = l
	}
	return m
}

func keys(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return out
}

// outFile is a handler output file in the test's directory.
func outFile(t *testing.T) string { return filepath.Join(t.TempDir(), "out.jsonl") }

// lastPerShard is the sequence number of each shard's last handled record.
func lastPerShard(got []handled) map[string]string {
	last := map[string]string{}
	for _, h := range got {
		last[h.ShardID] = h.SequenceNumber
	}
	return last
}

// eventuallyCheckpointedAt waits until every shard of last has its lease's
// checkpoint at the sequence number last gives it.
func eventuallyCheckpointedAt(t *testing.T, s stack, what string, last map[string]string) {
	t.Helper()
	eventually(t, 10*time.Second, what, func() bool {
		ls := leases(t, s)
		for shard, seq := range last {
			if ls[shard].Checkpoint.SequenceNumber != seq {
				return false
			}
		}
		return true
	})
}

// testBatch is n records on one shard for the tests that run a
// processor.Handler beside runner's own parts (the lease deadline's
// cause, the handler's environment); processor's tests have their own.
func testBatch(n int) processor.Batch {
	b := processor.Batch{App: "orders", Stream: "orders-stream", ShardID: "shardId-000000000003", WorkerID: "worker-1", Attempt: 1}
	for i := range n {
		b.Records = append(b.Records, kinesisrec.Record{Data: fmt.Appendf(nil, "record-%d", i), PartitionKey: "pk", SequenceNumber: strconv.Itoa(100 + i), ShardID: b.ShardID})
	}
	return b
}
