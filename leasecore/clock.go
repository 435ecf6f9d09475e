package leasecore

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Clock is where the lease protocol gets its time. Expiry is judged by the
// observer's own monotonic clock (docs/kcl-compat.md, Expiry: no timestamp is
// ever written), so everything that decides "held" or "expired" reads this
// clock and nothing else; tests swap in a FakeClock and step through failover
// times without sleeping.
type Clock interface {
	// Now returns the current time. The real clock's values carry Go's
	// monotonic reading, so differences between them ignore wall-clock jumps.
	Now() time.Time
	// NewTimer returns a timer that fires once after d.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer the lease loops use.
type Timer interface {
	// C delivers the time once the timer fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it was active.
	Stop() bool
}

// RealClock returns the system clock.
func RealClock() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

// Sleep waits d on clock, or until ctx is done.
func Sleep(ctx context.Context, clock Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// FakeClock is a Clock that only moves when told to. Timers fire, in order of
// their deadlines, when Advance passes them. It is exported so that tests of
// other packages (the runner) can drive lease expiry without sleeping.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced whenever a timer is added
}

// NewFakeClock returns a fake clock reading start.
func NewFakeClock(start time.Time) *FakeClock {
	return &FakeClock{now: start, changed: make(chan struct{})}
}

// Now returns the fake time.
func (f *FakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer returns a timer that fires when the fake time reaches now+d.
func (f *FakeClock) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{clock: f, when: f.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.c <- f.now
		return t
	}
	f.timers = append(f.timers, t)
	close(f.changed)
	f.changed = make(chan struct{})
	return t
}

// Advance moves the fake time forward by d and fires every timer whose
// deadline it passes.
func (f *FakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	sort.Slice(f.timers, func(i, j int) bool { return f.timers[i].when.Before(f.timers[j].when) })
	kept := f.timers[:0]
	for _, t := range f.timers {
		if t.when.After(f.now) {
			kept = append(kept, t)
			continue
		}
		t.c <- t.when
	}
	f.timers = kept
}

// Timers reports how many timers are waiting. Tests use it with WaitTimers to
// know that a loop has gone back to sleep before they advance the clock.
func (f *FakeClock) Timers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// WaitTimers blocks until at least n timers are waiting or ctx is done.
func (f *FakeClock) WaitTimers(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		have, changed := len(f.timers), f.changed
		f.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

type fakeTimer struct {
	clock *FakeClock
	when  time.Time
	c     chan time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	f := t.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, o := range f.timers {
		if o == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			return true
		}
	}
	return false
}
