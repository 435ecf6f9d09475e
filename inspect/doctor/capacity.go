package doctor

import (
	"fmt"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/leasecore"
)

// headroom over the renewal write rate that a provisioned lease table
// should have: checkpoints, takes and steals write too, and they come in
// bursts (after a deploy, every lease moves at once).
const headroom = 1.5

// writeNeed is the lease table's write rate, implied and observed.
type writeNeed struct {
	held int // leases with an owner in the last read
	// implied is held leases renewed every failover/3 − 25ms, in writes/s.
	implied float64
	// observed is every counter increment seen in the window, per second:
	// renewals, checkpoints and takes are all counter-bumping writes.
	observed float64
}

func (w writeNeed) need() float64 { return math.Max(w.implied, w.observed) }

// recommend is the WCU to provision: each lease write is one WCU (items
// are far below 1 KB), plus headroom.
func (w writeNeed) recommend() int { return int(math.Ceil(w.need() * headroom)) }

func (fc *facts) writeNeed() writeNeed {
	var w writeNeed
	for _, l := range fc.last.leases {
		if actualOwner(l) != "" {
			w.held++
		}
	}
	w.implied = float64(w.held) / fc.renewInterval().Seconds()
	if win := fc.view.window().Seconds(); win > 0 {
		var bumps int64
		for _, h := range fc.view.histories {
			for i := 1; i < len(h.obs); i++ {
				bumps += max(h.obs[i].LeaseCounter-h.obs[i-1].LeaseCounter, 0)
			}
		}
		w.observed = float64(bumps) / win
	}
	return w
}

// provisioned returns the table's billing mode and provisioned WCU (0 on demand).
func provisioned(d *ddbtypes.TableDescription) (mode string, wcu int64) {
	mode = string(ddbtypes.BillingModeProvisioned)
	if d.BillingModeSummary != nil && d.BillingModeSummary.BillingMode != "" {
		mode = string(d.BillingModeSummary.BillingMode)
	}
	if mode == string(ddbtypes.BillingModePayPerRequest) {
		return mode, 0
	}
	if d.ProvisionedThroughput != nil {
		wcu = aws.ToInt64(d.ProvisionedThroughput.WriteCapacityUnits)
	}
	return mode, wcu
}

// readNeed is the fleet's read rate of the lease table, in read units per
// second: every worker's taker scans the whole table (eventually
// consistent, as doctor's own reads are, so one of doctor's scans costs
// what one of theirs does).
type readNeed struct {
	workers int
	perScan float64 // read units of doctor's last scan, as DynamoDB answered them
	pages   int
	// interval is kcltool's adaptive taker's, kclInterval KCL 2.x's.
	interval, kclInterval time.Duration
	// estimate is workers × perScan / interval: an upper bound, as no
	// worker scans more often than kcltool's adaptive taker.
	estimate, kclEstimate float64
	// consumed is CloudWatch's peak one-minute average, when it has data.
	consumed     float64
	haveConsumed bool
}

// need is the rate to judge by: CloudWatch's when it has one, else the
// estimate.
func (r readNeed) need() float64 {
	if r.haveConsumed {
		return r.consumed
	}
	return r.estimate
}

func (r readNeed) recommend() int { return int(math.Ceil(r.need() * headroom)) }

func (r readNeed) source() string {
	if r.haveConsumed {
		return "CloudWatch peak"
	}
	return "estimate"
}

func (fc *facts) readNeed() readNeed {
	owners := map[string]bool{}
	for _, l := range fc.last.leases {
		if o := actualOwner(l); o != "" {
			owners[o] = true
		}
	}
	r := readNeed{workers: len(owners), perScan: fc.last.readUnits, pages: max(fc.last.pages, 1)}
	cfg := leasecore.Config{FailoverTime: fc.opt.FailoverTime}
	r.interval = cfg.ScanPacing(len(fc.last.leases), r.workers, r.perScan)
	r.kclInterval = cfg.KCLTakerInterval()
	if r.workers > 0 {
		r.estimate = float64(r.workers) * r.perScan / r.interval.Seconds()
		r.kclEstimate = float64(r.workers) * r.perScan / r.kclInterval.Seconds()
	}
	if consumed := fc.metrics.valuesOf(mDDBConsumedRCU, ""); len(consumed) > 0 {
		r.consumed, r.haveConsumed = maxOf(consumed)/60, true
	}
	return r
}

// provisionedRCU is the table's provisioned read capacity (0 on demand).
func provisionedRCU(d *ddbtypes.TableDescription, mode string) int64 {
	if mode == string(ddbtypes.BillingModePayPerRequest) || d.ProvisionedThroughput == nil {
		return 0
	}
	return aws.ToInt64(d.ProvisionedThroughput.ReadCapacityUnits)
}

