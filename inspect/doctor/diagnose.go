package doctor

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/leasecore"
)

// diagnosis is one report in the making: the gather phase's reads of the
// stream and CloudWatch fill its facts, which the checks then only read.
type diagnosis struct {
	facts
	d *Doctor
	// given is the stream join a Follower's caller made of the last read
	// (follow.go); nil when doctor probes the stream itself.
	given *inspect.Lag
	// summaries are the streams' descriptions by name (consumers.go), asked
	// once per report.
	summaries map[string]*kinesis.DescribeStreamSummaryOutput
}

func (g *diagnosis) skip(check, why string) { g.skipped = append(g.skipped, check+": "+why) }

// diagnose turns a window of reads into a report: first the gather phase
// (the reads that need the stream and CloudWatch, then the facts derived
// from them), then every check of the table over those facts.
func (d *Doctor) diagnose(ctx context.Context, samples []sample) (*Report, error) {
	return d.diagnoseWith(ctx, samples, nil)
}

// diagnoseWith is diagnose with the last read's stream join made already
// (given; nil: doctor probes the stream itself).
func (d *Doctor) diagnoseWith(ctx context.Context, samples []sample, given *inspect.Lag) (*Report, error) {
	fc, err := d.gather(ctx, samples, given)
	if err != nil {
		return nil, err
	}
	found := runChecks(fc, checks)

	workers := map[string]bool{}
	for _, l := range fc.last.leases {
		if o := actualOwner(l); o != "" {
			workers[o] = true
		}
	}
	return &Report{
		App: d.opt.App, Table: d.opt.Table, Stream: d.opt.Stream,
		Window: fc.view.window(), FailoverTime: d.opt.FailoverTime,
		Started: samples[0].at, Ended: fc.last.at, Reads: len(samples),
		Leases: len(fc.last.leases), Workers: len(workers), KCL3: fc.kcl3.present,
		Findings: found, Cost: d.meter.take(), Capacity: capacityUse(fc), Coordination: coordinationOf(fc),
	}, nil
}

// coordinationOf is the report's KCL 3.x state for views that show it.
func coordinationOf(fc *facts) *inspect.KCL3 {
	if !fc.kcl3.present {
		return nil
	}
	k := &inspect.KCL3{State: fc.kcl3.coord, Metrics: fc.kcl3.metrics}
	if l := fc.last.lock; l != nil {
		k.Lock = *l
	}
	return k
}

// gather reads what the checks need beyond the window's reads and returns
// the facts, complete: nothing changes them afterwards.
func (d *Doctor) gather(ctx context.Context, samples []sample, given *inspect.Lag) (*facts, error) {
	g := &diagnosis{d: d, given: given}
	g.opt, g.desc = d.opt, d.desc
	g.view, g.last = newFleetView(samples, d.opt.FailoverTime), samples[len(samples)-1]
	var before map[string]leasecore.Lease
	if len(samples) > 1 {
		before = samples[len(samples)-2].byKey
	}
	g.rows = inspect.LeaseRows(g.last.leases, before)
	kcl3, err := d.readKCL3(ctx, samples)
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		// A side table the caller may not read does not end the report:
		// the KCL 3.x checks say they were not run, and why.
		g.skip("KCL 3.x checks", err.Error())
	}
	g.kcl3 = kcl3
	if err := g.probeStream(ctx); err != nil {
		return nil, err
	}
	g.readConsumers(ctx)
	g.readMetrics(ctx)
	g.now = d.clock.Now()
	g.derive()
	fc := g.facts
	return &fc, nil
}

// takerInterval is KCL 2.x's taker interval, 2 × (failover + 25ms): the
// longest a live fleet leaves an available lease untaken.
func (fc *facts) takerInterval() time.Duration {
	return leasecore.Config{FailoverTime: fc.opt.FailoverTime}.KCLTakerInterval()
}

// renewInterval is KCL's renewal period, failover/3 − 25ms.
func (fc *facts) renewInterval() time.Duration {
	return leasecore.Config{FailoverTime: fc.opt.FailoverTime}.WithDefaults().RenewInterval
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
