package doctor

import (
	"context"
	"errors"

	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/leasecore"
)

// probeStream joins the last read with the stream (checkpoint diff's rows,
// one GetRecords per open shard) and probes the few leases the diff leaves
// unmeasured that doctor needs: a renewed lease still at TRIM_HORIZON, and
// a closed parent that holds its children back.
func (g *diagnosis) probeStream(ctx context.Context) error {
	if g.d.kin == nil {
		g.skip("stream checks (stuck shards, lag, missing leases, drained parents)", "no Kinesis access")
		return nil
	}
	now := g.d.clock.Now()
	if g.given == nil && g.d.watching && g.d.lag != nil && now.Sub(g.d.lagAt) < g.opt.Window {
		g.lag = g.d.lag
		return nil
	}
	lag, err := g.given, error(nil)
	if lag == nil {
		scan := leasecore.ScanResult{Leases: g.last.leases}
		// A shard whose probe fails is kept, not fatal: that failure is what
		// checkKinesisStuck reports when the shard's worker is stuck on it.
		lag, err = inspect.DiffLeases(ctx, probeClient{g.d.kin}, g.opt.Table, scan, inspect.LagOptions{
			Stream: g.opt.Stream, Concurrency: g.opt.Concurrency, Retry: g.opt.Retry, Clock: g.d.clock,
			ProbeTimeout: g.opt.ProbeTimeout, KeepProbeErrors: true,
		})
	}
	if err != nil {
		// A single-stream table without --stream: doctor skips the stream
		// checks instead of failing.
		if errors.Is(err, inspect.ErrStreamRequired) {
			g.skip("stream checks (stuck shards, lag, missing leases, drained parents)", "--stream not given")
			return nil
		}
		return err
	}
	g.lag = lag
	var extra []error
	for i := range lag.Rows {
		r := &lag.Rows[i]
		if r.Lease == nil || r.MillisBehindLatest != nil || !g.wantsProbe(r) {
			continue
		}
		behind, read, err := inspect.ProbeWithin(ctx, probeClient{g.d.kin}, r, g.d.clock, g.opt.ProbeTimeout)
		if read {
			lag.Reads++
		}
		if err != nil {
			if ctx.Err() != nil {
				extra = append(extra, err)
			} else {
				r.ProbeErr = inspect.ProbeError(read, err)
			}
			continue
		}
		r.MillisBehindLatest = &behind
	}
	if err := errors.Join(extra...); err != nil {
		return err
	}
	if g.given == nil {
		g.d.lag, g.d.lagAt = lag, now
	}
	return nil
}

// wantsProbe: the rows checkpoint diff leaves unmeasured that doctor needs.
func (g *diagnosis) wantsProbe(r *inspect.LagRow) bool {
	switch r.State {
	case inspect.LagNotStarted:
		// only TRIM_HORIZON has records "behind" it that a worker should read
		return r.Lease.Checkpoint.SequenceNumber == leasecore.TRIM_HORIZON && actualOwner(*r.Lease) != ""
	case inspect.LagClosedUndrained:
		return !leasecore.IsSentinel(r.Lease.Checkpoint.SequenceNumber) && g.blocksAChild(r.Lease.LeaseKey)
	}
	return false
}

func (fc *facts) blocksAChild(parentKey string) bool {
	for _, row := range fc.rows {
		for _, b := range row.BlockedBy {
			if b.LeaseKey == parentKey {
				return true
			}
		}
	}
	return false
}

// lagRow finds the stream row of a lease key.
func (fc *facts) lagRow(key string) *inspect.LagRow {
	if fc.lag == nil {
		return nil
	}
	for i := range fc.lag.Rows {
		if r := &fc.lag.Rows[i]; r.Lease != nil && r.Lease.LeaseKey == key {
			return r
		}
	}
	return nil
}
