package leasecore

import (
	"math"
	"time"
)

// The taker's schedule, priced in the capacity units DynamoDB bills (a read
// unit per 4 KB scanned, half that for the taker's eventually consistent
// scans; a write unit per renewal of a lease item under 1 KB), not in
// requests: a scan of a 3 MB table is three requests but about 375 read
// units. docs/scale.md has the measurements behind these rules.
//
//   - A table of more than SmallTableLeases leases is scanned at KCL 2.x's
//     interval, 2 × (failover + ε), never more often by schedule: one scan
//     costs the table's size whatever the lease count, and scanning faster
//     than the KCL there costs more read units than the KCL's whole fleet.
//   - A small table may be scanned faster, as far as the extra read units
//     stay within ScanBudgetRatio of the write units the worker's renewals
//     cost anyway: fast takeover needs frequent scans, and there they are
//     cheap.
//   - Between scheduled scans the taker wakes only for a reason seen in the
//     last scan (nextRun): a lease that missed renewals, whose expiry it
//     then checks as soon as the failover time allows; or, right after
//     stealing while still below its target, to steal the next lease.
//     After a throttled run it does neither: extra scans are what a
//     throttled table can least afford.
const (
	SmallTableLeases = 100
	ScanBudgetRatio  = 0.04
)

// ScanPacing returns the wait between taker scans for a table of leases
// leases shared by workers workers, where one scan costs scanUnits read
// units. A fixed TakerInterval wins; otherwise the rules above, clamped
// between MinTakerInterval and KCLTakerInterval.
func (c Config) ScanPacing(leases, workers int, scanUnits float64) time.Duration {
	c = c.WithDefaults()
	if c.TakerInterval > 0 {
		return c.TakerInterval
	}
	kcl, fastest := c.KCLTakerInterval(), c.MinTakerInterval()
	if leases <= 0 || workers <= 0 || leases > SmallTableLeases {
		return kcl
	}
	scanUnits = max(scanUnits, 0.5)
	renewalUnitsPerMinute := float64(time.Minute) / float64(c.RenewInterval) * float64(leases) / float64(workers)
	scansPerMinute := max(float64(time.Minute)/float64(kcl), ScanBudgetRatio*renewalUnitsPerMinute/scanUnits)
	interval := time.Duration(float64(time.Minute) / scansPerMinute)
	return min(max(interval, fastest), kcl)
}

// scanReadUnits estimates what an eventually consistent scan of these
// leases costs: their item sizes as DynamoDB counts them (attribute names
// plus values), in 4 KB read units rounded up per page, halved. It is only
// needed, and only computed, for small tables.
func scanReadUnits(leases []Lease, pages int) float64 {
	if len(leases) > SmallTableLeases {
		return 0
	}
	size := 0
	for _, l := range leases {
		size += ItemSize(EncodeLease(l))
	}
	return math.Max(math.Ceil(float64(size)/4096), float64(max(pages, 1))) / 2
}
