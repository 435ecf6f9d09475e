package inspect

import (
	"context"
	"strings"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

// diagnosis is one report in the making: the window's reads, what the
// stream and CloudWatch said, and the findings so far.
type diagnosis struct {
	d       *Doctor
	opt     DoctorOptions
	now     time.Time
	view    *fleetView
	last    sample
	rows    []LeaseRow // the last read, states derived against the one before
	kcl3    kcl3State
	lag     *Lag // nil when the stream was not probed
	metrics *metricSet
	skipped []string // checks not run, with why
	found   []Finding
}

func (g *diagnosis) add(f Finding) {
	if f.Evidence.Values == nil {
		f.Evidence.Values = map[string]float64{}
	}
	g.found = append(g.found, f)
}

func (g *diagnosis) skip(check, why string) { g.skipped = append(g.skipped, check+": "+why) }

// diagnose turns a window of reads into a report: first the reads that need
// the stream and CloudWatch, then every check.
func (d *Doctor) diagnose(ctx context.Context, samples []sample) (*Report, error) {
	g := &diagnosis{d: d, opt: d.opt, view: newFleetView(samples, d.opt.FailoverTime), last: samples[len(samples)-1]}
	var before map[string]leasecore.Lease
	if len(samples) > 1 {
		before = samples[len(samples)-2].byKey
	}
	g.rows = deriveRows(g.last.leases, before)
	kcl3, err := d.readKCL3(ctx, samples)
	if err != nil {
		return nil, err
	}
	g.kcl3 = kcl3
	if err := g.probeStream(ctx); err != nil {
		return nil, err
	}
	g.readMetrics(ctx)
	g.now = d.clock.Now()

	g.checkMalformed()
	g.checkLiveness()
	g.checkChurn()
	g.checkStuck()
	g.checkShardLag()
	g.checkStreamLeases()
	g.checkBlocked()
	g.checkExpired()
	g.checkUnassigned()
	g.checkImbalance()
	g.checkKCL3()
	g.checkCapacity()
	g.checkThrottling()
	g.checkIteratorAge()
	g.checkKCLMetrics()
	g.checkSkipped()
	sortFindings(g.found)

	workers := map[string]bool{}
	for _, l := range g.last.leases {
		if o := actualOwner(l); o != "" {
			workers[o] = true
		}
	}
	return &Report{
		App: d.opt.App, Table: d.opt.Table, Stream: d.opt.Stream,
		Window: g.view.window(), FailoverTime: d.opt.FailoverTime,
		Started: samples[0].at, Ended: g.last.at, Reads: len(samples),
		Leases: len(g.last.leases), Workers: len(workers), KCL3: g.kcl3.present,
		Findings: g.found, Cost: d.meter.take(),
	}, nil
}

// checkMalformed reports items no KCL worker can read.
func (g *diagnosis) checkMalformed() {
	if len(g.last.malformed) == 0 {
		return
	}
	var lines []string
	for _, m := range g.last.malformed {
		lines = append(lines, m.Error())
	}
	g.add(Finding{
		ID: FindMalformed, Severity: SeverityWarn,
		Summary:  plural(len(lines), "lease item") + " cannot be read as a KCL lease",
		Evidence: Evidence{Lines: lines, Values: map[string]float64{"items": float64(len(lines))}},
		Cause:    "an item was written by hand or by a tool that does not follow the KCL serializer; KCL 2.x workers fail their whole lease listing on such an item (docs/kcl-compat.md, KCL 3.x items)",
		Fix:      "inspect the items with kcltool leases ls and fix or delete them; restore from an export if one exists",
	})
}

// checkSkipped says which checks did not run, so "no findings" is never
// read as "all clear" when it only means "not looked at".
func (g *diagnosis) checkSkipped() {
	if len(g.skipped) == 0 {
		return
	}
	g.add(Finding{
		ID: FindChecksSkipped, Severity: SeverityInfo,
		Summary:  "skipped: " + strings.Join(g.skipped, "; "),
		Evidence: Evidence{Lines: g.skipped},
		Cause:    "the data these checks need was not available",
		Fix:      "give what is missing (for example --stream) to run them",
	})
}

// takerInterval is KCL 2.x's taker interval, 2 × (failover + 25ms): the
// longest a live fleet leaves an available lease untaken.
func (g *diagnosis) takerInterval() time.Duration {
	return leasecore.Config{FailoverTime: g.opt.FailoverTime}.KCLTakerInterval()
}

// renewInterval is KCL's renewal period, failover/3 − 25ms.
func (g *diagnosis) renewInterval() time.Duration {
	return leasecore.Config{FailoverTime: g.opt.FailoverTime}.WithDefaults().RenewInterval
}

// roundDur prints durations without noise: whole seconds from 10s, tenths below.
func roundDur(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}
