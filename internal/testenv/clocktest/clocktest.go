// Package clocktest holds the fake clock that tests hand to the lease
// protocol, the doctor and the commands, so that they step through failover
// times without sleeping. It does not import leasecore, whose own tests use
// it; its Timer is the same interface as clock.Timer.
package clocktest

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Timer is clock.Timer: the same interface literal, so *Clock is a
// clock.Clock.
type Timer = interface {
	C() <-chan time.Time
	Stop() bool
}

// Clock is a clock.Clock that only moves when told to. Timers fire, in
// order of their deadlines, when Advance passes them.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced whenever a timer is added
}

// New returns a fake clock reading start.
func New(start time.Time) *Clock {
	return &Clock{now: start, changed: make(chan struct{})}
}

// Now returns the fake time.
func (f *Clock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer returns a timer that fires when the fake time reaches now+d.
func (f *Clock) NewTimer(d time.Duration) Timer {
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
func (f *Clock) Advance(d time.Duration) {
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
func (f *Clock) Timers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// WaitTimers blocks until at least n timers are waiting or ctx is done.
func (f *Clock) WaitTimers(ctx context.Context, n int) error {
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
	clock *Clock
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

// Next returns the deadline of the earliest waiting timer, for a simulation
// that advances the clock from one timer to the next.
func (f *Clock) Next() (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.timers) == 0 {
		return time.Time{}, false
	}
	next := f.timers[0].when
	for _, t := range f.timers[1:] {
		if t.when.Before(next) {
			next = t.when
		}
	}
	return next, true
}
