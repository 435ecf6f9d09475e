package doctor

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// Severity ranks a doctor finding. The order matters: --fail-on compares
// against it.
type Severity int

// The severities, least severe first.
const (
	SeverityInfo Severity = iota
	SeverityWarn
	SeverityCritical
)

var severityNames = []string{"info", "warn", "critical"}

func (s Severity) String() string {
	if s < 0 || int(s) >= len(severityNames) {
		return fmt.Sprintf("severity(%d)", int(s))
	}
	return severityNames[s]
}

// MarshalText writes the severity's name, so JSON says "warn", not 1.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// ParseSeverity reads info, warn or critical.
func ParseSeverity(s string) (Severity, error) {
	for i, n := range severityNames {
		if strings.EqualFold(s, n) {
			return Severity(i), nil
		}
	}
	return 0, fmt.Errorf("unknown severity %q: use info, warn or critical", s)
}

// The finding ids. They are a stable contract (scripts match on them) and
// each is documented with its causes and fixes in docs/doctor.md.
const (
	FindLeaseChurn        = "lease-churn"
	FindStrugglingWorker  = "struggling-worker"
	FindDeadWorker        = "dead-worker"
	FindNoWorkers         = "no-workers"
	FindStuckShard        = "stuck-shard"
	FindShardLag          = "shard-lag"
	FindImbalance         = "imbalance"
	FindUnassigned        = "unassigned-leases"
	FindBlockedChild      = "blocked-child"
	FindMissingLease      = "missing-lease"
	FindOrphanLease       = "orphan-lease"
	FindMalformed         = "malformed-items"
	FindHandoff           = "handoff"
	FindHandoffStuck      = "handoff-stuck"
	FindStaleMetrics      = "stale-worker-metrics"
	FindLeader            = "leader"
	FindLeaderStale       = "leader-stale"
	FindLeaderMissing     = "leader-missing"
	FindKCL3Migration     = "kcl3-migration"
	FindTableCapacity     = "table-capacity"
	FindTableThrottled    = "table-throttled"
	FindIteratorAge       = "iterator-age"
	FindKCLLag            = "kcl-lag"
	FindKCLLeaseMoves     = "kcl-lease-moves"
	FindKCLMetricsAbsent  = "kcl-metrics-absent"
	FindCloudWatchSkipped = "cloudwatch-skipped"
	FindChecksSkipped     = "checks-skipped"
	FindExpiredShard      = "expired-shard"
)

// Finding is one thing doctor found: what, how bad, the numbers that show
// it, the likely cause and what to do.
type Finding struct {
	ID       string
	Severity Severity
	Summary  string
	Evidence Evidence
	Cause    string
	Fix      string
}

// Evidence is what a finding rests on: numbers, and the leases, shards and
// workers involved.
type Evidence struct {
	// Lines are the facts in words, one per lease, shard or worker.
	Lines []string
	// Values are the numbers, by name, for scripts.
	Values map[string]float64
	// Shards are the shard ids (lease keys in a multi-stream table) involved.
	Shards []string
	// Workers are the worker ids involved.
	Workers []string
}

// sortFindings puts the worst first, then by id, so output is stable.
func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].Severity != fs[j].Severity {
			return fs[i].Severity > fs[j].Severity
		}
		if fs[i].ID != fs[j].ID {
			return fs[i].ID < fs[j].ID
		}
		return fs[i].Summary < fs[j].Summary
	})
}

// plural writes "1 lease", "2 leases".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// listShort names up to four items and counts the rest, for summaries.
func listShort(items []string) string {
	if len(items) <= 4 {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:4], ", ") + fmt.Sprintf(" and %d more", len(items)-4)
}

// dedupFindings drops every finding equal to one before it: the one place
// where findings are deduplicated, after all checks ran, so that no check
// needs to know what another reports. Equal means the same in every field,
// so two findings that differ in anything are both kept.
func dedupFindings(fs []Finding) []Finding {
	out := fs[:0]
	for _, f := range fs {
		if !slices.ContainsFunc(out, func(k Finding) bool { return reflect.DeepEqual(k, f) }) {
			out = append(out, f)
		}
	}
	return out
}
