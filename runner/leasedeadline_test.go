package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// A handler stopped at the lease deadline gets SIGTERM, and SIGKILL only
// when it is still there after the grace; any other cancellation (a lost
// lease, a hard stop) kills it at once, as before.
func TestHandlerStopAtLeaseDeadlineIsTermThenKill(t *testing.T) {
	const grace = 300 * time.Millisecond
	for _, c := range []struct {
		name  string
		cause error
		term  bool
	}{
		{"lease deadline", &leaseDeadlineError{grace: grace}, true},
		{"lease lost", errLeaseGone, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			marks := filepath.Join(t.TempDir(), "marks")
			// The trap keeps the shell going after SIGTERM: only SIGKILL ends it.
			h := &Handler{
				Argv: ShellCommand(`trap 'echo TERM >> "$MARKS"' TERM; echo started >> "$MARKS"; while :; do sleep 0.05; done`),
				Env:  append(os.Environ(), "MARKS="+marks),
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			cancelled := make(chan time.Time, 1)
			go func() {
				for {
					if b, _ := os.ReadFile(marks); strings.Contains(string(b), "started") {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
				cancelled <- time.Now()
				cancel(c.cause)
			}()
			res := h.Run(ctx, testBatch(1))
			took := time.Since(<-cancelled)
			b, _ := os.ReadFile(marks)
			termed := strings.Contains(string(b), "TERM")
			switch {
			case termed != c.term:
				t.Fatalf("SIGTERM seen %v, want %v", termed, c.term)
			case c.term && (took < grace || took > grace+time.Second):
				t.Fatalf("a handler ignoring SIGTERM ended %s after the stop, want SIGKILL after the %s grace", took, grace)
			case !c.term && took > grace:
				t.Fatalf("a handler of a lost lease ended %s after the stop, want at once", took)
			case !errors.Is(res.Err, c.cause):
				t.Fatalf("result error %v, want the stop's cause", res.Err)
			}
		})
	}
}

// A worker cut off from DynamoDB for a little longer than failover −
// margin stops its handler at the lease deadline; when a renewal gets
// through before the lease is lost, the batch, never checkpointed, runs
// again and is checkpointed, and no lease is lost.
func TestLeaseDeadlineStopResumesAfterRenewal(t *testing.T) {
	s := newStack(t, 1)
	p := emulator.NewFaultProxy(t, emulator.DynamoDBEndpoint(t), emulator.Hang, 0, "", 1)
	through := s
	through.ddb = via(p.URL)
	out := outFile(t)
	// The first run sleeps past the deadline; the second is quick.
	cfg := s.config(t, "w1", out, ShellCommand(`echo "$KCLTOOL_ATTEMPT" >> "$OUT.attempts"; cat >> "$OUT"; if [ ! -e "$OUT.slept" ]; then touch "$OUT.slept"; sleep 30; fi`)...)
	// Failover 4s, renewals every 1s: the handler is stopped 3s after the
	// last renewal, the lease lost after 4s. Renewals cut off after 200ms
	// are retried within their round, so one gets through soon after the
	// heal.
	cfg.Lease = leasecore.Config{FailoverTime: 4 * time.Second, RenewInterval: time.Second, TakerInterval: 300 * time.Millisecond, MaxLeasesToStealAtOneTime: 1}
	shortDynamoDBTimeout(&cfg, 200*time.Millisecond)
	var logs *logBuffer
	cfg.Log, logs = recordedLogger(t, "w1")
	cfg.Metrics = NewMetrics()
	start(t, through, cfg)
	seqs := s.put(t, func(k string) string { return k }, keys("k", 3)...)
	eventually(t, 20*time.Second, "the first run handling the batch", func() bool { return len(readHandled(t, out)) >= 3 })

	p.Partition()
	eventually(t, 10*time.Second, "the stop at the lease deadline", func() bool {
		return strings.Contains(logs.String(), `level=WARN msg="lease deadline passed without a renewal known to be applied: stopped the handler`)
	})
	p.Heal()
	eventually(t, 10*time.Second, "the batch run again and checkpointed", func() bool {
		return leases(t, s)["shardId-000000000000"].Checkpoint.SequenceNumber == seqs["k002"]
	})
	log := logs.String()
	if !strings.Contains(log, `msg="lease renewed: the shard's handler runs again"`) {
		t.Fatalf("the resume is not logged:\n%s", log)
	}
	if strings.Contains(log, `msg="lease lost`) || strings.Contains(log, `msg="handler failed"`) {
		t.Fatalf("the stop lost the lease or counted as a handler failure:\n%s", log)
	}
	if n := len(readHandled(t, out)); n != 6 {
		t.Fatalf("%d records handled, want the 3 twice (the stopped run and the one after the renewal)", n)
	}
	if b, _ := os.ReadFile(out + ".attempts"); string(b) != "1\n2\n" {
		t.Fatalf("KCLTOOL_ATTEMPT of the runs: %q, want 1 then 2 (the records were seen by the stopped run)", b)
	}
}
