package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	// summaries are the streams' descriptions by name (consumers.go), asked
	// once per report.
	summaries map[string]*kinesis.DescribeStreamSummaryOutput
}

func (g *diagnosis) skip(check, why string) { g.skipped = append(g.skipped, check+": "+why) }

// diagnose turns a window of reads into a report: first the gather phase
// (the reads that need the stream and CloudWatch, then the facts derived
// from them), then every check of the table over those facts.
func (d *Doctor) diagnose(ctx context.Context, samples []sample) (*Report, error) {
	fc, err := d.gather(ctx, samples)
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
		Findings: found, Cost: d.meter.take(), Capacity: capacityUse(fc),
	}, nil
}

// gather reads what the checks need beyond the window's reads and returns
// the facts, complete: nothing changes them afterwards.
func (d *Doctor) gather(ctx context.Context, samples []sample) (*facts, error) {
	g := &diagnosis{d: d}
	g.opt, g.desc = d.opt, d.desc
	g.view, g.last = newFleetView(samples, d.opt.FailoverTime), samples[len(samples)-1]
	var before map[string]leasecore.Lease
	if len(samples) > 1 {
		before = samples[len(samples)-2].byKey
	}
	g.rows = inspect.LeaseRows(g.last.leases, before)
	kcl3, err := d.readKCL3(ctx, samples)
	if err != nil {
		return nil, err
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

// checkMalformed reports items no KCL worker can read, one finding per
// item, each with the command that repairs it. It is critical: the item's
// shard is read by no worker until it is repaired (takers skip it, shard
// sync cannot create it again), and a KCL 2.x worker fails its whole lease
// listing on it.
func checkMalformed(fc *facts) (out []Finding) {
	seen := map[string]bool{}
	for _, item := range fc.last.malformedItems {
		rep := RepairLeaseItem(fc.opt.Table, item)
		seen[rep.Key] = true
		raw, _ := leasecore.MarshalItemJSON(item)
		lines := []string{rep.Problem, "item: " + string(raw)}
		var fix string
		if rep.Repaired != nil {
			lines = append(lines, rep.Changes...)
			fix = "write the item back with the KCL's types; the write applies only if the item still exists with the leaseCounter and the attributes it repairs as read here (if it fails with ConditionalCheckFailedException, the item changed: run doctor again):\n    " + rep.Command
		} else {
			lines = append(lines, "cannot repair: "+rep.Unrecoverable)
			fix = "the value cannot be recovered from the item: write the attribute by hand in the KCL's type (docs/kcl-compat.md, Attributes), for a checkpoint the sequence number the shard was processed up to; or delete the item so that the next shard sync creates the lease again at the application's initial position (conditional on the item being unchanged):\n    " + rep.Command
		}
		out = append(out, Finding{
			ID: FindMalformed, Severity: SeverityCritical,
			Summary:  fmt.Sprintf("lease %q cannot be read as a KCL lease: no worker reads its shard", rep.Key),
			Evidence: Evidence{Lines: lines, Shards: []string{rep.Key}, Values: map[string]float64{"items": 1}},
			Cause:    "the item was written by hand or by a tool that does not follow the KCL serializer; takers skip it and shard sync cannot create the lease again, so its shard stays unread, and KCL 2.x workers fail their whole lease listing on it (docs/kcl-compat.md, KCL 3.x items)",
			Fix:      fix,
		})
	}
	// Items without a raw copy (none in practice): still reported.
	for _, m := range fc.last.malformed {
		var me *leasecore.MalformedError
		if errors.As(m, &me) && seen[me.LeaseKey] {
			continue
		}
		out = append(out, Finding{
			ID: FindMalformed, Severity: SeverityCritical,
			Summary:  "a lease item cannot be read as a KCL lease",
			Evidence: Evidence{Lines: []string{m.Error()}, Values: map[string]float64{"items": 1}},
			Cause:    "an item was written by hand or by a tool that does not follow the KCL serializer",
			Fix:      "inspect it with aws dynamodb get-item and write it back in the KCL's types, or delete it",
		})
	}
	return
}

// checkSkipped says which checks did not run, so "no findings" is never
// read as "all clear" when it only means "not looked at".
func checkSkipped(fc *facts) (out []Finding) {
	if len(fc.skipped) == 0 {
		return
	}
	out = append(out, Finding{
		ID: FindChecksSkipped, Severity: SeverityInfo,
		Summary:  "skipped: " + strings.Join(fc.skipped, "; "),
		Evidence: Evidence{Lines: fc.skipped},
		Cause:    "the data these checks need was not available",
		Fix:      "give what is missing (for example --stream) to run them",
	})
	return
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
