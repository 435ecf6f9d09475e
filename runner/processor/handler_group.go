package processor

import (
	"context"
	"syscall"
	"time"

	"github.com/kcltool/kcltool/internal/clock"
)

// leftoverGrace is how long processes a handler left behind in its process
// group get to exit after SIGTERM before they are killed. It only costs time
// when one of them ignores SIGTERM; the group is usually empty at once.
const leftoverGrace = 2 * time.Second

// endLeftovers ends what is left of a handler's process group once the
// handler has exited and been reaped: SIGTERM, then SIGKILL leftoverGrace
// after termSent (the first SIGTERM, zero if none was sent yet), and it
// waits until they are gone. Background processes would otherwise outlive the batch and
// the worker, one more per batch (a handler's `cmd &`).
//
// Signalling a group after its leader was reaped is safe while the group
// has members: Linux does not reuse a process id still in use as a group id.
// Once the group is empty, its id could only come back as the group of a
// new process after the kernel's pid counter wrapped around, which no
// check here could be as fast as.
func endLeftovers(clk clock.Clock, pgid int, termSent time.Time) {
	if signalGroup(pgid, syscall.SIGTERM) == syscall.ESRCH {
		return // nothing left: the common case costs one syscall
	}
	if termSent.IsZero() {
		termSent = clk.Now()
	}
	deadline, killed := termSent.Add(leftoverGrace), false
	for wait := time.Millisecond; groupAlive(pgid); wait = min(2*wait, 100*time.Millisecond) {
		if now := clk.Now(); !killed && now.After(deadline) {
			_ = signalGroup(pgid, syscall.SIGKILL)
			killed, deadline = true, now.Add(time.Second)
		} else if killed && now.After(deadline) {
			return // stuck in the kernel (D state); nothing more to do
		}
		_ = clock.Sleep(context.Background(), clk, wait)
	}
}
