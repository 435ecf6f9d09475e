package runner

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/proctest"
)

// The worker's shutdown leaves no handler's background process behind
// either: every batch started one, and none is running after the stop.
func TestWorkerLeavesNoHandlerProcesses(t *testing.T) {
	s := newStack(t, 2)
	out := outFile(t)
	pids := filepath.Join(t.TempDir(), "pids")
	s.put(t, func(k string) string { return k }, keys("k", 40)...)
	cfg := s.config(t, "w1", out, "sh", "-c", `sleep 300 & echo $! >> "$PIDS"; cat >> "$OUT"`)
	cfg.BatchSize = 5
	cfg.Handler.Env = append(cfg.Handler.Env, "PIDS="+pids)
	r := start(t, s, cfg)
	eventually(t, 30*time.Second, "40 records handled", func() bool { return len(readHandled(t, out)) >= 40 })
	if err := r.stop(t); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	b, err := os.ReadFile(pids)
	if err != nil {
		t.Fatal(err)
	}
	var alive []int
	lines := strings.Fields(string(b))
	for _, line := range lines {
		pid, err := strconv.Atoi(line)
		if err != nil {
			t.Fatal(err)
		}
		if !proctest.Gone(pid) {
			alive = append(alive, pid)
		}
	}
	for _, pid := range alive {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if len(alive) > 0 {
		t.Fatalf("%d of %d handler background processes still running after the worker stopped: %v", len(alive), len(lines), alive)
	}
	if len(lines) < 8 {
		t.Fatalf("only %d batches ran; want at least 8 to mean something", len(lines))
	}
}
