package runner

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/reshard"
)

// The failing spell's length is read from the clock that stamped its start
// (the worker's), not from the system clock: with a fake clock two years in
// the past, the system clock would report the spell as two years long.
func TestReadFailingSecondsUsesWorkerClock(t *testing.T) {
	clock := clocktest.New(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))
	m := NewMetrics()
	m.bind("orders", "orders-stream", "worker-1", nil, nil, clock)
	s := m.shard("shardId-000000000000")
	s.readFailed(errors.New("refused"), clock.Now())
	clock.Advance(7 * time.Second)
	var b strings.Builder
	if err := m.WritePrometheus(&b); err != nil {
		t.Fatal(err)
	}
	want := `kcltool_shard_read_failing_seconds{app="orders",stream="orders-stream",shard="shardId-000000000000"} 7` + "\n"
	if !strings.Contains(b.String(), want) {
		t.Fatalf("want %q in\n%s", want, b.String())
	}
}

// runner never reads the environment: a handler without the caller's
// environment is refused, by Validate before a worker starts and by Run
// for a Handler used alone, rather than started with this process's.
func TestHandlerWithoutEnvIsRefused(t *testing.T) {
	h := &Handler{Argv: ShellCommand("true")}
	if res := h.Run(context.Background(), testBatch(1)); res.Outcome != Failed || !errors.Is(res.Err, ErrNoHandlerEnv) {
		t.Fatalf("Run without Env: %v %v, want Failed with ErrNoHandlerEnv", res.Outcome, res.Err)
	}
	cfg := DefaultConfig()
	cfg.App, cfg.Stream, cfg.Handler = "orders", reshard.Stream{Name: "orders-stream"}, h
	if err := cfg.Validate(); !errors.Is(err, ErrNoHandlerEnv) {
		t.Fatalf("Validate without Env: %v, want ErrNoHandlerEnv", err)
	}
	h.Env = []string{}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate with an empty Env: %v", err)
	}
}

// A handler inherits exactly the environment it is given: a variable of
// this process that the caller left out does not reach it.
func TestHandlerInheritsOnlyGivenEnv(t *testing.T) {
	t.Setenv("KCLTOOL_TEST_LEAK", "leaked")
	h := &Handler{Argv: []string{"/bin/sh", "-c", `echo "${KCLTOOL_TEST_LEAK-unset} $GIVEN"`}, Env: []string{"GIVEN=given"}}
	res := h.Run(context.Background(), testBatch(1))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := strings.TrimSpace(res.Output); got != "unset given" {
		t.Fatalf("handler saw %q, want %q", got, "unset given")
	}
}
