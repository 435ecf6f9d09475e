package doctor

import (
	"fmt"
	"sort"
	"time"

	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/leasecore"
)

// checkStuck finds the poison-record pattern: the lease is renewed all
// window long, so its worker is alive and holds it, but the checkpoint never
// moves while the shard has records after it. When the worker's own metrics
// show that its reads of the shard fail (KinesisDataFetcher.getRecords.Success
// mostly 0), the cause is Kinesis, not the handler, and the finding says so.
func checkStuck(fc *facts) (out []Finding) {
	if fc.lag == nil || len(fc.view.samples) < 2 {
		return
	}
	var handler, reads []*inspect.LagRow
	for _, r := range fc.stuckRows() {
		if _, failing := fc.readsFailing(r.Lease.LeaseKey); failing {
			reads = append(reads, r)
		} else {
			handler = append(handler, r)
		}
	}
	if len(handler) > 0 {
		out = append(out, addStuck(fc, handler, "",
			"the record processor keeps failing or hanging on the records right after the checkpoint — typically a poison record retried forever — so the worker holds the shard but never checkpoints past it; a handler slower than the window looks the same. Kinesis answered doctor's own read at the checkpoint, so reading is not what holds it up, unless the worker's own path to Kinesis fails (its log then says \"reads of the shard are failing\")",
			"find the failing record in the worker's logs (the shard and checkpoint above); fix the handler, or let it give up on the record: kcltool run --max-retries N or --max-record-age D with --bisect-on-error and --on-failure DIR; "+
				"in a Java KCL processor, catch the exception in processRecords, park the record and checkpoint past it")...)
	}
	if len(reads) > 0 {
		out = append(out, addStuck(fc, reads, "Kinesis reads failing; ",
			"the worker's GetRecords calls on these shards fail or time out (its KinesisDataFetcher.getRecords.Success metric is mostly 0): it keeps renewing the lease while it retries, so no other worker takes the shard over; the handler is not what holds it up",
			"look in the worker's log for \"reads of the shard are failing\" and the error it names; check the network path to Kinesis (VPC endpoint, proxy, NAT, DNS), kinesis:GetRecords and kinesis:GetShardIterator permissions, and kms:Decrypt for an encrypted stream; "+
				"kcltool run gives up on a call after --kinesis-timeout and retries it")...)
	}
	return
}

// addStuck reports stuck rows with a cause.
func addStuck(fc *facts, rows []*inspect.LagRow, what, cause, fix string) (out []Finding) {
	window := fc.view.window()
	sev := SeverityWarn
	var lines, shards, workers []string
	worst := int64(0)
	for _, r := range rows {
		h := fc.view.history(r.Lease.LeaseKey)
		behind := time.Duration(*r.MillisBehindLatest) * time.Millisecond
		// A first unprocessed record older than the window was there all
		// along: the worker had the whole window and did not get past it.
		if behind >= window {
			sev = SeverityCritical
		}
		worst = max(worst, *r.MillisBehindLatest)
		owner := actualOwner(*r.Lease)
		shards, workers = append(shards, r.Lease.LeaseKey), append(workers, owner)
		line := fmt.Sprintf("%s: checkpoint %s unchanged over %d reads (%s) while %s renewed it %d times; the first record after it is %s old",
			r.ShardID, shortSeq(r.Lease.Checkpoint), len(h.obs), roundDur(window), owner, h.renewals, roundDur(behind))
		if n := r.Lease.OwnerSwitchesSinceCheckpoint; n > 0 {
			line += fmt.Sprintf("; %d owner switches since the last checkpoint", n)
		}
		if ok, failing := fc.readsFailing(r.Lease.LeaseKey); failing {
			line += fmt.Sprintf("; KinesisDataFetcher.getRecords.Success averaged %.2f (%.0f%% of its reads failed)", ok, 100*(1-ok))
		} else {
			line += "; Kinesis answered doctor's read at the checkpoint"
		}
		lines = append(lines, line)
	}
	out = append(out, Finding{
		ID: FindStuckShard, Severity: sev,
		Summary: fmt.Sprintf("%s stuck: %sleases renewed, checkpoints not moving for %s, records waiting: %s",
			plural(len(shards), "shard"), what, roundDur(window), listShort(shards)),
		Evidence: Evidence{Lines: lines, Shards: shards, Workers: uniqueSorted(workers), Values: map[string]float64{
			"stuckShards": float64(len(shards)), "maxMillisBehind": float64(worst), "windowMillis": float64(window.Milliseconds()),
		}},
		Cause: cause,
		Fix:   fix,
	})
	return
}

