package doctor

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// throttles are the lease table's throttling figures from CloudWatch.
type throttles struct {
	byOp                    map[string]float64 // ThrottledRequests per operation
	readEvents, writeEvents float64            // the table's
	indexRead, indexWrite   map[string]float64 // per GSI
}

// total counts throttled requests; the *ThrottleEvents metrics count the
// same throttling per request unit, so they stand in only when
// ThrottledRequests has no data.
func (t throttles) total() float64 {
	n := 0.0
	for _, v := range t.byOp {
		n += v
	}
	if n > 0 {
		return n
	}
	n = t.readEvents + t.writeEvents
	for _, v := range t.indexRead {
		n += v
	}
	for _, v := range t.indexWrite {
		n += v
	}
	return n
}

// writes counts throttled writes: on a lease table, lost renewals. As in
// total, the events stand in only without ThrottledRequests data.
func (t throttles) writes() float64 {
	if n := t.byOp["UpdateItem"] + t.byOp["PutItem"] + t.byOp["DeleteItem"]; n > 0 {
		return n
	}
	n := t.writeEvents
	for _, v := range t.indexWrite {
		n += v
	}
	return n
}

func (fc *facts) tableThrottles() throttles {
	t := throttles{byOp: map[string]float64{}, indexRead: map[string]float64{}, indexWrite: map[string]float64{}}
	if fc.metrics == nil {
		return t
	}
	for _, op := range leaseTableOps {
		if v := fc.metrics.sum(mDDBThrottled, op); v > 0 {
			t.byOp[op] = v
		}
	}
	t.readEvents, t.writeEvents = fc.metrics.sum(mDDBReadThrot, ""), fc.metrics.sum(mDDBWriteThrot, "")
	subjects, _ := fc.metrics.series(mDDBReadThrot)
	for _, s := range subjects {
		if s == "" {
			continue
		}
		if v := fc.metrics.sum(mDDBReadThrot, s); v > 0 {
			t.indexRead[s] = v
		}
		if v := fc.metrics.sum(mDDBWriteThrot, s); v > 0 {
			t.indexWrite[s] = v
		}
	}
	return t
}

// checkThrottling reports lease-table throttling seen by CloudWatch, with
// the capacity that would stop it.
func checkThrottling(fc *facts) (out []Finding) {
	t := fc.tableThrottles()
	if t.total() == 0 {
		return
	}
	var parts, lines []string
	for _, op := range slices.Sorted(maps.Keys(t.byOp)) {
		parts = append(parts, fmt.Sprintf("%s %.0f", op, t.byOp[op]))
	}
	if t.readEvents > 0 || t.writeEvents > 0 {
		lines = append(lines, fmt.Sprintf("table: %.0f read and %.0f write throttle events", t.readEvents, t.writeEvents))
	}
	for _, idx := range slices.Sorted(maps.Keys(t.indexRead)) {
		lines = append(lines, fmt.Sprintf("index %s: %.0f read throttle events", idx, t.indexRead[idx]))
	}
	for _, idx := range slices.Sorted(maps.Keys(t.indexWrite)) {
		lines = append(lines, fmt.Sprintf("index %s: %.0f write throttle events (a throttled index throttles the table's writes)", idx, t.indexWrite[idx]))
	}
	if len(parts) > 0 {
		lines = append([]string{"throttled requests: " + strings.Join(parts, ", ")}, lines...)
	}
	w := fc.writeNeed()
	workers := len(fc.view.liveOwners())
	summary := fmt.Sprintf("lease table throttled %s in %s", times(t.total()), roundDur(fc.opt.MetricsWindow))
	if len(parts) > 0 {
		summary += " (" + strings.Join(parts, ", ") + ")"
	}
	verb := " renew "
	if workers == 1 {
		verb = " renews "
	}
	summary += " while " + plural(workers, "worker") + verb + plural(w.held, "lease")
	mode, wcu := provisioned(fc.desc)
	fix := fmt.Sprintf("switch the lease table to on-demand or raise its WCU to at least %d (now %d; the fleet needs about %.1f writes/s)", w.recommend(), wcu, w.need())
	if wcu == 0 {
		fix = "the table is on demand: look for a hot partition or a maximum on-demand throughput limit, and cut read pressure (fewer parallel scan segments, fewer workers scanning)"
	}
	if len(t.indexWrite) > 0 {
		fix += "; raise the write capacity of the throttled index too"
	}
	sev := SeverityWarn
	cause := "reads of the lease table are throttled: takers' scans (every worker scans the whole table) compete with the renewals' capacity"
	if t.writes() > 0 {
		sev = SeverityCritical
		cause = "renewals and checkpoints are writes: throttled ones expire leases of live workers, which the others take, so leases move back and forth and records are processed twice"
	}
	out = append(out, Finding{
		ID: FindTableThrottled, Severity: sev, Summary: summary,
		Evidence: Evidence{Lines: lines, Values: map[string]float64{
			"throttled": t.total(), "throttledWrites": t.writes(), "leasesHeld": float64(w.held), "liveWorkers": float64(workers),
			"recommendedWCU": float64(w.recommend()),
		}},
		Cause: cause + fmt.Sprintf(" (billing mode %s)", mode),
		Fix:   fix,
	})
	return
}

