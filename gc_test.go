package main

import (
	"os"
	"runtime/debug"
	"testing"
)

// tuneGC sets the collector's target and memory limit unless GOGC and
// GOMEMLIMIT say otherwise, and restores what was there.
func TestTuneGC(t *testing.T) {
	percent := func() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }
	limit := func() int64 { return debug.SetMemoryLimit(-1) } // a negative limit only reads
	before, beforeLimit := percent(), limit()
	for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	restore := tuneGC()
	if p, l := percent(), limit(); p != gcPercent || l != memoryLimit {
		t.Errorf("tuned: GC percent %d, memory limit %d; want %d, %d", p, l, gcPercent, memoryLimit)
	}
	restore()
	if p, l := percent(), limit(); p != before || l != beforeLimit {
		t.Errorf("restored: GC percent %d, memory limit %d; want %d, %d", p, l, before, beforeLimit)
	}

	t.Setenv("GOGC", "100")
	t.Setenv("GOMEMLIMIT", "1GiB")
	restore = tuneGC()
	if p, l := percent(), limit(); p != before || l != beforeLimit {
		t.Errorf("GOGC and GOMEMLIMIT set: GC percent %d, memory limit %d; want them untouched (%d, %d)", p, l, before, beforeLimit)
	}
	restore()
}
