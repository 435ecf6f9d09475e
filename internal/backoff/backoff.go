// Package backoff computes the waits between retries for every retry loop
// of kcltool: exponential growth to a cap, with a choice of jitter.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Jitter says how much of a wait is random.
type Jitter int

const (
	// Full waits a random time in [0, ceiling): retries of many workers
	// that failed together spread apart the most (AWS's recommendation for
	// contended calls).
	Full Jitter = iota
	// Equal waits half the ceiling plus a random time in [0, half): retries
	// never bunch up near zero, and shards that failed together (a
	// downstream outage) still do not retry in lockstep.
	Equal
	// None waits the ceiling itself.
	None
)

// Policy is an exponential backoff: the ceiling of the n-th wait is
// Base·2^n, at most Max, and the wait is Min plus the jittered ceiling.
type Policy struct {
	Base, Max time.Duration
	// Min is added to every wait: a floor that keeps a retry off zero, or
	// under a rate limit.
	Min    time.Duration
	Jitter Jitter
}

// Delay is the wait before a retry after n doublings of Base (n = 0: the
// ceiling is Base). rnd returns numbers in [0, 1); nil means math/rand/v2.
func (p Policy) Delay(n int, rnd func() float64) time.Duration {
	if rnd == nil {
		rnd = rand.Float64
	}
	ceiling := min(p.Base, p.Max)
	// Doubling stops at the cap, so a large n cannot overflow.
	for i := 0; i < n && ceiling < p.Max; i++ {
		ceiling *= 2
	}
	ceiling = max(min(ceiling, p.Max), 0)
	switch p.Jitter {
	case Equal:
		half := ceiling / 2
		return p.Min + half + time.Duration(rnd()*float64(ceiling-half))
	case None:
		return p.Min + ceiling
	default:
		return p.Min + time.Duration(rnd()*float64(ceiling))
	}
}
