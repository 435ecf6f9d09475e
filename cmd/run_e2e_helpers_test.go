package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/internal/testenv/proctest"
	"github.com/kcltool/kcltool/leasecore"
)

// worker is a `kcltool run` process started by a test.
type worker struct {
	name string
	cmd  *exec.Cmd
	logs *lockedBuffer
	done chan struct{}
	err  error // Wait's result, once done is closed
}

// lockedBuffer keeps a process's output for the test (proctest.Output).
type lockedBuffer = proctest.Output

// startWorker runs the built kcltool with the local servers' environment
// plus env. Its log is printed if the test fails; it is killed when the
// test ends, if still running.
func startWorker(t *testing.T, name string, env []string, args ...string) *worker {
	t.Helper()
	cmd := exec.Command(kcltoolBinary(t), args...)
	cmd.Env = recordCalls(t, args, append(append(os.Environ(), emulator.Env(t)...), env...))
	return launchWorker(t, name, cmd)
}

// launchWorker starts cmd as the worker name, with its output kept as its
// log; the log is printed if the test fails, and the process is killed
// when the test ends, if still running.
func launchWorker(t *testing.T, name string, cmd *exec.Cmd) *worker {
	t.Helper()
	w := &worker{name: name, cmd: cmd, logs: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = w.logs, w.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		w.err = cmd.Wait()
		close(w.done)
	}()
	t.Cleanup(func() {
		select {
		case <-w.done:
		default:
			_ = cmd.Process.Kill()
			<-w.done
		}
		if t.Failed() {
			t.Logf("---- log of worker %s ----\n%s", name, w.logs.String())
		}
	})
	return w
}

func (w *worker) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := w.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %s to %s: %v", sig, w.name, err)
	}
}

// exitCode waits for the process and returns its exit status.
func (w *worker) exitCode(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-w.done:
	case <-time.After(timeout):
		t.Fatalf("worker %s still running after %s", w.name, timeout)
	}
	var ee *exec.ExitError
	switch {
	case w.err == nil:
		return 0
	case errors.As(w.err, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("worker %s: %v", w.name, w.err)
	return -1
}

// e2eStack is a stream and an application name on the local servers.
type e2eStack struct {
	ddb    *dynamodb.Client
	kin    *kinesis.Client
	stream string
	app    string
}

func newE2EStack(t *testing.T, shards int32) e2eStack {
	t.Helper()
	st := emulator.NewStack(t, shards, emulator.StackOptions{NoTable: true})
	return e2eStack{ddb: st.DynamoDB, kin: st.Kinesis, stream: st.Stream, app: st.Table}
}

// putRound writes one record per key in one PutRecords call: "key:round".
// One record per key per call keeps each key's records in call order.
func (s e2eStack) putRound(t *testing.T, keys []string, round int) {
	t.Helper()
	entries := make([]kintypes.PutRecordsRequestEntry, len(keys))
	for i, k := range keys {
		entries[i] = kintypes.PutRecordsRequestEntry{PartitionKey: aws.String(k), Data: fmt.Appendf(nil, "%s:%d", k, round)}
	}
	for attempt := 0; ; attempt++ {
		out, err := s.kin.PutRecords(context.Background(), &kinesis.PutRecordsInput{StreamName: aws.String(s.stream), Records: entries})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToInt32(out.FailedRecordCount) == 0 {
			return
		}
		if attempt > 5 {
			t.Fatalf("%d records keep failing", aws.ToInt32(out.FailedRecordCount))
		}
	}
}

func (s e2eStack) leases(t *testing.T) map[string]leasecore.Lease {
	t.Helper()
	res, err := leasecore.ScanTable(context.Background(), s.ddb, s.app, leasecore.ScanOptions{ConsistentRead: true})
	var nf *ddbtypes.ResourceNotFoundException
	if errors.As(err, &nf) {
		return nil // the first worker has not created the table yet
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Malformed) > 0 || len(res.NonLeases) > 0 {
		t.Fatalf("lease table holds malformed items %v or non-lease items %v", res.Malformed, res.NonLeases)
	}
	out := map[string]leasecore.Lease{}
	for _, l := range res.Leases {
		out[l.LeaseKey] = l
	}
	return out
}

// owners counts the leases each worker holds.
func (s e2eStack) owners(t *testing.T) map[string]int {
	n := map[string]int{}
	for _, l := range s.leases(t) {
		if l.LeaseOwner != "" {
			n[l.LeaseOwner]++
		}
	}
	return n
}

// reading counts the leases each worker holds of shards not yet finished.
func (s e2eStack) reading(t *testing.T) map[string]int {
	n := map[string]int{}
	for _, l := range s.leases(t) {
		if l.LeaseOwner != "" && !l.Checkpoint.IsShardEnd() {
			n[l.LeaseOwner]++
		}
	}
	return n
}

func eventuallyE2E(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func keyNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("k%03d", i)
	}
	return out
}

// runArgs are the flags every e2e worker shares: short timings so that the
// suite stays fast.
func runArgs(s e2eStack, id string, extra ...string) []string {
	return append([]string{"run", "--app", s.app, "--stream", s.stream, "--worker-id", id, "--create-table", "--kcl-version", "2",
		"--initial-position", "TRIM_HORIZON", "--failover-time", "2s", "--idle-between-reads", "200ms",
		"--parent-poll-interval", "500ms", "--shard-sync-interval", "2s", "--cleanup-interval", "2s",
		"--log-format", "json", "--log-level", "debug"}, extra...)
}
