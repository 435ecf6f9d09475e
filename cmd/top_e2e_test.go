package cmd

import (
	"context"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

// TestTopDuringResharding runs the binary against the local servers while
// shard 0 is split: --once prints one plain frame with the parent closed
// and its children blocked on it; then, once the parent is drained, plain
// frames follow one another on a pipe until Ctrl-C (exit 130).
func TestTopDuringResharding(t *testing.T) {
	t.Parallel()
	s := newScenario(t, 1)
	s.put(shardID(0), 3)
	s.split(shardID(0))
	s.lease(shardID(0), "w1", s.prev[shardID(0)])
	s.lease(shardID(1), "", leasecore.TRIM_HORIZON)
	s.lease(shardID(2), "", leasecore.TRIM_HORIZON)

	out, errOut, code := s.kcltool("top", "--table", s.table, "--stream", s.stream, "--once")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("escape sequences on a pipe:\n%q", out)
	}
	if n := strings.Count(out, "kcltool top · "); n != 1 {
		t.Errorf("%d frames with --once, want 1:\n%s", n, out)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^shardId-000000000000 +closed-undrained +w1 .*$`),
		regexp.MustCompile(`(?m)^shardId-000000000001 ←0 +blocked +- .*blocked-child\(warn\)$`),
		regexp.MustCompile(`(?m)^shardId-000000000002 ←0 +blocked +- .*blocked-child\(warn\)$`),
		regexp.MustCompile(`(?m)^cost a minute: .*Kinesis calls$`),
	} {
		if !want.MatchString(out) {
			t.Errorf("no line matching %s in:\n%s", want, out)
		}
	}

	// The parent reaches SHARD_END: its children are free to start.
	l, _, err := leasecore.GetLease(context.Background(), s.ddb, s.table, shardID(0), true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leasecore.CheckpointLease(context.Background(), s.ddb, s.table, l, leasecore.SequenceNumber{SequenceNumber: leasecore.SHARD_END}); err != nil {
		t.Fatal(err)
	}
	w := startWorker(t, "top", nil, "top", "--table", s.table, "--stream", s.stream, "--interval", "1s")
	eventuallyE2E(t, 20*time.Second, "two plain frames", func() bool { return strings.Count(w.logs.String(), "kcltool top · ") >= 2 })
	w.signal(t, syscall.SIGINT)
	if code := w.exitCode(t, 10*time.Second); code != 130 {
		t.Errorf("exit %d after Ctrl-C, want 130", code)
	}
	frames := w.logs.String()
	if !regexp.MustCompile(`(?m)^shardId-000000000000 +drained `).MatchString(frames) || strings.Contains(frames, "blocked-child") {
		t.Errorf("the drained parent still blocks its children:\n%s", frames)
	}
}