// readsFailing reads the worker's KinesisDataFetcher.getRecords.Success
// for a shard: the share of its GetRecords calls that succeeded over the
// metrics window, and whether most of them failed. Without the metric
// (no CloudWatch, or a worker that does not publish it) nothing is known.
func (fc *facts) readsFailing(shard string) (success float64, failing bool) {
	vs := fc.metrics.valuesOf(mKCLReadSuccess, shard)
	if len(vs) == 0 {
		return 0, false
	}
	sum := 0.0
	for _, v := range vs {
		sum += v
	}
	success = sum / float64(len(vs))
	return success, success < 0.5
}

// stuckRows are the stream rows whose lease was renewed by one live owner
// in every read, kept its checkpoint throughout, and has records after it.
func (fc *facts) stuckRows() []*inspect.LagRow {
	var out []*inspect.LagRow
	for i := range fc.lag.Rows {
		r := &fc.lag.Rows[i]
		if r.Lease == nil || r.MillisBehindLatest == nil || *r.MillisBehindLatest <= 0 {
			continue
		}
		switch r.State {
		case inspect.LagBlocked, inspect.LagDrained, inspect.LagOrphanLease, inspect.LagMissingLease:
			continue
		}
		if fc.heldStill(r) {
			out = append(out, r)
		}
	}
	return out
}

// heldStill: the row's lease was read in every sample, renewed by one live
// owner that kept it, and its checkpoint never moved.
func (fc *facts) heldStill(r *inspect.LagRow) bool {
	h := fc.view.history(r.Lease.LeaseKey)
	if h == nil || !h.presentThroughout(len(fc.view.samples)) || h.checkpointMoved() || h.renewals == 0 || len(h.moves) > 0 {
		return false
	}
	o := fc.view.owners[actualOwner(*r.Lease)]
	return o != nil && o.alive()
}

// checkShardLag reports shards further behind than --max-behind, measured
// by the probe; stuck and blocked shards have their own findings.
func checkShardLag(fc *facts) (out []Finding) {
	if fc.lag == nil {
		return
	}
	stuck := map[string]bool{}
	for _, r := range fc.stuckRows() {
		stuck[r.ShardID] = true
	}
	type lagging struct {
		id     string
		behind time.Duration
	}
	var over []lagging
	var sum time.Duration
	measured := 0
	for _, r := range fc.lag.Rows {
		if r.MillisBehindLatest == nil || r.State == inspect.LagBlocked || r.State == inspect.LagClosedUndrained {
			continue
		}
		b := time.Duration(*r.MillisBehindLatest) * time.Millisecond
		sum += b
		measured++
		if b > fc.opt.MaxBehind && !stuck[r.ShardID] {
			over = append(over, lagging{r.ShardID, b})
		}
	}
	if len(over) == 0 {
		return
	}
	sort.Slice(over, func(i, j int) bool { return over[i].behind > over[j].behind })
	mean := sum / time.Duration(measured)
	var lines, shards []string
	for _, l := range over {
		lines = append(lines, fmt.Sprintf("%s: %s behind", l.id, roundDur(l.behind)))
		shards = append(shards, l.id)
	}
	cause := "the consumers of these shards cannot keep up: more records than the handler processes, or a slow handler"
	if mean <= fc.opt.MaxBehind {
		cause = fmt.Sprintf("one part of the stream lags while the average over %s (%s) looks fine: a hot shard (uneven partition keys) or a slow record on that shard; stream-wide averages and alarms hide it", plural(measured, "shard"), roundDur(mean))
	}
	out = append(out, Finding{
		ID: FindShardLag, Severity: SeverityWarn,
		Summary:  fmt.Sprintf("%s more than %s behind, worst %s by %s", plural(len(over), "shard"), fc.opt.MaxBehind, over[0].id, roundDur(over[0].behind)),
		Evidence: Evidence{Lines: lines, Shards: shards, Values: map[string]float64{"laggingShards": float64(len(over)), "maxMillisBehind": float64(over[0].behind.Milliseconds()), "meanMillisBehind": float64(mean.Milliseconds())}},
		Cause:    cause,
		Fix:      "spread hot partition keys, scale the handler (kcltool run --max-parallel, bigger batches), or split the hot shard; check the worker's logs for retries on that shard",
	})
	return
}