// checkIteratorAge reports Kinesis iterator ages above --max-behind.
func checkIteratorAge(fc *facts) (out []Finding) {
	subjects, values := fc.metrics.series(mIteratorAge)
	if len(subjects) == 0 {
		return
	}
	perShard := strings.Contains(subjects[0], "/")
	type age struct {
		subject string
		max     time.Duration
	}
	var over []age
	for i, s := range subjects {
		if m := time.Duration(maxOf(values[i])) * time.Millisecond; m > fc.opt.MaxBehind {
			over = append(over, age{s, m})
		}
	}
	if len(over) == 0 {
		return
	}
	sort.Slice(over, func(i, j int) bool { return over[i].max > over[j].max })
	var lines, shards []string
	for _, a := range over {
		lines = append(lines, fmt.Sprintf("%s: iterator age up to %s", a.subject, roundDur(a.max)))
		if _, shard, ok := strings.Cut(a.subject, "/"); ok {
			shards = append(shards, shard)
		}
	}
	f := Finding{
		ID: FindIteratorAge, Severity: SeverityWarn,
		Summary:  fmt.Sprintf("Kinesis iterator age up to %s (over %s) on %s", roundDur(over[0].max), fc.opt.MaxBehind, listShort(subjectsOf(over, func(a age) string { return a.subject }))),
		Evidence: Evidence{Lines: lines, Shards: shards, Values: map[string]float64{"maxIteratorAgeMillis": float64(over[0].max.Milliseconds())}},
		Cause:    "per-shard iterator age (enhanced monitoring): the named shards' readers fall behind",
		Fix:      "see shard-lag and stuck-shard for this application's own position; scale the handler or fix the slow shard",
	}
	if !perShard {
		f.Cause = "stream-level iterator age is the oldest reader of any consumer of the stream, other applications included, and hides which shard lags; enable shard-level IteratorAgeMilliseconds (enhanced monitoring) to see per shard"
		f.Fix = "compare with this application's own lag (shard-lag, kcl-lag); if it is another consumer, look there"
	}
	out = append(out, f)
	return
}

func subjectsOf[T any](items []T, name func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = name(it)
	}
	return out
}

// checkKCLMetrics reads KCL's own churn and lag metrics.
func checkKCLMetrics(fc *facts) (out []Finding) {
	if fc.metrics == nil {
		return
	}
	if !fc.metrics.hasData(mKCLLost, mKCLTaken, mKCLReassigned, mKCLShardLag, mKCLAppLag) {
		out = append(out, Finding{
			ID: FindKCLMetricsAbsent, Severity: SeverityInfo,
			Summary:  fmt.Sprintf("no KCL metrics in CloudWatch namespace %q in the last %s", fc.opt.App, roundDur(fc.opt.MetricsWindow)),
			Evidence: Evidence{Lines: []string{"looked for LostLeases, TakenLeases, NumOfLeasesReassignment, MillisBehindLatest"}},
			Cause:    "the application publishes no metrics (metricsLevel NONE, or kcltool run without --cloudwatch-metrics), or under another namespace than the application name",
			Fix:      "pass --app with the KCL application name (the namespace); enable metrics to let doctor use them",
		})
		return
	}
	out = append(out, checkLeaseMoveMetrics(fc)...)
	out = append(out, checkKCLLag(fc)...)
	return
}

