package runner

import (
	"context"
	"testing"
	"time"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
)

// The platform's detection runs beside the worker (the EC2 metadata
// service may take seconds); a graceful stop cuts it short and waits for
// it: nothing of the worker outlives Run.
func TestKCL3PlatformDetectionEndsWithRun(t *testing.T) {
	s := newKCL3Stack(t, 1, kcl3fleet.Layout{Kind: kcl3fleet.NewApp})
	cfg := s.kcl3Config(t, "kcltool-1", outFile(t))
	entered, exited := make(chan struct{}), make(chan struct{})
	cfg.KCL3.Samplers = func(ctx context.Context) ([]coordination.Sampler, string) {
		close(entered)
		<-ctx.Done() // a metadata service that never answers
		close(exited)
		return nil, "test: never detected"
	}
	r := start(t, s.stack, cfg)
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the platform detection never started")
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	default:
		t.Fatal("the platform detection still runs after Run returned")
	}
}
