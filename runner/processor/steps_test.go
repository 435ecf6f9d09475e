package processor

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/leasecore"
)

// The named steps of Handler.Run and Policy.Process, one at a time.

func TestExitStatus(t *testing.T) {
	run := func(script string) error {
		t.Helper()
		return exec.Command("sh", "-c", script).Run()
	}
	for _, tc := range []struct {
		name    string
		waitErr error
		code    int
		err     string // a part of the error; "" for none
	}{
		{"exit 0", nil, 0, ""},
		{"pipes held past the grace", exec.ErrWaitDelay, 0, ""},
		{"exit 3", run("exit 3"), 3, "handler exited with status 3"},
		{"killed", run("kill -9 $$"), -1, "handler killed by signal killed"},
		{"wait failed", errors.New("boom"), -1, "handler: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, err := exitStatus(tc.waitErr)
			if code != tc.code {
				t.Errorf("exit code %d, want %d", code, tc.code)
			}
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("error %v, want one containing %q", err, tc.err)
			}
		})
	}
}

func TestFeedStdinAndStartHandler(t *testing.T) {
	h := &Handler{Argv: ShellCommand(`cat`), Format: FormatRaw, Env: os.Environ()}
	cmd, out := h.command(testBatch(2))
	stdin, err := startHandler(cmd)
	if err != nil {
		t.Fatal(err)
	}
	feedStdin(stdin, h.Format, testBatch(2).Records)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := string(out.stdout.head); got != "record-0\nrecord-1\n" {
		t.Errorf("stdout %q", got)
	}
	if _, err := startHandler(exec.Command("/nonexistent/handler")); err == nil || !strings.HasPrefix(err.Error(), "start handler: ") {
		t.Errorf("start of a missing program: %v", err)
	}
}

func TestSettled(t *testing.T) {
	for _, tc := range []struct {
		res  Result
		want int
	}{
		{Result{Outcome: Succeeded}, 5},
		{Result{Outcome: PartiallyFailed, FailedFrom: 2}, 2},
		{Result{Outcome: PartiallyFailed, FailedFrom: 0}, 0},
		{Result{Outcome: Failed}, 0},
	} {
		if got := settled(tc.res, 5); got != tc.want {
			t.Errorf("settled(%v, 5) = %d, want %d", tc.res.Outcome, got, tc.want)
		}
	}
}

func TestDecide(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := clocktest.NewStep(now)
	old := testBatch(3).Records
	for i := range old {
		old[i].ApproximateArrivalTimestamp = now.Add(-time.Hour)
	}
	for _, tc := range []struct {
		name     string
		p        Policy
		failures int
		n        int
		want     step
		reason   string
	}{
		{"retry within the retries", Policy{MaxRetries: 2}, 2, 3, stepRetry, ""},
		{"give up past them", Policy{MaxRetries: 2}, 3, 3, stepGiveUp, "failed 3 times (max retries 2)"},
		{"unlimited retries", Policy{MaxRetries: UnlimitedRetries}, 100, 3, stepRetry, ""},
		{"bisect several", Policy{MaxRetries: 0, BisectOnError: true}, 1, 2, stepBisect, ""},
		{"one record is not bisected", Policy{MaxRetries: 0, BisectOnError: true}, 1, 1, stepGiveUp, "failed 1 times (max retries 0)"},
		{"too old", Policy{MaxRetries: UnlimitedRetries, MaxRecordAge: time.Minute}, 1, 3, stepGiveUp, "oldest record is 1h0m0s old (max record age 1m0s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.p.Clock = clock
			got, reason := tc.p.decide(tc.failures, old[:tc.n])
			if got != tc.want || reason != tc.reason {
				t.Errorf("decide = %v %q, want %v %q", got, reason, tc.want, tc.reason)
			}
		})
	}
}

// The per-batch processor finishes a shard by checkpointing SHARD_END, and
// hands batches to the policy with the checkpointer it is given.
func TestBatchProcessor(t *testing.T) {
	var cps checkpoints
	p := batchProcessor{policy: &Policy{Handler: &Handler{Argv: ShellCommand(`cat >/dev/null`), Env: os.Environ()}}}
	if _, err := p.ProcessRecords(context.Background(), nil, testBatch(2), CheckpointFunc(cps.fn)); err != nil {
		t.Fatal(err)
	}
	if err := p.ShardEnded(context.Background(), CheckpointFunc(cps.fn)); err != nil {
		t.Fatal(err)
	}
	if want := []string{"101.0", leasecore.SHARD_END + ".0"}; strings.Join(cps.got, " ") != strings.Join(want, " ") {
		t.Errorf("checkpoints %v, want %v", cps.got, want)
	}
}
