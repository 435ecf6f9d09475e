package doctor

import (
	"context"
	"errors"
	"fmt"
	"github.com/kcltool/kcltool/internal/clock"
	"math"
	"sync/atomic"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

// ScanPatience bounds how long doctor retries its own scan of a throttled
// lease table before it reports the throttling instead of a table it could
// not read: long enough for a table whose read capacity is below the
// fleet's scans to let one scan through now and then, short enough for an
// operator waiting at a terminal.
const ScanPatience = 2 * time.Minute

// errPatience ends ScanTable's retries once ScanPatience has passed.
var errPatience = errors.New("doctor's scan retried for too long")

// ScanThrottledError is doctor's own scan throttled past ScanPatience.
type ScanThrottledError struct {
	Table   string
	Waited  time.Duration
	Retries int
	Err     error // the last throttle
}

func (e *ScanThrottledError) Error() string {
	return fmt.Sprintf("scan lease table %q: throttled %d times in %s: %v", e.Table, e.Retries, e.Waited.Round(time.Second), e.Err)
}

func (e *ScanThrottledError) Unwrap() error { return e.Err }

// scanPatiently scans the table as the workers' takers do, retrying
// throttled pages with backoff (on doctor's clock) for up to ScanPatience.
func (d *Doctor) scanPatiently(ctx context.Context) (leasecore.ScanResult, error) {
	start := d.clock.Now()
	var retries atomic.Int64 // parallel segments retry concurrently
	res, err := leasecore.ScanTable(ctx, d.table, d.opt.Table, leasecore.ScanOptions{
		Segments: d.segments, KeepItems: true, MaxRetries: math.MaxInt32,
		Sleep: func(ctx context.Context, wait time.Duration) error {
			retries.Add(1)
			if d.clock.Now().Add(wait).Sub(start) > ScanPatience {
				return errPatience
			}
			return clock.Sleep(ctx, d.clock, wait)
		},
	})
	if errors.Is(err, errPatience) {
		return res, &ScanThrottledError{Table: d.opt.Table, Waited: d.clock.Now().Sub(start), Retries: int(retries.Load()), Err: err}
	}
	return res, err
}

// throttledReport is doctor's report when its own scan could not complete:
// the throttling is the finding (critical, exit 3), with the table's read
// capacity and the fix, instead of an error that hides the cause.
func (d *Doctor) throttledReport(e *ScanThrottledError) *Report {
	now := d.clock.Now()
	fix := "switch the lease table to on-demand or raise its read capacity: every worker's taker scans the whole table every 20 s or more often, and doctor scans it as they do"
	cause := "the lease table's read capacity is below what the workers' scans need; a throttled taker scan delays takeover and balance"
	values := map[string]float64{"throttledReads": float64(e.Retries), "waitedSeconds": e.Waited.Seconds()}
	if d.desc != nil {
		mode, _ := provisioned(d.desc)
		rcu := provisionedRCU(d.desc, mode)
		values["provisionedRCU"] = float64(rcu)
		cause += fmt.Sprintf(" (billing mode %s, %d RCU)", mode, rcu)
	}
	return &Report{
		App: d.opt.App, Table: d.opt.Table, Stream: d.opt.Stream, FailoverTime: d.opt.FailoverTime,
		Started: now.Add(-e.Waited), Ended: now, Cost: d.meter.take(),
		Findings: []Finding{{
			ID: FindTableThrottled, Severity: SeverityCritical,
			Summary: fmt.Sprintf("lease table reads throttled; doctor's own scan could not complete (throttled %d times in %s)",
				e.Retries, e.Waited.Round(time.Second)),
			Evidence: Evidence{Lines: []string{e.Error()}, Values: values},
			Cause:    cause,
			Fix:      fix,
		}},
	}
}
