package doctor

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/fanout"
	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// checkCase is one unit test of a check: hand-built facts and the findings
// ("severity id") the check alone makes of them, worst first.
type checkCase struct {
	name  string
	facts func() *facts
	want  []string
	// also checks more of the findings, when set.
	also func(t *testing.T, fs []Finding)
}

// checkCases are the unit tests, by check name: every check of the table
// has at least one (TestCheckUnits fails otherwise).
var checkCases = map[string][]checkCase{
	"cloudwatch-skipped": {{
		name: "why", want: []string{"info cloudwatch-skipped"},
		facts: func() *facts {
			fc, why := healthy(), "--no-cloudwatch"
			fc.cwSkipped = &why
			return fc
		},
		also: summaryHas("--no-cloudwatch"),
	}},
	"malformed": {{
		name: "unreadable item", want: []string{"critical malformed-items"},
		facts: func() *facts {
			fc := healthy()
			fc.last.malformed = []error{errors.New("lease s9: leaseCounter is not a number")}
			return fc
		},
	}},
	"liveness": {{
		name: "dead worker", want: []string{"warn dead-worker"},
		facts: func() *facts { return handBuilt(3, progressing("s1", "w1"), still("s2", "w-dead")) },
		also:  summaryHas("w-dead"),
	}, {
		name: "struggling worker", want: []string{"warn struggling-worker"},
		facts: func() *facts { return handBuilt(3, progressing("s1", "w1"), still("s2", "w1")) },
	}},
	"churn": {{
		name: "one move", want: []string{"info lease-churn"},
		facts: func() *facts {
			return handBuilt(3, progressing("s1", "w1"), progressing("s2", "w2"), moved("s3", "w1", "w2", 1))
		},
	}, {
		name: "bounce", want: []string{"warn lease-churn"},
		facts: func() *facts {
			return handBuilt(3, progressing("s1", "w1"), progressing("s2", "w2"), func(i int) *leasecore.Lease {
				l := progressing("s3", []string{"w1", "w2", "w1"}[i])(i)
				return l
			})
		},
		also: summaryHas("bounced back"),
	}},
	"stuck": {{
		name: "handler", want: []string{"critical stuck-shard"},
		facts: func() *facts {
			fc := handBuilt(3, renewed("s1", "w1", "100"))
			r := lagRow(fc, "s1", inspect.LagBehind, true)
			r.MillisBehindLatest = behind(time.Minute)
			return withLag(fc, r)
		},
		also: causeHas("record processor"),
	}, {
		name: "worker's reads failing", want: []string{"warn stuck-shard"},
		facts: func() *facts {
			fc := handBuilt(3, renewed("s1", "w1", "100"))
			r := lagRow(fc, "s1", inspect.LagBehind, true)
			r.MillisBehindLatest = behind(5 * time.Second)
			fc.metrics = metricsOf(series{mKCLReadSuccess, "s1", []float64{0, 0.2}})
			return withLag(fc, r)
		},
		also: summaryHas("Kinesis reads failing"),
	}},
	"kinesis-stuck": {{
		name: "probe timed out", want: []string{"warn stuck-shard"},
		facts: func() *facts {
			fc := handBuilt(3, renewed("s1", "w1", "100"))
			r := lagRow(fc, "s1", inspect.LagBehind, true)
			r.ProbeErr = fmt.Errorf("GetRecords: %w", context.DeadlineExceeded)
			return withLag(fc, r)
		},
		also: func(t *testing.T, fs []Finding) {
			if v := fs[0].Evidence.Values["kinesisTimeouts"]; v != 1 {
				t.Errorf("kinesisTimeouts = %v, want 1", v)
			}
		},
	}},
	"shard-lag": {{
		name: "one shard behind", want: []string{"warn shard-lag"},
		facts: func() *facts {
			fc := handBuilt(3, progressing("s1", "w1"), progressing("s2", "w1"))
			r1, r2 := lagRow(fc, "s1", inspect.LagBehind, true), lagRow(fc, "s2", inspect.LagAtTip, true)
			r1.MillisBehindLatest, r2.MillisBehindLatest = behind(5*time.Minute), behind(0)
			return withLag(fc, r1, r2)
		},
		also: summaryHas("s1"),
	}},
	"stream-leases": {{
		name: "missing and orphan", want: []string{"warn missing-lease", "info orphan-lease"},
		facts: func() *facts {
			fc := handBuilt(3, progressing("s1", "w1"))
			orphan := lagRow(fc, "s1", inspect.LagOrphanLease, false)
			orphan.Shard = nil
			missing := inspect.LagRow{Stream: "s", ShardID: "s2", State: inspect.LagMissingLease, Shard: &reshard.Node{ShardID: "s2", Open: true}}
			return withLag(fc, orphan, missing)
		},
	}},
	"blocked": {{
		name: "parent still draining", want: []string{"info blocked-child"},
		facts: func() *facts {
			return handBuilt(3, progressing("p", "w1"), with(still("c", ""), func(l *leasecore.Lease) { l.ParentShardIDs = []string{"p"} }))
		},
	}, {
		name: "parent idle", want: []string{"warn blocked-child"},
		facts: func() *facts {
			return handBuilt(3, renewed("p", "w1", "100"), with(still("c", ""), func(l *leasecore.Lease) { l.ParentShardIDs = []string{"p"} }))
		},
	}},
	"expired": {{
		name: "expired mark", want: []string{"warn expired-shard"},
		facts: func() *facts {
			return handBuilt(2, with(progressing("s1", "w1"), func(l *leasecore.Lease) {
				l.Extra = map[string]ddbtypes.AttributeValue{reshard.AttrExpired: &ddbtypes.AttributeValueMemberS{Value: "2026-01-02T00:00:00Z ResourceNotFoundException"}}
			}))
		},
	}},
	"unassigned": {{
		name: "briefly", want: []string{"info unassigned-leases"},
		facts: func() *facts { return handBuilt(2, progressing("s1", "w1"), still("s2", "")) },
	}, {
		name: "untaken by a live fleet", want: []string{"warn unassigned-leases"},
		facts: func() *facts { return handBuilt(4, progressing("s1", "w1"), still("s2", "")) },
	}, {
		name: "no live worker", want: []string{"critical unassigned-leases"},
		facts: func() *facts { return handBuilt(4, still("s1", "w-dead"), still("s2", "")) },
	}, {
		// no-workers says it, as a warning.
		name: "no worker at all", want: nil,
		facts: func() *facts { return handBuilt(4, still("s1", ""), still("s2", "")) },
	}},
	"no-workers": {{
		name: "stopped cleanly", want: []string{"warn no-workers"},
		facts: func() *facts {
			return handBuilt(3, still("s1", ""), still("s2", ""), with(still("s0", ""), func(l *leasecore.Lease) { l.Checkpoint.SequenceNumber = leasecore.SHARD_END }))
		},
		also: func(t *testing.T, fs []Finding) {
			if got := fs[0].Evidence.Shards; !reflect.DeepEqual(got, []string{"s1", "s2"}) {
				t.Errorf("no-workers shards %q, want the two not at SHARD_END", got)
			}
		},
	}, {
		name: "crashed: the owners stay", want: nil,
		facts: func() *facts { return handBuilt(3, still("s1", "w1"), still("s2", "w2")) },
	}, {
		name: "owned in one read only", want: nil,
		facts: func() *facts {
			return handBuilt(3, still("s1", ""), func(i int) *leasecore.Lease {
				l := still("s2", "")(i)
				if i == 0 {
					l.LeaseOwner = "w1"
				}
				return l
			})
		},
	}, {
		name: "all at SHARD_END", want: nil,
		facts: func() *facts {
			return handBuilt(3, with(still("s1", ""), func(l *leasecore.Lease) { l.Checkpoint.SequenceNumber = leasecore.SHARD_END }))
		},
	}, {
		name: "KCL 3.x, leaderless and stopped", want: []string{"warn no-workers"},
		facts: func() *facts {
			fc := handBuilt(3, still("s1", ""), still("s2", ""))
			fc.kcl3 = kcl3State{present: true, coord: coordination.State{ClientVersion: "CLIENT_VERSION_3X"}, metrics: []coordination.WorkerMetrics{{WorkerID: "w1", LastUpdate: fc.now.Add(-5 * time.Minute)}}}
			return fc
		},
		also: func(t *testing.T, fs []Finding) {
			if !strings.Contains(fs[0].Cause, "no KCL 3.x worker reports fresh worker metrics") {
				t.Errorf("cause %q", fs[0].Cause)
			}
		},
	}, {
		name: "KCL 3.x worker alive with nothing assigned", want: nil,
		facts: func() *facts {
			fc := handBuilt(3, still("s1", ""), still("s2", ""))
			fc.kcl3 = kcl3State{present: true, metrics: []coordination.WorkerMetrics{{WorkerID: "w1", LastUpdate: fc.now}}}
			return fc
		},
	}},
	"imbalance": {{
		name: "never corrected", want: []string{"warn imbalance"},
		facts: func() *facts {
			return handBuilt(4, progressing("s1", "w1"), progressing("s2", "w1"), progressing("s3", "w1"), progressing("s4", "w1"), progressing("s5", "w2"))
		},
	}, {
		name: "KCL 3.x balances by load", want: []string{"info imbalance"},
		facts: func() *facts {
			fc := handBuilt(4, progressing("s1", "w1"), progressing("s2", "w1"), progressing("s3", "w1"), progressing("s4", "w1"), progressing("s5", "w2"))
			fc.kcl3.present = true
			return fc
		},
	}},
	"kcl3": {{
		name: "leader and handoff", want: []string{"info handoff", "info leader"},
		facts: func() *facts {
			fc := handBuilt(3, progressing("s1", "w1"), with(progressing("s2", "w2"), func(l *leasecore.Lease) { l.CheckpointOwner = "w1" }))
			fc.kcl3 = kcl3State{present: true, leader: "w1", metrics: []coordination.WorkerMetrics{{WorkerID: "w1", LastUpdate: fc.now}, {WorkerID: "w2", LastUpdate: fc.now}}}
			return fc
		},
	}, {
		name: "stale metrics, no leader", want: []string{"warn leader-missing", "warn stale-worker-metrics"},
		facts: func() *facts {
			fc := handBuilt(3, progressing("s1", "w1"), progressing("s2", "w2"))
			fc.kcl3 = kcl3State{present: true, coord: coordination.State{ClientVersion: "CLIENT_VERSION_3X"}, metrics: []coordination.WorkerMetrics{{WorkerID: "w1", LastUpdate: fc.now.Add(-5 * time.Minute)}}}
			return fc
		},
		also: func(t *testing.T, fs []Finding) {
			want := []string{"w1: last update 5m0s ago, holds 1 lease", "w2: holds 1 lease but has no worker-metrics item"}
			if got := fs[1].Evidence.Lines; !reflect.DeepEqual(got, want) {
				t.Errorf("stale-worker-metrics lines %q, want %q", got, want)
			}
		},
	}, {
		name: "stale metrics of a worker without leases", want: []string{"info leader", "info stale-worker-metrics"},
		facts: func() *facts {
			fc := handBuilt(3, progressing("s1", "w1"))
			fc.kcl3 = kcl3State{present: true, leader: "w1", metrics: []coordination.WorkerMetrics{{WorkerID: "w1", LastUpdate: fc.now}, {WorkerID: "w2", LastUpdate: fc.now.Add(-2 * time.Minute)}}}
			return fc
		},
	}},
	"capacity": {{
		name: "too few WCU", want: []string{"critical table-capacity"},
		facts: func() *facts {
			fc := handBuilt(2, progressing("s1", "w1"), progressing("s2", "w1"), progressing("s3", "w1"), progressing("s4", "w1"), progressing("s5", "w1"))
			fc.desc = provisionedTable(100, 1)
			return fc
		},
	}, {
		name: "on demand", want: []string{"info table-capacity"},
		facts: func() *facts {
			fc := handBuilt(2, progressing("s1", "w1"))
			fc.desc = &ddbtypes.TableDescription{BillingModeSummary: &ddbtypes.BillingModeSummary{BillingMode: ddbtypes.BillingModePayPerRequest}}
			return fc
		},
	}},
	"throttling": {{
		name: "writes throttled", want: []string{"critical table-throttled"},
		facts: func() *facts {
			fc := handBuilt(2, progressing("s1", "w1"))
			fc.desc = provisionedTable(10, 10)
			fc.metrics = metricsOf(series{mDDBThrottled, "UpdateItem", []float64{2, 1}})
			return fc
		},
		also: summaryHas("UpdateItem 3"),
	}, {
		name: "reads throttled", want: []string{"warn table-throttled"},
		facts: func() *facts {
			fc := handBuilt(2, progressing("s1", "w1"))
			fc.desc = provisionedTable(10, 10)
			fc.metrics = metricsOf(series{mDDBThrottled, "Scan", []float64{4}})
			return fc
		},
	}},
	"iterator-age": {{
		name: "stream level", want: []string{"warn iterator-age"},
		facts: func() *facts {
			fc := healthy()
			fc.metrics = metricsOf(series{mIteratorAge, "s", []float64{1000, float64((3 * time.Minute).Milliseconds())}})
			return fc
		},
		also: causeHas("stream-level"),
	}},
	"kcl-metrics": {{
		name: "none published", want: []string{"info kcl-metrics-absent"},
		facts: func() *facts {
			fc := healthy()
			fc.metrics = metricsOf(series{mKCLLost, "", nil})
			return fc
		},
	}, {
		name: "moves and lag", want: []string{"warn kcl-lag", "warn kcl-lease-moves"},
		facts: func() *facts {
			fc := healthy()
			fc.metrics = metricsOf(series{mKCLLost, "w1", []float64{5}}, series{mKCLShardLag, "s1", []float64{float64((2 * time.Minute).Milliseconds())}})
			return fc
		},
	}},
	"consumers": {{
		name: "ours creating, subscriptions refused", want: []string{"warn efo-consumer-not-active", "warn efo-subscription-errors"},
		facts: func() *facts {
			fc := healthy()
			fc.consumers = []*fanout.ConsumerListing{{StreamName: "s", Consumers: []fanout.StreamConsumer{
				{Name: "app", Status: kintypes.ConsumerStatusCreating, CreatedAt: fc.now.Add(-time.Hour)}}}}
			fc.metrics = metricsOf(series{mSubRateExceeded, "s/app", []float64{2}})
			return fc
		},
	}, {
		name: "another application's deleting", want: []string{"info efo-consumer-not-active"},
		facts: func() *facts {
			fc := healthy()
			fc.consumers = []*fanout.ConsumerListing{{StreamName: "s", Consumers: []fanout.StreamConsumer{
				{Name: "other", Status: kintypes.ConsumerStatusDeleting, CreatedAt: fc.now.Add(-time.Hour)},
				{Name: "app", Status: kintypes.ConsumerStatusActive, CreatedAt: fc.now.Add(-time.Hour)}}}}
			return fc
		},
	}},
	"skipped": {{
		name: "says what", want: []string{"info checks-skipped"},
		facts: func() *facts {
			fc := healthy()
			fc.skipped = []string{"stream checks: --stream not given"}
			return fc
		},
		also: summaryHas("--stream not given"),
	}},
}

