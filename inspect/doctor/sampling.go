package doctor

import (
	"context"
	"errors"
	"fmt"
	"github.com/kcltool/kcltool/internal/clock"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// sample is one full read of the lease table.
type sample struct {
	at        time.Time // when the scan started, on the doctor's clock
	leases    []leasecore.Lease
	byKey     map[string]leasecore.Lease
	nonLeases []leasecore.NonLeaseItem
	malformed []error
	// malformedItems are the raw items behind malformed, sorted by key,
	// for the repair commands.
	malformedItems []map[string]types.AttributeValue
	// readUnits and pages are what the scan cost: what a worker's taker
	// pays for each of its scans (both are eventually consistent).
	readUnits float64
	pages     int
	// lock is the KCL 3.x leader lock as read right after the scan (nil on
	// a 2.x table), lockSince the first read that saw its version, and
	// kcl3Err what stopped the 3.x reads.
	lock      *coordination.Lock
	lockSince time.Time
	kcl3Err   error
}

// takeSample scans the lease table once.
func (d *Doctor) takeSample(ctx context.Context) (sample, error) {
	at := d.clock.Now()
	res, err := d.scanPatiently(ctx)
	var throttled *ScanThrottledError
	if errors.As(err, &throttled) {
		return sample{}, err
	}
	if err != nil {
		return sample{}, fmt.Errorf("scan lease table %q: %w", d.opt.Table, err)
	}
	d.meter.note(func(c *ReadCost) { c.Scans++ })
	s := sampleOf(at, res)
	d.readLock(ctx, &s)
	if ctx.Err() != nil {
		return sample{}, ctx.Err()
	}
	return s, nil
}

// sampleOf keeps what the checks need of one scan started at at.
func sampleOf(at time.Time, res leasecore.ScanResult) sample {
	s := sample{at: at, leases: res.Leases, byKey: reshard.ByKey(res.Leases), nonLeases: res.NonLeases, malformed: res.Malformed,
		readUnits: res.ReadUnits, pages: res.Pages}
	// Only the malformed items are kept raw: the rest is in leases.
	if len(res.Malformed) > 0 {
		for _, item := range res.Items {
			if leasecore.IsLeaseItem(item) {
				if _, err := leasecore.DecodeLease(item); err != nil {
					s.malformedItems = append(s.malformedItems, item)
				}
			}
		}
		sortItemsByKey(s.malformedItems)
	}
	return s
}

// sampleWindow reads the table every failover time until the window is
// covered: never more than one Scan per failover time, since the failover
// time is also the shortest span over which an unchanged counter means
// anything (docs/kcl-compat.md, Expiry: it needs two reads that far apart).
func (d *Doctor) sampleWindow(ctx context.Context) ([]sample, error) {
	return d.sampleUpTo(ctx, nil, d.samplesPerWindow())
}

// sampleUpTo adds reads to out, on the window's schedule, until it holds
// n; Progress counts them against a whole window.
func (d *Doctor) sampleUpTo(ctx context.Context, out []sample, n int) ([]sample, error) {
	for i := len(out); i < n; i++ {
		if i > 0 {
			// On schedule, but never sooner than a failover time after the
			// previous read, however long that read took.
			next := out[0].at.Add(time.Duration(i) * d.opt.FailoverTime)
			if last := out[len(out)-1].at.Add(d.opt.FailoverTime); last.After(next) {
				next = last
			}
			if err := clock.Sleep(ctx, d.clock, next.Sub(d.clock.Now())); err != nil {
				return nil, err
			}
		}
		s, err := d.takeSample(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
		if d.opt.Progress != nil {
			d.opt.Progress(i+1, d.samplesPerWindow())
		}
	}
	return out, nil
}

// samplesPerWindow: the first read plus one per failover time in the window.
func (d *Doctor) samplesPerWindow() int {
	return int(d.opt.Window/d.opt.FailoverTime) + 1
}
