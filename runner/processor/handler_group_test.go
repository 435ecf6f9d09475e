package processor

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/proctest"
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
	if !proctest.Gone(pid) {
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
	if !proctest.Gone(pid) {
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