// healthy are facts no check finds anything in: two live workers that
// renew and checkpoint, the stream at the tip.
func healthy() *facts {
	fc := handBuilt(3, progressing("s1", "w1"), progressing("s2", "w2"))
	r1, r2 := lagRow(fc, "s1", inspect.LagAtTip, true), lagRow(fc, "s2", inspect.LagAtTip, true)
	r1.MillisBehindLatest, r2.MillisBehindLatest = behind(0), behind(0)
	return withLag(fc, r1, r2)
}

// TestCheckUnits runs each check alone over its hand-built facts.
func TestCheckUnits(t *testing.T) {
	for _, c := range checks {
		cases := checkCases[c.name]
		if len(cases) == 0 {
			t.Errorf("check %s has no unit test in checkCases", c.name)
		}
		for _, tc := range cases {
			t.Run(c.name+"/"+tc.name, func(t *testing.T) {
				got := runChecks(tc.facts(), []check{c})
				var ids []string
				for _, f := range got {
					ids = append(ids, f.Severity.String()+" "+f.ID)
				}
				if !reflect.DeepEqual(ids, tc.want) {
					t.Fatalf("got %q, want %q:\n%s", ids, tc.want, strings.Join(summaries(got), "\n"))
				}
				if tc.also != nil {
					tc.also(t, got)
				}
			})
		}
	}
	for name := range checkCases {
		if !hasCheck(name) {
			t.Errorf("checkCases has tests of %q, which is no check of the table", name)
		}
	}
}

