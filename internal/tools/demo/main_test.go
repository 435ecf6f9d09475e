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

// TestKeptHintWorksInANewShell: the lines make demo KEEP=1 prints, pasted
// into a new shell in another folder, without the port variables make was
// given, point at the ports the demo used, and name a kcltool that is
// there. No server is needed: the eval only prints variables.
func TestKeptHintWorksInANewShell(t *testing.T) {
	root, err := emulator.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// As make runs the demo; the binary's name has a space, to be quoted.
	t.Chdir(root)
	bin := filepath.Join(t.TempDir(), "kcl tool")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho kcltool \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	hint, err := keptHint(bin, "http://127.0.0.1:28000", "http://127.0.0.1:28001", "http://127.0.0.1:28003")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(hint, "\n") {
		if strings.HasPrefix(l, "    ") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	if len(lines) != 4 || !strings.HasPrefix(lines[0], `eval "$(`) {
		t.Fatalf("hint lines %q:\n%s", lines, hint)
	}
	script := lines[0] + "\n" + lines[1] + "\n" +
		`echo "$AWS_ENDPOINT_URL_DYNAMODB $AWS_ENDPOINT_URL_KINESIS $AWS_ENDPOINT_URL_S3 $AWS_REGION $AWS_DEFAULT_REGION"`
	sh := exec.Command("bash", "-c", script)
	sh.Dir = t.TempDir()
	sh.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	out, err := sh.CombinedOutput()
	want := "kcltool leases ls --app " + app + "\nhttp://127.0.0.1:28000 http://127.0.0.1:28001 http://127.0.0.1:28003 us-east-1 us-east-1\n"
	if err != nil || string(out) != want {
		t.Errorf("the hint's lines in a new shell: %v\n%s\nwant:\n%s\nhint:\n%s", err, out, want, hint)
	}
}
