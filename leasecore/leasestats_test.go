package leasecore

import (
	"testing"
	"time"
)

// TestLeaseStatsLikeLeaseStatsRecorder checks the numbers of the KCL's
// LeaseStatsRecorder: bytes in the window / 1024 / window seconds, an
// exponential moving average with alpha 0.5 whose first value is taken as
// is, entries dropped once as old as the window, 6 decimals half up, and
// nothing (nil) for a lease with nothing ever recorded.
func TestLeaseStatsLikeLeaseStatsRecorder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newLeaseStats(time.Second)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	check := func(what string, got *float64, want float64) {
		t.Helper()
		if got == nil || *got != want {
			t.Fatalf("%s: %v, want %v", what, deref(got), want)
		}
	}
	if got := s.throughput("k", t0); got != nil {
		t.Fatalf("nothing recorded: %v, want nil (no throughputKBps written)", *got)
	}
	s.record("k", 2048, at(0))
	check("first value, taken as is", s.throughput("k", at(500)), 2)
	// The entry is as old as the window at 1s: dropped, 0 KB/s averaged in.
	check("empty window", s.throughput("k", at(1000)), 1)
	s.record("k", 4096, at(1200))
	s.record("k", 1024, at(1400))
	check("two entries", s.throughput("k", at(1500)), 0.5*5+0.5*1)
	// Rounded to 6 decimals, half up: 1 byte/s is 0.0009765625 KB/s.
	s.record("r", 1, at(0))
	check("rounding", s.throughput("r", at(1)), 0.000977)
	// A gained lease's own throughputKBps seeds it (addLeasesToRenew).
	v := 3.5
	s.seed("g", &v, at(0))
	check("seeded", s.throughput("g", at(10)), 3.5)
	s.seed("n", nil, at(0))
	if got := s.throughput("n", at(10)); got != nil {
		t.Fatalf("seeded with nil: %v, want nil", *got)
	}
	s.drop("k")
	if got := s.throughput("k", at(1600)); got != nil {
		t.Fatalf("after drop: %v, want nil", *got)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
