package cmd

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// The end-to-end tests of `kcltool run` drive the built binary, as users
// do: real signals, real exit codes, kill -9. It is built once per test
// binary, on first use, without the race detector (the runner's own tests
// run the same code in-process under it).
var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func kcltoolBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		root, err := emulator.RepoRoot()
		if err != nil {
			built.err = err
			return
		}
		built.dir, built.err = os.MkdirTemp("", "kcltool-e2e-")
		if built.err != nil {
			return
		}
		goTool, err := exec.LookPath("go")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(built.dir, "kcltool")
		cmd := exec.Command(goTool, "build", "-o", built.path, ".")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = &buildError{err: err, out: string(out)}
		}
	})
	if built.err != nil {
		t.Fatalf("go build kcltool: %v", built.err)
	}
	return built.path
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// cleanupAfter runs the tests, then removes the built binary and stops the
// local servers (testscript.Main exits the process right after Run).
type cleanupAfter struct{ m *testing.M }

func (c cleanupAfter) Run() int {
	moreParallel()
	noRaceExitSleep()
	checkCalls := startCallRecording()
	code := c.m.Run()
	if err := checkCalls(); err != nil {
		fmt.Fprintf(os.Stderr, "--- FAIL: iam-policy check\n%v\n", err)
		code = 1
	}
	for _, d := range keptForCallCheck {
		_ = os.RemoveAll(d)
	}
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	emulator.StopAll()
	return code
}

// noRaceExitSleep: under -race, a program sleeps a second before it exits
// (the race runtime's atexit_sleep_ms, 1000 by default), and the tests run
// this test binary as kcltool several hundred times (testscript.Main's
// kcltool, found in PATH). The variable reaches those processes only: this
// one read GORACE when it started. Every race that happens while the
// command runs is still reported, at once, and still makes it exit 66; only
// the extra second in which goroutines still running after main returned
// could race on is gone, a second the real binary never has: it exits as
// soon as main returns. A GORACE given to go test keeps its own options,
// atexit_sleep_ms too (the later setting wins).
func noRaceExitSleep() {
	os.Setenv("GORACE", strings.TrimSpace("atexit_sleep_ms=0 "+os.Getenv("GORACE")))
}

// moreParallel runs four of cmd's parallel tests at a time, unless
// -parallel is given. They mostly wait (on the local servers, on lease
// timings, on the binaries they start), so GOMAXPROCS, go test's default
// and 2 on CI's machine, left its two cores half idle and the package
// near 14 minutes.
func moreParallel() {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", "4")
	}
}
