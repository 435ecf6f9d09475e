package doctor

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/leasecore"
)

// kcl3State is what the window shows of KCL 3.x's coordination entities
// (docs/kcl-compat.md, KCL 3.x items): the leader lock, worker metrics and the
// migration state.
type kcl3State struct {
	present bool
	// legacy: the entities live in KCL 3.0–3.4's separate tables.
	legacy bool
	leader string
	// leaderLease is the lock's leaseDuration: a lock not heartbeaten for
	// that long is free to take.
	leaderLease time.Duration
	// leaderVersions are the lock's recordVersionNumber per read that saw it.
	leaderVersions []versionSeen
	metrics        []inspect.WorkerMetrics
	clientVersion  string // Migration3.0 cv
}

type versionSeen struct {
	at      time.Time
	version string
}

// readKCL3 gathers the 3.x entities: from the lease table's reads (3.5
// single-table format), or else from <app>-CoordinatorState and
// <app>-WorkerMetricStats, read once, when those tables exist.
func (d *Doctor) readKCL3(ctx context.Context, samples []sample) (kcl3State, error) {
	var st kcl3State
	for _, s := range samples {
		for _, n := range s.nonLeases {
			st.present = true
			if n.EntityType == "LEADER" || n.Key == "Leader" {
				st.leaderVersions = append(st.leaderVersions, versionSeen{s.at, attrS(n.Item, "recordVersionNumber")})
			}
		}
	}
	last := samples[len(samples)-1]
	st.absorb(last.nonLeases)
	if st.present || d.noLegacy {
		return st, nil
	}
	coord, err := d.scanLegacy(ctx, d.opt.App+"-CoordinatorState", "key")
	if err != nil {
		return st, err
	}
	metrics, err := d.scanLegacy(ctx, d.opt.App+"-WorkerMetricStats", "wid")
	if err != nil {
		return st, err
	}
	// Looked for once: a watch does not ask again every read.
	d.noLegacy = coord == nil && metrics == nil
	if len(coord)+len(metrics) > 0 {
		st.present, st.legacy = true, true
		st.absorb(append(coord, metrics...))
		if st.leader != "" {
			st.leaderVersions = []versionSeen{{last.at, ""}}
		}
	}
	return st, nil
}

// absorb reads the entities of one read.
func (st *kcl3State) absorb(items []leasecore.NonLeaseItem) {
	st.leader, st.metrics = "", nil
	for _, n := range items {
		switch {
		case n.EntityType == "LEADER" || n.Key == "Leader":
			st.leader = attrS(n.Item, "ownerName")
			st.leaderLease = parseMillisAttr(n.Item, "leaseDuration")
		case n.EntityType == "CLIENT_VERSION_MIGRATION" || n.Key == "Migration3.0":
			st.clientVersion = attrS(n.Item, "cv")
		case n.EntityType == "WORKER_METRIC_STATS" || (n.EntityType == "" && n.Item["lut"] != nil):
			st.metrics = append(st.metrics, inspect.WorkerMetricsOf(n))
		}
	}
}

