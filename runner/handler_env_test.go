package runner

import (
	"context"
	"errors"
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
	cfg := DefaultConfig()
	cfg.App, cfg.Stream, cfg.Handler = "orders", reshard.Stream{Name: "orders-stream"}, h
	if err := cfg.Validate(); !errors.Is(err, processor.ErrNoHandlerEnv) {
		t.Fatalf("Validate without Env: %v, want ErrNoHandlerEnv", err)
	}
	h.Env = []string{}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate with an empty Env: %v", err)
	}
}
