package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
	"github.com/kcltool/kcltool/leasecore"
)

// A kcltool worker joins a live KCL 3.x fleet in both layouts: it reports
// its metrics where the layout says, so that the leader counts it active
// and assigns it leases; it reads and checkpoints them, writes no lease
// of its own accord (no take, no steal) and says its mode at start.
func TestKCL3JoinsFleet(t *testing.T) {
	for _, kind := range []kcl3fleet.Kind{kcl3fleet.NewApp, kcl3fleet.SideTables} {
		t.Run(kind.String(), func(t *testing.T) {
			s := newKCL3Stack(t, 2, kcl3fleet.Layout{Kind: kind})
			sent := s.put(t, func(k string) string { return "v-" + k }, keys("k", 20)...)
			out := outFile(t)
			cfg := s.kcl3Config(t, "kcltool-1", out)
			cfg.Log, _, _ = timedLogger(t, "kcltool-1")
			r := start(t, s.stack, cfg)
			s.leader(t)

			eventually(t, 30*time.Second, "every record handled", func() bool { return len(readHandled(t, out)) == len(sent) })
			// The bytes read reach the renewals' throughputKBps, which the
			// leader balances on (no CPU metric off EC2, ECS and EKS).
			eventually(t, 10*time.Second, "throughputKBps written", func() bool {
				for _, key := range s.shards {
					if tp := s.lease(t, key).ThroughputKBps; tp != nil && *tp > 0 {
						return true
					}
				}
				return false
			})
			last := lastPerShard(readHandled(t, out))
			eventually(t, 10*time.Second, "checkpoints at the last records", func() bool {
				for shard, seq := range last {
					if s.lease(t, shard).Checkpoint.SequenceNumber != seq {
						return false
					}
				}
				return true
			})
			for k, o := range s.owners(t) {
				if o != "kcltool-1" {
					t.Errorf("lease %s owned by %q, want kcltool-1", k, o)
				}
			}
			reps, err := s.fleet.WorkerMetricsReports(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var mine *kcl3fleet.WorkerMetricsReport
			for i := range reps {
				if reps[i].WorkerID == "kcltool-1" {
					mine = &reps[i]
				}
			}
			if mine == nil || mine.Table != s.fleet.MetricsTable() {
				t.Fatalf("kcltool's metrics item: %+v, want one in %s", reps, s.fleet.MetricsTable())
			}
			if !mine.Active(time.Now(), kcl3MetricsPeriod) {
				t.Errorf("the leader does not count kcltool active: %+v", *mine)
			}
			if got := r.w.coordAssignment(); got != leasecore.AssignByLeader {
				t.Errorf("assignment %s, want leader", got)
			}
			if err := r.stop(t); err != nil {
				t.Fatal(err)
			}
			// The graceful stop evicts (the KCL 3.x evict write): no owner,
			// the checkpoints kept, for the leader's next round.
			for _, key := range s.shards {
				l := s.lease(t, key)
				if l.LeaseOwner != "" || l.Checkpoint.SequenceNumber != last[key] {
					t.Errorf("lease %s after the stop: owner %q checkpoint %s, want no owner and %s", key, l.LeaseOwner, l.Checkpoint.SequenceNumber, last[key])
				}
			}
			// And its metrics item is gone, so that the leader gives it
			// none of them back.
			if mine := metricsItemOf(t, s, "kcltool-1"); mine != nil {
				t.Errorf("kcltool's metrics item left after the graceful stop: %+v", *mine)
			}
		})
	}
}

// The start-up log says the mode and why.
func TestKCL3ModeLogged(t *testing.T) {
	s := newKCL3Stack(t, 1, kcl3fleet.Layout{Kind: kcl3fleet.SideTables})
	cfg := s.kcl3Config(t, "kcltool-1", outFile(t))
	var buf *logBuffer
	cfg.Log, buf = recordedLogger(t, "kcltool-1")
	r := start(t, s.stack, cfg)
	eventually(t, 10*time.Second, "the mode logged", func() bool { return strings.Contains(buf.String(), "lease assignment mode") })
	line := ""
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.Contains(l, "lease assignment mode") {
			line = l
		}
	}
	for _, want := range []string{"assignment=leader", coordination.ClientVersion3X, leasecore.KCL3IndexName} {
		if !strings.Contains(line, want) {
			t.Errorf("mode line lacks %q: %s", want, line)
		}
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}