// scanLegacy reads a KCL 3.0–3.4 side table, keyed by keyAttr; a missing
// table is no error (most applications have none).
func (d *Doctor) scanLegacy(ctx context.Context, table, keyAttr string) ([]leasecore.NonLeaseItem, error) {
	var out []leasecore.NonLeaseItem
	in := &dynamodb.ScanInput{TableName: aws.String(table)}
	for {
		// Counted apart from the lease table's pages: most applications have
		// no such table, and the request only finds that out.
		d.meter.note(func(c *ReadCost) { c.LegacyScans++ })
		page, err := d.table.api.Scan(ctx, in)
		if awserr.NotFound(err) {
			return nil, nil
		}
		if out == nil {
			out = []leasecore.NonLeaseItem{} // the table exists
		}
		if err != nil {
			return nil, fmt.Errorf("scan KCL 3.x table %q: %w", table, err)
		}
		for _, item := range page.Items {
			out = append(out, leasecore.NonLeaseItem{Key: attrS(item, keyAttr), EntityType: leasecore.EntityTypeOf(item), Item: item})
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// checkKCL3 reports the leader, stale worker metrics and handoffs.
func checkKCL3(fc *facts) (out []Finding) {
	out = append(out, checkHandoffs(fc)...)
	if !fc.kcl3.present {
		return
	}
	out = append(out, checkLeader(fc)...)
	out = append(out, checkWorkerMetrics(fc)...)
	return
}

func checkLeader(fc *facts) (out []Finding) {
	st := fc.kcl3
	where := "the lease table"
	if st.legacy {
		where = fc.opt.App + "-CoordinatorState"
	}
	if st.leader == "" {
		if st.clientVersion == "CLIENT_VERSION_3X" || st.clientVersion == "CLIENT_VERSION_3X_WITH_ROLLBACK" || len(st.metrics) > 0 {
			out = append(out, Finding{
				ID: FindLeaderMissing, Severity: SeverityWarn,
				Summary:  "no KCL 3.x leader lock in " + where + ": nobody assigns leases",
				Evidence: Evidence{Lines: []string{fmt.Sprintf("client version %q, %s", st.clientVersion, plural(len(st.metrics), "worker-metrics item"))}},
				Cause:    "no worker holds the leader lock: the workers are down, or the last leader released it and no worker has acquired it yet (each checks every 30s)",
				Fix:      "check that the workers run and can write the lease table; a live fleet elects a leader within a heartbeat period",
			})
		}
		return
	}
	f := Finding{
		ID: FindLeader, Severity: SeverityInfo,
		Summary:  fmt.Sprintf("KCL 3.x leader: %s (lock in %s)", st.leader, where),
		Evidence: Evidence{Workers: []string{st.leader}, Lines: []string{fmt.Sprintf("client version %q", st.clientVersion)}},
		Cause:    "the leader runs lease assignment and balancing for the whole fleet",
		Fix:      "nothing",
	}
	alive := false
	if o := fc.view.owners[st.leader]; o != nil && o.alive() {
		alive = true
	}
	for _, m := range st.metrics {
		if m.Worker == st.leader && !m.LastUpdate.IsZero() && fc.now.Sub(m.LastUpdate) <= workerMetricsFreshness {
			alive = true
		}
	}
	unchanged := unchangedFor(st.leaderVersions)
	switch {
	case unchanged >= 2*leaderHeartbeat:
		f.ID, f.Severity = FindLeaderStale, SeverityWarn
		f.Summary = fmt.Sprintf("KCL 3.x leader lock held by %s has not been renewed for %s (heartbeats every %s)", st.leader, roundDur(unchanged), leaderHeartbeat)
		f.Cause = fmt.Sprintf("the leader stopped heartbeating: it is dead or stalled; until the lock expires (leaseDuration %s) no lease is assigned or rebalanced", roundDur(st.lockDuration()))
		f.Fix = "restart the leader's worker; another worker takes the lock once it expires"
	case !alive:
		f.ID, f.Severity = FindLeaderStale, SeverityWarn
		f.Summary = fmt.Sprintf("KCL 3.x leader %s renews no lease and has no fresh worker metrics", st.leader)
		f.Cause = "the leader looks gone; assignments stop until its lock expires and another worker takes it"
		f.Fix = "check the leader's worker; restart it if it hangs"
	}
	if unchanged > 0 {
		f.Evidence.Lines = append(f.Evidence.Lines, fmt.Sprintf("recordVersionNumber unchanged for %s", roundDur(unchanged)))
	}
	out = append(out, f)
	return
}

// lockDuration is the lock's leaseDuration, KCL's 2m when unreadable.
func (st kcl3State) lockDuration() time.Duration {
	if st.leaderLease > 0 {
		return st.leaderLease
	}
	return 2 * time.Minute
}

// unchangedFor is how long the newest record version has been seen.
func unchangedFor(vs []versionSeen) time.Duration {
	if len(vs) < 2 {
		return 0
	}
	last := vs[len(vs)-1]
	first := last.at
	for i := len(vs) - 2; i >= 0 && vs[i].version == last.version; i-- {
		first = vs[i].at
	}
	return last.at.Sub(first)
}

// checkWorkerMetrics finds workers the 3.x leader treats as inactive: a
// worker-metrics item older than 60s, or none at all for a worker holding
// leases. The leader assigns them nothing new.
func checkWorkerMetrics(fc *facts) (out []Finding) {
	have := map[string]inspect.WorkerMetrics{}
	for _, m := range fc.kcl3.metrics {
		have[m.Worker] = m
	}
	held := map[string]int{}
	for _, l := range fc.last.leases {
		if o := actualOwner(l); o != "" {
			held[o]++
		}
	}
	sev := SeverityInfo
	var lines, workers []string
	for _, name := range slices.Sorted(maps.Keys(have)) {
		m := have[name]
		age := fc.now.Sub(m.LastUpdate)
		if !m.LastUpdate.IsZero() && age <= workerMetricsFreshness {
			continue
		}
		workers = append(workers, name)
		line := fmt.Sprintf("%s: last update %s ago", name, roundDur(age))
		if m.LastUpdate.IsZero() {
			line = name + ": no last-update time (lut)"
		}
		if held[name] > 0 {
			sev = SeverityWarn
			line += fmt.Sprintf(", holds %s", plural(held[name], "lease"))
		}
		lines = append(lines, line)
	}
	if len(fc.kcl3.metrics) > 0 {
		for _, name := range slices.Sorted(maps.Keys(held)) {
			if _, ok := have[name]; !ok {
				sev = SeverityWarn
				workers = append(workers, name)
				lines = append(lines, fmt.Sprintf("%s: holds %s but has no worker-metrics item", name, plural(held[name], "lease")))
			}
		}
	}
	if len(lines) == 0 {
		return
	}
	out = append(out, Finding{
		ID: FindStaleMetrics, Severity: sev,
		Summary:  fmt.Sprintf("%s without fresh KCL 3.x worker metrics (older than %s): %s", plural(len(workers), "worker"), workerMetricsFreshness, listShort(workers)),
		Evidence: Evidence{Lines: lines, Workers: workers, Values: map[string]float64{"staleWorkers": float64(len(workers))}},
		Cause:    "the leader only assigns to workers whose worker-metrics item is fresh; a worker that stopped reporting (dead, or its reporter fails) gets no new leases, and a non-3.x worker in the fleet (for example a 2.x-protocol consumer) never has one",
		Fix:      "restart workers that stopped reporting; do not mix 2.x-protocol workers into a 3.x fleet; items of workers gone for good are deleted by the leader after a day",
	})
	return
}

// parseMillisAttr reads a millisecond string attribute (the lock's
// leaseDuration is an S, docs/kcl-compat.md, KCL 3.x items).
func parseMillisAttr(item map[string]ddbtypes.AttributeValue, name string) time.Duration {
	ms, err := strconv.ParseInt(attrS(item, name), 10, 64)
	if err != nil {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}

func attrS(item map[string]ddbtypes.AttributeValue, name string) string {
	if v, ok := item[name].(*ddbtypes.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}