// CapacityUse is the lease table's consumption against its capacity, as
// the table-capacity check judged it.
type CapacityUse struct {
	BillingMode string
	// ProvisionedRead and ProvisionedWrite are 0 on demand.
	ProvisionedRead, ProvisionedWrite int64
	// The fleet's consumption, units per second: CloudWatch's peak
	// one-minute average where it has data, otherwise an estimate (the
	// flags say which).
	ReadUnitsPerSecond, WriteUnitsPerSecond float64
	ReadEstimated, WriteEstimated           bool
}

// capacityUse is the fleet's consumption against the table's capacity,
// by the figures checkCapacity judges; nil when the table was not described.
func capacityUse(fc *facts) *CapacityUse {
	if fc.desc == nil {
		return nil
	}
	mode, wcu := provisioned(fc.desc)
	w, r := fc.writeNeed(), fc.readNeed()
	use := &CapacityUse{BillingMode: mode, ProvisionedRead: provisionedRCU(fc.desc, mode), ProvisionedWrite: wcu,
		WriteUnitsPerSecond: round2(w.need()), WriteEstimated: true, ReadUnitsPerSecond: round2(r.estimate), ReadEstimated: true}
	if consumed := fc.metrics.valuesOf(mDDBConsumedWCU, ""); len(consumed) > 0 {
		// A one-minute Sum over 60 is the minute's average WCU per second.
		use.WriteUnitsPerSecond, use.WriteEstimated = round2(maxOf(consumed)/60), false
	}
	if r.haveConsumed {
		use.ReadUnitsPerSecond, use.ReadEstimated = round2(r.consumed), false
	}
	return use
}

