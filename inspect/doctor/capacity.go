package doctor

import (
	"fmt"
	"math"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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

func (g *diagnosis) writeNeed() writeNeed {
	var w writeNeed
	for _, l := range g.last.leases {
		if actualOwner(l) != "" {
			w.held++
		}
	}
	w.implied = float64(w.held) / g.renewInterval().Seconds()
	if win := g.view.window().Seconds(); win > 0 {
		var bumps int64
		for _, h := range g.view.histories {
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

// checkCapacity compares the table's write capacity with the write rate the
// fleet needs: the lease count and renew interval imply it, the counters
// show it, and CloudWatch's consumed WCU confirms it.
func (g *diagnosis) checkCapacity() {
	d := g.d.desc
	if d == nil {
		return
	}
	mode, wcu := provisioned(d)
	w := g.writeNeed()
	values := map[string]float64{
		"leasesHeld": float64(w.held), "impliedWritesPerSecond": round2(w.implied),
		"observedWritesPerSecond": round2(w.observed), "provisionedWCU": float64(wcu), "recommendedWCU": float64(w.recommend()),
	}
	lines := []string{
		fmt.Sprintf("billing mode %s", mode),
		fmt.Sprintf("%s held, renewed every %s: %.1f writes/s", plural(w.held, "lease"), roundDur(g.renewInterval()), w.implied),
		fmt.Sprintf("counter increments seen: %.1f writes/s over %s", w.observed, roundDur(g.view.window())),
	}
	peak := 0.0
	if consumed := g.metrics.valuesOf(mDDBConsumedWCU, ""); len(consumed) > 0 {
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
		g.add(f)
		return
	}
	f.Summary = fmt.Sprintf("lease table is provisioned with %d WCU; renewing %s takes about %.1f writes/s", wcu, plural(w.held, "lease"), w.implied)
	f.Cause = "provisioned capacity covers the renewals with headroom"
	f.Fix = "nothing"
	need := w.need()
	switch {
	case float64(wcu) < need:
		f.Severity = SeverityCritical
		f.Summary = fmt.Sprintf("lease table has %d WCU but the fleet needs about %.1f writes/s (%s renewed every %s)", wcu, need, plural(w.held, "lease"), roundDur(g.renewInterval()))
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
	g.add(f)
}
