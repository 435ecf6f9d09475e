package processor

import (
	"time"

	"github.com/kcltool/kcltool/internal/backoff"
)

// Backoff spaces the retries of a failing batch: exponential, capped, with
// jitter.
type Backoff struct {
	// Initial is the delay before the first retry; default 1s.
	Initial time.Duration
	// Max caps the delay; default 30s. It is also how often a shard that
	// cannot skip its failing records retries them.
	Max time.Duration
}

// Delay is the pause before retry number failures (1 for the first retry).
// rnd returns a number in [0, 1).
//
// It uses "equal jitter": half of the exponential delay is fixed, so that
// retries never bunch up near zero, and half is random, so that shards
// that failed together (a downstream outage) do not retry in lockstep.
func (b Backoff) Delay(failures int, rnd func() float64) time.Duration {
	initial, ceiling := b.Initial, b.Max
	if initial <= 0 {
		initial = time.Second
	}
	if ceiling <= 0 {
		ceiling = 30 * time.Second
	}
	return backoff.Policy{Base: initial, Max: ceiling, Jitter: backoff.Equal}.Delay(failures-1, rnd)
}
