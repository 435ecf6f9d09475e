package runner

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// procCPU reads a live process's CPU time to well under a clock tick: here
// this test process's own, against its rusage.
func TestProcCPUIsPrecise(t *testing.T) {
	rusage := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := rusage()
	for x := 0; rusage()-start < 50*time.Millisecond; x++ {
	}
	before := rusage()
	got, ok := procCPU(os.Getpid())
	after := rusage()
	if !ok {
		t.Fatal("procCPU could not read this process")
	}
	// Threads that exited took their time out of schedstat; this process's
	// own reaped children are not counted in RUSAGE_SELF: allow 5 ms.
	if got < before-5*time.Millisecond || got > after+5*time.Millisecond {
		t.Errorf("procCPU %v, rusage %v..%v", got, before, after)
	}
	if _, ok := procCPU(1 << 30); ok {
		t.Error("procCPU read a process that does not exist")
	}
}
