package main

import (
	"os"
	"runtime/debug"
)

// GC tuning lives with main, not in cmd: it reads GOGC and GOMEMLIMIT from
// the process's environment and sets process-wide state, which is the
// program's business, not a command's. Tests that run commands in-process
// (cmd.Run) keep Go's defaults.

// gcPercent is the Go garbage collector's target while kcltool runs,
// unless GOGC is set. kcltool's live heap is small (a page of records per
// shard, or one copy of the lease table), and most of what it allocates is
// dropped a moment later: with Go's default of 100 the collector runs again
// after every few megabytes for little memory saved. The price is memory:
// the heap may grow to five times the live data, which stays small. How much
// CPU it saves and what peak RSS the run benchmark sees are figures that
// change with the code, so they live in docs/benchmarks.md. GOGC=100
// restores Go's default.
const gcPercent = 400

// memoryLimit bounds what gcPercent costs in memory, unless GOMEMLIMIT is
// set: a command that holds a large lease table (leases ls of 100,000 leases
// keeps about 70 MB live, and allocates several times that while it decodes
// the scan) would otherwise grow its heap to five times that before the
// collector runs. Near the limit the collector runs as often as it needs to;
// below it, nothing changes. Peak RSS of that listing: 290 MB without the
// limit (docs/benchmarks.md, leases ls at scale).
const memoryLimit = 160 << 20

// tuneGC applies gcPercent and memoryLimit and returns the function that
// restores the previous settings.
func tuneGC() (restore func()) {
	restoreLimit := func() {}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		prev := debug.SetMemoryLimit(memoryLimit)
		restoreLimit = func() { debug.SetMemoryLimit(prev) }
	}
	if _, set := os.LookupEnv("GOGC"); set {
		return restoreLimit
	}
	prev := debug.SetGCPercent(gcPercent)
	return func() { debug.SetGCPercent(prev); restoreLimit() }
}