// workerSums adds a lease metric per worker; KCL publishes either per
// worker or, with narrowed dimensions, per operation only, so the larger of
// the two totals counts.
func (fc *facts) workerSums(use string) (total float64, perWorker map[string]float64) {
	perWorker = map[string]float64{}
	subjects, _ := fc.metrics.series(use)
	sumWorkers := 0.0
	for _, s := range subjects {
		if s == "" {
			continue
		}
		if v := fc.metrics.sum(use, s); v > 0 {
			perWorker[s] = v
			sumWorkers += v
		}
	}
	return max(sumWorkers, fc.metrics.sum(use, "")), perWorker
}

func checkLeaseMoveMetrics(fc *facts) (out []Finding) {
	lost, lostBy := fc.workerSums(mKCLLost)
	taken, takenBy := fc.workerSums(mKCLTaken)
	reassigned, _ := fc.workerSums(mKCLReassigned)
	if lost+taken+reassigned == 0 {
		return
	}
	leases := len(fc.last.leases)
	var lines []string
	for _, w := range slices.Sorted(maps.Keys(lostBy)) {
		lines = append(lines, fmt.Sprintf("%s lost %.0f", w, lostBy[w]))
	}
	for _, w := range slices.Sorted(maps.Keys(takenBy)) {
		lines = append(lines, fmt.Sprintf("%s took %.0f", w, takenBy[w]))
	}
	f := Finding{
		ID: FindKCLLeaseMoves, Severity: SeverityInfo,
		Summary: fmt.Sprintf("KCL metrics over %s: LostLeases %.0f, TakenLeases %.0f, NumOfLeasesReassignment %.0f (%s in the table)",
			roundDur(fc.opt.MetricsWindow), lost, taken, reassigned, plural(leases, "lease")),
		Evidence: Evidence{Lines: lines, Workers: uniqueSorted(append(slices.Sorted(maps.Keys(lostBy)), slices.Sorted(maps.Keys(takenBy))...)), Values: map[string]float64{
			"lostLeases": lost, "takenLeases": taken, "leasesReassigned": reassigned, "leases": float64(leases),
		}},
		Cause: "leases move when workers join or leave, and when renewals fail",
		Fix:   "nothing while the numbers stay below the lease count",
	}
	if lost > float64(leases) || reassigned > float64(leases) {
		f.Severity = SeverityWarn
		f.Cause = "more leases were lost or reassigned than the table holds: on average every lease changed hands in the period, which deploys alone rarely explain. " + fc.renewFailureCause()
		f.Fix = "look for lease-table throttling and workers that restart in a loop; raise the failover time if renewals are slow"
	}
	out = append(out, f)
	return
}

// checkKCLLag reads MillisBehindLatest per shard and application-wide.
func checkKCLLag(fc *facts) (out []Finding) {
	type lag struct {
		shard string
		max   time.Duration
	}
	var over []lag
	subjects, values := fc.metrics.series(mKCLShardLag)
	for i, s := range subjects {
		if m := time.Duration(maxOf(values[i])) * time.Millisecond; m > fc.opt.MaxBehind {
			over = append(over, lag{s, m})
		}
	}
	app := time.Duration(maxOf(fc.metrics.valuesOf(mKCLAppLag, ""))) * time.Millisecond
	if len(over) == 0 && app <= fc.opt.MaxBehind {
		return
	}
	sort.Slice(over, func(i, j int) bool { return over[i].max > over[j].max })
	var lines, shards []string
	for _, l := range over {
		lines = append(lines, fmt.Sprintf("%s: MillisBehindLatest up to %s", l.shard, roundDur(l.max)))
		shards = append(shards, l.shard)
	}
	if app > 0 {
		lines = append(lines, fmt.Sprintf("application-wide: up to %s", roundDur(app)))
	}
	worst := app
	if len(over) > 0 {
		worst = max(worst, over[0].max)
	}
	summary := fmt.Sprintf("KCL MillisBehindLatest up to %s (over %s)", roundDur(worst), fc.opt.MaxBehind)
	if len(over) > 0 {
		summary += " on " + listShort(shards)
	}
	out = append(out, Finding{
		ID: FindKCLLag, Severity: SeverityWarn, Summary: summary,
		Evidence: Evidence{Lines: lines, Shards: shards, Values: map[string]float64{"maxMillisBehind": float64(worst.Milliseconds()), "laggingShards": float64(len(over))}},
		Cause:    "the application's record processors fall behind on these shards (KCL's own measure, per shard and for the whole application)",
		Fix:      "see stuck-shard and shard-lag; scale the processing of the lagging shards",
	})
	return
}
