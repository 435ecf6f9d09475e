package backoff

import (
	"testing"
	"time"
)

func fixed(v float64) func() float64 { return func() float64 { return v } }

// The bounds of each mode, at the lowest and the highest random number, as
// the ceiling grows and reaches the cap.
func TestDelayBounds(t *testing.T) {
	const hi = 0.999999
	p := Policy{Base: 100 * time.Millisecond, Max: time.Second, Min: 5 * time.Millisecond}
	ceilings := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for n, c := range ceilings {
		c *= time.Millisecond
		for _, tc := range []struct {
			jitter Jitter
			lo, hi time.Duration // bounds of the wait, lo included, hi excluded
		}{
			{Full, p.Min, p.Min + c},
			{Equal, p.Min + c/2, p.Min + c},
			{None, p.Min + c, p.Min + c + 1},
		} {
			p.Jitter = tc.jitter
			if d := p.Delay(n, fixed(0)); d != tc.lo {
				t.Errorf("jitter %d, n=%d, rnd 0: %v, want %v", tc.jitter, n, d, tc.lo)
			}
			if d := p.Delay(n, fixed(hi)); d < tc.lo || d >= tc.hi || (tc.jitter != None && tc.hi-d > c/1000) {
				t.Errorf("jitter %d, n=%d, rnd ~1: %v, want just under %v", tc.jitter, n, d, tc.hi)
			}
		}
	}
}

// Random waits stay in bounds, and a huge retry count neither overflows nor
// passes the cap.
func TestDelayRandom(t *testing.T) {
	for _, j := range []Jitter{Full, Equal, None} {
		p := Policy{Base: 50 * time.Millisecond, Max: 5 * time.Second, Min: time.Nanosecond, Jitter: j}
		for n := range 200 {
			d := p.Delay(n, nil)
			if d < p.Min || d > p.Min+p.Max {
				t.Fatalf("jitter %d, n=%d: %v outside [%v, %v]", j, n, d, p.Min, p.Min+p.Max)
			}
		}
		if d := p.Delay(1<<40, fixed(0.5)); d <= 0 || d > p.Min+p.Max {
			t.Errorf("jitter %d: huge n gave %v", j, d)
		}
	}
}

// A base above the cap starts at the cap.
func TestDelayBaseAboveMax(t *testing.T) {
	p := Policy{Base: time.Minute, Max: 30 * time.Second, Jitter: None}
	if d := p.Delay(0, nil); d != 30*time.Second {
		t.Errorf("got %v", d)
	}
}
