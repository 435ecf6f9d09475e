package clocktest

import (
	"sync"
	"time"
)

// Step is a clock whose timers fire at once, moving the time forward by
// their duration: code under test backs off for real durations without
// the test waiting for them.
type Step struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
	// OnSleep, if set, is called with the number of timers so far.
	OnSleep func(n int)
}

// NewStep is a stepping clock at start.
func NewStep(start time.Time) *Step { return &Step{now: start} }

func (c *Step) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *Step) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.sleeps = append(c.sleeps, d)
	n, now, f := len(c.sleeps), c.now, c.OnSleep
	c.mu.Unlock()
	if f != nil {
		f(n)
	}
	ch := make(chan time.Time, 1)
	ch <- now
	return firedTimer(ch)
}

// Sleeps are the durations of the timers so far, in order.
func (c *Step) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

type firedTimer chan time.Time

func (t firedTimer) C() <-chan time.Time { return t }
func (t firedTimer) Stop() bool          { return false }
