package cmd

import (
	"os"
	"runtime/debug"
)

// gcPercent is the Go garbage collector's target while a command runs,
// unless GOGC is set. kcltool's live heap is small (a page of records per
// shard, or one copy of the lease table), and most of what it allocates is
// dropped a moment later: with Go's default of 100 the collector runs again
// after every few megabytes for little memory saved. The price is memory:
// the heap may grow to five times the live data, which stays small. How much
// CPU it saves and what peak RSS the run benchmark sees are figures that
// change with the code, so they live in docs/benchmarks.md. GOGC=100
// restores Go's default.
const gcPercent = 400

// tuneGC applies gcPercent and returns the function that restores the
// previous setting: tests run many commands in one process next to peers
// that must not inherit it.
func tuneGC() (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	prev := debug.SetGCPercent(gcPercent)
	return func() { debug.SetGCPercent(prev) }
}
