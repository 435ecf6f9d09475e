package runner

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kcltool/kcltool/reshard"
	"github.com/kcltool/kcltool/runner/processor"
)

// runner never reads the environment: a handler without the caller's
// environment is refused, by Validate before a worker starts and by Run
// for a Handler used alone, rather than started with this process's.
func TestHandlerWithoutEnvIsRefused(t *testing.T) {
	h := &processor.Handler{Argv: processor.ShellCommand("true")}
	if res := h.Run(context.Background(), testBatch(1)); res.Outcome != processor.Failed || !errors.Is(res.Err, processor.ErrNoHandlerEnv) {
		t.Fatalf("Run without Env: %v %v, want Failed with ErrNoHandlerEnv", res.Outcome, res.Err)
	}
	cfg := Config{App: "orders", Stream: reshard.Stream{Name: "orders-stream"}, Handler: h}
	if err := cfg.Validate(); !errors.Is(err, processor.ErrNoHandlerEnv) {
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
	h := &processor.Handler{Argv: []string{"/bin/sh", "-c", `echo "${KCLTOOL_TEST_LEAK-unset} $GIVEN"`}, Env: []string{"GIVEN=given"}}
	res := h.Run(context.Background(), testBatch(1))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := strings.TrimSpace(res.Output); got != "unset given" {
		t.Fatalf("handler saw %q, want %q", got, "unset given")
	}
}