// TestChecksQuietOnHealthyFleet: no check reports on a healthy fleet.
func TestChecksQuietOnHealthyFleet(t *testing.T) {
	for _, c := range checks {
		if got := c.run(healthy()); len(got) > 0 {
			t.Errorf("check %s on a healthy fleet: %s", c.name, summaries(got))
		}
	}
}

func hasCheck(name string) bool {
	for _, c := range checks {
		if c.name == name {
			return true
		}
	}
	return false
}

func summaryHas(s string) func(*testing.T, []Finding) {
	return func(t *testing.T, fs []Finding) {
		t.Helper()
		if !strings.Contains(fs[0].Summary, s) {
			t.Errorf("summary %q does not say %q", fs[0].Summary, s)
		}
	}
}

func causeHas(s string) func(*testing.T, []Finding) {
	return func(t *testing.T, fs []Finding) {
		t.Helper()
		if !strings.Contains(fs[0].Cause, s) {
			t.Errorf("cause %q does not say %q", fs[0].Cause, s)
		}
	}
}

// TestNoWorkersAndDeadWorkerNeverTogether runs every check over a fleet
// stopped cleanly (no owners: no-workers, a warning) and over one that
// crashed (owners that renew nothing: dead-worker, critical).
func TestNoWorkersAndDeadWorkerNeverTogether(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fc        *facts
		want, not string
	}{
		{"stopped", handBuilt(7, still("s1", ""), still("s2", "")), "warn no-workers", FindDeadWorker},
		{"crashed", handBuilt(7, still("s1", "w1"), still("s2", "w2")), "critical dead-worker", FindNoWorkers},
	} {
		got := runChecks(tc.fc, checks)
		var ids []string
		for _, f := range got {
			ids = append(ids, f.Severity.String()+" "+f.ID)
			if f.ID == tc.not || f.ID == FindUnassigned {
				t.Errorf("%s fleet: %s %s: %s", tc.name, f.Severity, f.ID, f.Summary)
			}
		}
		if !slices.Contains(ids, tc.want) {
			t.Errorf("%s fleet: findings %q lack %s", tc.name, ids, tc.want)
		}
	}
}