// checkStreamLeases reports shards nobody reads and leases of shards that
// do not exist.
func checkStreamLeases(fc *facts) (out []Finding) {
	if fc.lag == nil {
		return
	}
	var missing, orphans []string
	for _, r := range fc.lag.Rows {
		switch r.State {
		case inspect.LagMissingLease:
			if !fc.parentStillRunning(r) {
				missing = append(missing, r.ShardID)
			}
		case inspect.LagOrphanLease:
			if !fc.kinesisStuck[r.Lease.LeaseKey] {
				orphans = append(orphans, r.ShardID)
			}
		}
	}
	if len(missing) > 0 {
		out = append(out, Finding{
			ID: FindMissingLease, Severity: SeverityWarn,
			Summary:  fmt.Sprintf("%s without a lease: no worker reads %s", plural(len(missing), "shard"), listShort(missing)),
			Evidence: Evidence{Lines: missing, Shards: missing, Values: map[string]float64{"shards": float64(len(missing))}},
			Cause:    "shard sync has not created the leases yet (KCL: every shardSyncIntervalMillis, 60s by default), the leases were deleted by hand, or the parent's SHARD_END step failed before creating them",
			Fix:      "wait one shard-sync interval, or restart a worker (shard sync runs at start); if they stay missing, check the workers' logs for shard-sync errors",
		})
	}
	if len(orphans) > 0 {
		out = append(out, Finding{
			ID: FindOrphanLease, Severity: SeverityInfo,
			Summary:  fmt.Sprintf("%s for shards the stream does not have: %s", plural(len(orphans), "lease"), listShort(orphans)),
			Evidence: Evidence{Lines: orphans, Shards: orphans, Values: map[string]float64{"leases": float64(len(orphans))}},
			Cause:    "the shard was trimmed past the retention period, or the stream was deleted and created again under the same name",
			Fix:      "leases of trimmed shards are cleaned up by the workers; after a recreated stream, reset the checkpoints (kcltool checkpoint reset) or start from a new lease table",
		})
	}
	return
}

// parentStillRunning: KCL creates an open child's lease only when its
// parent reaches SHARD_END, so a child of a parent still being read lacks
// one by design.
func (fc *facts) parentStillRunning(r inspect.LagRow) bool {
	if r.Shard == nil {
		return false
	}
	for _, p := range r.Shard.ParentShardIDs() {
		for _, row := range fc.lag.Rows {
			if row.Stream == r.Stream && row.ShardID == p && row.Lease != nil && !row.Lease.Checkpoint.IsShardEnd() {
				return true
			}
		}
	}
	return false
}

// shortSeq prints a checkpoint with the middle of a long sequence number cut.
func shortSeq(n leasecore.SequenceNumber) string {
	s := n.SequenceNumber
	if len(s) > 20 {
		s = s[:8] + "…" + s[len(s)-8:]
	}
	if n.SubSequenceNumber > 0 {
		s += fmt.Sprintf("/%d", n.SubSequenceNumber)
	}
	return s
}
