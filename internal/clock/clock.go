// Package clock is where kcltool's domain packages get their time: the
// system clock in the binary, a fake one (internal/testenv/clocktest) in tests. It
// lives apart from the lease model so that a package can tell time without
// importing leasecore.
package clock

import (
	"context"
	"time"
)

// Clock is where the lease protocol gets its time. Expiry is judged by the
// observer's own monotonic clock (docs/kcl-compat.md, Expiry: no timestamp is
// ever written), so everything that decides "held" or "expired" reads this
// clock and nothing else; tests swap in a fake one (internal/testenv/clocktest) and
// step through failover times without sleeping.
type Clock interface {
	// Now returns the current time. The real clock's values carry Go's
	// monotonic reading, so differences between them ignore wall-clock jumps.
	Now() time.Time
	// NewTimer returns a timer that fires once after d.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer the lease loops use. It is an alias of an
// interface literal so that a fake clock (internal/testenv/clocktest) can return one
// without importing this package.
type Timer = interface {
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
