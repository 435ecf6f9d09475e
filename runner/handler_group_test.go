package runner

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A handler's background process does not outlive its batch: once the
// handler exits 0, what is left of its process group is ended.
func TestHandlerEndsLeftoverProcesses(t *testing.T) {
	h, out := newHandler(t, `sleep 300 & echo $! > "$OUT/bg"; exit 0`)
	start := time.Now()
	res := h.Run(context.Background(), testBatch(1))
	if res.Outcome != Succeeded {
		t.Fatalf("result = %+v", res)
	}
	pid := readPID(t, filepath.Join(out, "bg"))
	// Gone when Run returns, not some time later.
	if !processGone(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL) // the test leaves nothing behind
		t.Fatalf("background process %d still running when Run returned", pid)
	}
	// SIGTERM ends it while the handler's output is still being read, so
	// the batch no longer sits out pipeGrace.
	if took := time.Since(start); took >= pipeGrace {
		t.Errorf("Run took %s, want less than pipeGrace (%s)", took, pipeGrace)
	}
}

// A leftover that ignores SIGTERM is killed after leftoverGrace.
func TestHandlerKillsLeftoversIgnoringSIGTERM(t *testing.T) {
	h, out := newHandler(t, `sh -c 'trap "" TERM; echo $$ > "$OUT/bg"; exec sleep 300' & while [ ! -s "$OUT/bg" ]; do sleep 0.01; done; exit 0`)
	start := time.Now()
	res := h.Run(context.Background(), testBatch(1))
	took := time.Since(start)
	pid := readPID(t, filepath.Join(out, "bg"))
	if !processGone(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("background process %d ignoring SIGTERM still running when Run returned", pid)
	}
	if res.Outcome != Succeeded {
		t.Fatalf("result = %+v", res)
	}
	if took < leftoverGrace || took > leftoverGrace+pipeGrace+3*time.Second {
		t.Errorf("Run took %s, want about leftoverGrace (%s)", took, leftoverGrace)
	}
}

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
		if !processGone(pid) {
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
