package reshard

import (
	"context"
	"github.com/kcltool/kcltool/internal/clock"
	"time"

	"github.com/kcltool/kcltool/internal/backoff"
)

// Retry says how throttled or transiently failing AWS calls are retried, on
// top of the SDK's own retryer: a reshard makes every worker list shards and
// create leases at the same moment, which is exactly when limits bite.
type Retry struct {
	// MaxRetries bounds the retries of one call (default 8).
	MaxRetries int
	// Clock times the waits between attempts (clock.RealClock when nil);
	// tests inject one so that backoff costs no wall time.
	Clock clock.Clock
	// OnRetry, if set, observes each retry so that logs or metrics show them.
	OnRetry func(op string, attempt int, err error)
}

func (r Retry) maxRetries() int {
	if r.MaxRetries <= 0 {
		return 8
	}
	return r.MaxRetries
}

func (r Retry) sleep(ctx context.Context, d time.Duration) error {
	clk := r.Clock
	if clk == nil {
		clk = clock.RealClock()
	}
	return clock.Sleep(ctx, clk, d)
}

// do runs call until it succeeds, fails with an error retryable rejects, or
// the retries are spent. Waits use backoff.Default (exponential, full
// jitter) so that many workers retrying together spread apart.
func (r Retry) do(ctx context.Context, op string, retryable func(error) bool, call func() error) error {
	return backoff.Retry(ctx, r.sleep, backoff.Default, func(attempt int) (bool, error) {
		err := call()
		if err == nil || !retryable(err) || attempt > r.maxRetries() {
			return false, err
		}
		if r.OnRetry != nil {
			r.OnRetry(op, attempt, err)
		}
		return true, err
	})
}
