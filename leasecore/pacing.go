package leasecore

import "time"

// ScanBudgetRatio is how much the adaptive taker may spend on scans, as a
// share of the renewals the worker's leases need anyway.
//
// The request budget, per lease and minute, with R = 60s/RenewInterval
// renewals per lease, L leases, W workers and s scan requests per worker
// and minute, is R + s·W/L. KCL 2.x scans once per 2·(failover+ε) (s_KCL),
// so it spends R + s_KCL·W/L. Adaptive pacing lets s grow to
// max(s_KCL, ScanBudgetRatio·R·L/W), which keeps the total at most
// max(KCL's own rate, (1+ScanBudgetRatio)·R): with few leases per worker it
// scans exactly as often as KCL; with many, the scans (one request per MiB
// of table, whatever the lease count) are cheap per lease and it scans often
// enough to notice a dead worker within about a second of its leases
// expiring. Checkpoint writes are the application's and are the same under
// both. docs/run.md works the budget out for the default timings.
const ScanBudgetRatio = 0.02

// ScanPacing returns the wait between taker scans for a table of leases
// leases shared by workers workers, where one scan costs pages requests.
// A fixed TakerInterval wins; otherwise the interval follows the budget
// above, clamped between MinTakerInterval and KCLTakerInterval.
func (c Config) ScanPacing(leases, workers, pages int) time.Duration {
	c = c.WithDefaults()
	if c.TakerInterval > 0 {
		return c.TakerInterval
	}
	kcl, fastest := c.KCLTakerInterval(), c.MinTakerInterval()
	if leases <= 0 || workers <= 0 {
		return kcl
	}
	pages = max(pages, 1)
	renewalsPerMinute := float64(time.Minute) / float64(c.RenewInterval) * float64(leases) / float64(workers)
	scansPerMinute := max(float64(time.Minute)/float64(kcl), ScanBudgetRatio*renewalsPerMinute)
	interval := time.Duration(float64(pages) * float64(time.Minute) / scansPerMinute)
	return min(max(interval, fastest), kcl)
}
