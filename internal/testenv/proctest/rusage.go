package proctest

import (
	"syscall"
	"testing"
	"time"
)

// Rusage is the CPU time (user and system) this process and its waited-for
// children have used so far, for benchmarks that report CPU per operation.
func Rusage(tb testing.TB) (self, children time.Duration) {
	var s, c syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &s); err != nil {
		tb.Fatal(err)
	}
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &c); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(s.Utime.Nano() + s.Stime.Nano()), time.Duration(c.Utime.Nano() + c.Stime.Nano())
}
