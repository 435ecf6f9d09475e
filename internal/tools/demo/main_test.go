package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

func TestMain(m *testing.M) { os.Exit(emulator.Main(m)) }

// TestDemoRuns runs what `make demo` runs, against this test binary's own
// local servers: two workers through a split and a takeover, with every
// order handled and each customer's orders in order (run fails otherwise).
func TestDemoRuns(t *testing.T) { runDemo(t, 2) }

// TestDemoRunsKCL3 runs what `make demo-kcl3` runs: the same on a KCL 3.x
// application, whose leases a leader elected among the two workers
// assigns, balances and, at worker-a's stop, gives to worker-b.
func TestDemoRunsKCL3(t *testing.T) { runDemo(t, 3) }

func runDemo(t *testing.T, version int) {
	root, err := emulator.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "kcltool")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build kcltool: %v\n%s", err, out)
	}
	for _, kv := range emulator.Env(t) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Chdir(root) // the demo runs examples/handler.sh, as make demo does
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := run(ctx, bin, version); err != nil {
		t.Fatalf("demo: %v", err)
	}
}