// checkCapacity compares the table's capacity with what the fleet
// consumes. Writes: the lease count and renew interval imply a rate, the
// counters show it, and CloudWatch's consumed WCU confirms it. Reads:
// CloudWatch's consumed RCU, or an estimate from the cost of a scan, the
// live workers and the taker's schedule.
func checkCapacity(fc *facts) (out []Finding) {
	d := fc.desc
	if d == nil {
		return
	}
	mode, wcu := provisioned(d)
	rcu := provisionedRCU(d, mode)
	w := fc.writeNeed()
	r := fc.readNeed()
	values := map[string]float64{
		"leasesHeld": float64(w.held), "impliedWritesPerSecond": round2(w.implied),
		"observedWritesPerSecond": round2(w.observed), "provisionedWCU": float64(wcu), "recommendedWCU": float64(w.recommend()),
		"provisionedRCU": float64(rcu), "readUnitsPerScan": round2(r.perScan), "scanIntervalSeconds": round2(r.interval.Seconds()),
		"estimatedRCU": round2(r.estimate),
	}
	lines := []string{
		fmt.Sprintf("billing mode %s", mode),
		fmt.Sprintf("%s held, renewed every %s: %.1f writes/s", plural(w.held, "lease"), roundDur(fc.renewInterval()), w.implied),
		fmt.Sprintf("counter increments seen: %.1f writes/s over %s", w.observed, roundDur(fc.view.window())),
	}
	peak := 0.0
	if consumed := fc.metrics.valuesOf(mDDBConsumedWCU, ""); len(consumed) > 0 {
		// A one-minute Sum over 60 is the minute's average WCU per second.
		peak = maxOf(consumed) / 60
		values["peakConsumedWCU"] = round2(peak)
		lines = append(lines, fmt.Sprintf("peak consumed (CloudWatch, 1-minute average): %.1f WCU", peak))
	}
	for _, gsi := range d.GlobalSecondaryIndexes {
		if gsi.ProvisionedThroughput != nil && aws.ToInt64(gsi.ProvisionedThroughput.WriteCapacityUnits) > 0 {
			lines = append(lines, fmt.Sprintf("index %s: %d WCU provisioned", aws.ToString(gsi.IndexName), aws.ToInt64(gsi.ProvisionedThroughput.WriteCapacityUnits)))
		}
	}
	lines = append(lines, fmt.Sprintf("reads (estimate): %s × %.1f RCU a scan (%s) every %s (kcltool's adaptive taker) = %.2f RCU/s; at KCL 2.x's taker interval (%s): %.2f RCU/s",
		plural(r.workers, "worker"), r.perScan, plural(r.pages, "page"), roundDur(r.interval), r.estimate, roundDur(r.kclInterval), r.kclEstimate))
	if r.haveConsumed {
		values["peakConsumedRCU"] = round2(r.consumed)
		// doctor's own scans are in CloudWatch's figure too: say how much.
		lines = append(lines, fmt.Sprintf("peak consumed (CloudWatch, 1-minute average): %.1f RCU, of which doctor's own reads about %.2f",
			r.consumed, r.perScan/fc.opt.FailoverTime.Seconds()))
	}
	f := Finding{ID: FindTableCapacity, Severity: SeverityInfo, Evidence: Evidence{Lines: lines, Values: values}}
	if wcu == 0 {
		f.Summary = fmt.Sprintf("lease table is on demand; renewing %s takes about %.1f writes/s", plural(w.held, "lease"), w.implied)
		f.Cause = "on-demand tables scale with the fleet; they still throttle on a hot partition or at the table's maximum on-demand throughput"
		f.Fix = "nothing"
		if od := d.OnDemandThroughput; od != nil && aws.ToInt64(od.MaxWriteRequestUnits) > 0 && float64(aws.ToInt64(od.MaxWriteRequestUnits)) < w.need()*headroom {
			f.Severity = SeverityWarn
			f.Summary = fmt.Sprintf("lease table's on-demand write limit %d is below the %d writes/s the fleet may need", aws.ToInt64(od.MaxWriteRequestUnits), w.recommend())
			f.Cause = "a maximum on-demand throughput caps the table; renewals beyond it are throttled and leases are lost"
			f.Fix = fmt.Sprintf("raise MaxWriteRequestUnits to at least %d or remove the limit", w.recommend())
		}
		if od := d.OnDemandThroughput; f.Severity == SeverityInfo && od != nil && aws.ToInt64(od.MaxReadRequestUnits) > 0 &&
			float64(aws.ToInt64(od.MaxReadRequestUnits)) < r.need()*headroom {
			f.Severity = SeverityWarn
			f.Summary = fmt.Sprintf("lease table's on-demand read limit %d is below the %d read units/s the fleet's scans may take (%s)", aws.ToInt64(od.MaxReadRequestUnits), r.recommend(), r.source())
			f.Cause = "a maximum on-demand throughput caps the table; the takers' scans beyond it are throttled, and expired leases are taken late"
			f.Fix = fmt.Sprintf("raise MaxReadRequestUnits to at least %d or remove the limit", r.recommend())
		}
		out = append(out, f)
		return
	}
	f.Summary = fmt.Sprintf("lease table is provisioned with %d WCU; renewing %s takes about %.1f writes/s", wcu, plural(w.held, "lease"), w.implied)
	f.Cause = "provisioned capacity covers the renewals with headroom"
	f.Fix = "nothing"
	need := w.need()
	switch {
	case float64(wcu) < need:
		f.Severity = SeverityCritical
		f.Summary = fmt.Sprintf("lease table has %d WCU but the fleet needs about %.1f writes/s (%s renewed every %s)", wcu, need, plural(w.held, "lease"), roundDur(fc.renewInterval()))
		f.Cause = "every renewal is a write; with fewer WCU than renewals per second DynamoDB throttles them (burst capacity hides it for minutes at most), leases expire on live workers and move back and forth"
	case float64(wcu) < need*headroom:
		f.Severity = SeverityWarn
		f.Summary = fmt.Sprintf("lease table has %d WCU for %.1f writes/s: less than %.0f%% headroom", wcu, need, (headroom-1)*100)
		f.Cause = "checkpoints, takes and the bursts after a deploy come on top of the renewals; with little headroom they get throttled"
	case peak >= 0.8*float64(wcu):
		f.Severity = SeverityWarn
		f.Summary = fmt.Sprintf("lease table consumed up to %.1f of its %d WCU", peak, wcu)
		f.Cause = "consumption near the provisioned capacity: the next burst is throttled"
	}
	if f.Severity > SeverityInfo {
		f.Fix = fmt.Sprintf("switch the lease table to on-demand (KCL's default since 2.3.7), or raise its WCU to at least %d", w.recommend())
	}
	fc.judgeReads(&f, rcu, r)
	out = append(out, f)
	return
}

// judgeReads compares the provisioned RCU with the fleet's reads; a worse
// read verdict than the write one takes the finding's summary, cause and
// fix.
func (fc *facts) judgeReads(f *Finding, rcu int64, r readNeed) {
	need := r.need()
	var sev Severity
	var summary, cause string
	switch {
	case rcu <= 0:
		return
	case float64(rcu) < need:
		sev = SeverityCritical
		summary = fmt.Sprintf("lease table has %d RCU but the fleet's scans take about %.1f read units/s (%s)", rcu, need, r.source())
		cause = "every worker's taker scans the whole table, half a read unit per 4 KB of leases; throttled scans leave expired leases untaken and the fleet unbalanced for longer, and delay shard sync"
	case need >= 0.8*float64(rcu):
		sev = SeverityWarn
		summary = fmt.Sprintf("lease table's reads reach %.1f of its %d RCU (%s)", need, rcu, r.source())
		cause = "consumption near the provisioned read capacity: more leases or workers, or a burst of takeovers, and the takers' scans are throttled"
	}
	if sev <= f.Severity {
		return
	}
	f.Severity, f.Summary, f.Cause = sev, summary, cause
	f.Fix = fmt.Sprintf("switch the lease table to on-demand (KCL's default since 2.3.7), or raise its RCU to at least %d", r.recommend())
}
