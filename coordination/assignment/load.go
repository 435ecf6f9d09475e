package assignment

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/leasecore"
)

// LeaseTableScanSegmentResolver's sizing: a segment per 0.2 GB of table,
// between 1 and 32, re-read every 2 hours; 10 when the table cannot be
// described.
const (
	bytesPerSegment    = 0.2 * (1 << 30)
	maxSegments        = 32
	fallbackSegments   = 10
	segmentsCacheValid = 2 * time.Hour
	// leaseReadUnits is what one lease item of about 300 bytes costs in
	// an eventually consistent scan (4 KB per unit, halved): used only to
	// size the pages of a paced scan.
	leaseReadUnits = 300.0 / 4096 / 2
)

type segmentCache struct {
	n     int
	until time.Time
}

// load is MigrationAwareLAMDataManager.loadData: the lease table's leases
// and metrics items from one scan, and the side table's metrics until the
// table migration is COMPLETE. Malformed lease items are skipped (the KCL
// logs them as deserialization failures).
func (m *Manager) load(ctx context.Context, st coordination.State) ([]*lease, []coordination.WorkerMetrics, float64, error) {
	ctx = leasecore.WithCapacityOp(ctx, leasecore.OpLeaderScan)
	opt := leasecore.ScanOptions{
		Segments: m.segmentCount(ctx),
		Sleep:    func(ctx context.Context, d time.Duration) error { return clock.Sleep(ctx, m.clock, d) },
	}
	if m.cfg.ScanRate > 0 {
		p := &pacer{rate: m.cfg.ScanRate, clock: m.clock}
		opt.Pace = p.wait
		// Pages of about a quarter of a second's units, so that the
		// pacing is smooth rather than a 1 MB page (128 units) at once.
		opt.PageSize = int32(min(max(m.cfg.ScanRate/4/leaseReadUnits, 25), 10000))
	}
	scan, err := leasecore.ScanTable(ctx, m.api, m.t.Lease, opt)
	if err != nil {
		return nil, nil, scan.ReadUnits, fmt.Errorf("scan the lease table: %w", err)
	}
	for _, e := range scan.Malformed {
		m.log.Warn("lease item not assignable: it does not decode", "err", e)
	}
	metrics, err := coordination.WorkerMetricsFromScan(ctx, m.api, m.t, st, scan.NonLeases)
	if err != nil {
		return nil, nil, scan.ReadUnits, fmt.Errorf("read the workers' metrics: %w", err)
	}
	out := make([]*lease, len(scan.Leases))
	for i := range scan.Leases {
		out[i] = &lease{seen: scan.Leases[i]}
	}
	return out, metrics, scan.ReadUnits, nil
}

// segmentCount is LeaseTableScanSegmentResolver.resolveTotalSegments.
func (m *Manager) segmentCount(ctx context.Context) int {
	if m.cfg.ScanSegments > 0 {
		return m.cfg.ScanSegments
	}
	now := m.clock.Now()
	if m.segments.n > 0 && now.Before(m.segments.until) {
		return m.segments.n
	}
	n := m.segments.n
	if n == 0 {
		n = fallbackSegments
	}
	d, err := leasecore.DescribeTable(ctx, m.api, m.t.Lease)
	if err != nil || d == nil {
		m.log.Warn("cannot describe the lease table to size its scan", "segments", n, "err", err)
		return n
	}
	size := float64(0)
	if d.TableSizeBytes != nil {
		size = float64(*d.TableSizeBytes)
	}
	n = min(max(int(math.Ceil(size/bytesPerSegment)), 1), maxSegments)
	m.segments = segmentCache{n: n, until: now.Add(segmentsCacheValid)}
	return n
}

// pacer spreads a scan's read units at rate units per second over all
// its segments: after each page, the scan waits until the units read so
// far are paid for.
type pacer struct {
	rate  float64
	clock clock.Clock
	mu    sync.Mutex
	next  time.Time
}

func (p *pacer) wait(ctx context.Context, units float64) error {
	p.mu.Lock()
	now := p.clock.Now()
	if p.next.Before(now) {
		p.next = now
	}
	p.next = p.next.Add(time.Duration(units / p.rate * float64(time.Second)))
	d := p.next.Sub(now)
	p.mu.Unlock()
	return clock.Sleep(ctx, p.clock, d)
}
