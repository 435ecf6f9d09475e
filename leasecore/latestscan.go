package leasecore

import (
	"sync"
	"time"
)

// latestScan keeps the taker's last complete scan of the table, every
// item as read (before Options.Include), for the runner's shard sync: the
// taker reads the whole table every 20 s or more often anyway, and a shard
// sync that read it again every minute on every worker would cost the
// fleet more read units than KCL 2.x's leader-only audit (docs/scale.md).
type latestScan struct {
	mu  sync.Mutex
	res ScanResult
	at  time.Time
}

func (s *latestScan) set(res ScanResult, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.res, s.at = res, at
}

// LatestScan returns the taker's last complete scan of the lease table
// (every lease, also those Options.Include leaves out, with the malformed
// items and non-lease items) if it ended no more than maxAge ago. The scan
// was eventually consistent and may be up to maxAge old: a caller that
// would write because of something missing from it must read again first.
// The result is shared: do not change it.
func (c *Coordinator) LatestScan(maxAge time.Duration) (ScanResult, bool) {
	c.latest.mu.Lock()
	defer c.latest.mu.Unlock()
	if c.latest.at.IsZero() || c.clock.Now().Sub(c.latest.at) > maxAge {
		return ScanResult{}, false
	}
	return c.latest.res, true
}
