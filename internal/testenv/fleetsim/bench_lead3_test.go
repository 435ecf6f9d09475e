package fleetsim

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kcltool/kcltool/coordination/assignment"
	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
)

// TestBenchKCL3Leader is `make bench`'s figure for issue 26, point 5: at
// each grid point, three fleets on the simulated table, each in its own
// bubble:
//   - KCL 2.x (the port of kcl2.go: every worker scans, takes and steals);
//   - the KCL 3.x port led by Java (LeadJavaStale: every worker runs the
//     Java election and LeaseAssignmentManager on the lease-count strategy,
//     the only balancing the port has; a contender takes a lock unchanged
//     for 120 s, which lock client 1.4.0 never does: TestLedJava);
//   - kcltool 3.x (LeadKCLTool: kcltool's coordinators in AssignByLeader
//     mode, each with the production LeaderLock and assignment.Manager,
//     on the lease-count strategy as the port; KCLTOOL_BENCH_STRATEGY=throughput
//     takes the default strategy).
//
// It prints units per lease per minute (read, write, the index's writes),
// the peak read units in one second, moves per minute in the steady window,
// a follower's crash to its leases owned elsewhere, a new worker's join to
// its fair share (time and assignment runs), and the leader killed with
// kill -9 to its leases owned elsewhere, against the bound leader lease +
// two assignment intervals + failover.
// KCLTOOL_BENCH_FLEET=64x2,1000x10 picks points; KCLTOOL_BENCH_LEADS=java3
// picks fleets (kcl2, java3, kcltool3); KCLTOOL_BENCH_CONTEND=30s sets
// kcltool's LeaderLockConfig.ContendPeriod (how often a non-leader reads
// the lock; default the heartbeat period, 5 s).
func TestBenchKCL3Leader(t *testing.T) {
	if os.Getenv("KCLTOOL_BENCH") == "" {
		t.Skip("benchmark: run with KCLTOOL_BENCH=1 (make bench)")
	}
	grid := []Point{{64, 2}, {1000, 10}, {1000, 100}, {10000, 10}, {10000, 100}}
	if v := os.Getenv("KCLTOOL_BENCH_FLEET"); v != "" {
		grid = nil
		for _, s := range strings.Split(v, ",") {
			l, w, _ := strings.Cut(s, "x")
			ln, err1 := strconv.Atoi(l)
			wn, err2 := strconv.Atoi(w)
			if err1 != nil || err2 != nil {
				t.Fatalf("KCLTOOL_BENCH_FLEET: %q", s)
			}
			grid = append(grid, Point{ln, wn})
		}
	}
	want := map[string]bool{"kcl2": true, "java3": true, "kcltool3": true}
	if v := os.Getenv("KCLTOOL_BENCH_LEADS"); v != "" {
		want = map[string]bool{}
		for _, s := range strings.Split(v, ",") {
			want[s] = true
		}
	}
	defer debug.SetGCPercent(debug.SetGCPercent(200))
	start := time.Now()
	for _, p := range grid {
		var two Result
		var java, ours LedResult
		var walls [3]time.Duration
		o := ledBenchOptions(p)
		t.Run(p.String(), func(t *testing.T) {
			if want["kcl2"] {
				t.Run("kcl2", func(t *testing.T) {
					t.Parallel()
					s := time.Now()
					bo := benchOptions(p)
					bo.ShardSync = true
					two = measure(t, KCL2, p, bo)
					walls[0] = time.Since(s)
				})
			}
			if want["java3"] {
				t.Run("java3", func(t *testing.T) {
					t.Parallel()
					s := time.Now()
					synctest.Test(t, func(t *testing.T) { java = MeasureLed(LeadJavaStale, Java3, p, o) })
					walls[1] = time.Since(s)
				})
			}
			if want["kcltool3"] {
				t.Run("kcltool3", func(t *testing.T) {
					t.Parallel()
					s := time.Now()
					synctest.Test(t, func(t *testing.T) { ours = MeasureLed(LeadKCLTool, KCLTool3, p, o) })
					walls[2] = time.Since(s)
				})
			}
		})
		if want["kcl2"] {
			fmt.Printf("bench lead3 %s kcl2: units/lease/min read %.3f write %.3f; peak read/s %.0f; moves/min %.2f; crash %s; join %s (wall %s)\n",
				p, two.ReadPerLeaseMin, two.WritePerLeaseMin, two.PeakReadPerSec, two.MovesPerMin, two.Takeover.Round(100*time.Millisecond),
				joinText(two), walls[0].Round(time.Second))
		}
		for i, r := range []LedResult{java, ours} {
			if r.Lead == "" {
				continue
			}
			fmt.Printf("bench lead3 %s %s: units/lease/min read %.3f write %.3f (index %.4f); read by op %s; write by op %s; peak read/s %.0f write/s %.0f; moves/min %.2f; assign all %s; crash %s; join %s (%d runs, %d/%d); leader kill %s (new leader %s, %d leases; done %v); wall %s\n",
				p, r.Lead, r.ReadPerLeaseMin, r.WritePerLeaseMin, r.WriteByOp["Index"], opsText(r.ReadByOp), wopsText(r.WriteByOp), r.PeakReadPerSec, r.PeakWritePerSec, r.MovesPerMin,
				r.Assign.Round(100*time.Millisecond), crashText(r), doneText(r.Join, r.JoinDone), r.JoinRuns, r.JoinHeld, r.JoinFair,
				doneText(r.Kill, r.KillDone), doneText(r.NewLeader, r.NewLeaderDone), r.KillLeases, r.KillDone, walls[1+i].Round(time.Second))
		}
	}
	fmt.Printf("bench lead3: grid done in %s wall\n", time.Since(start).Round(time.Second))
}

// ledBenchOptions: three minutes of warm-up after every lease is held (the
// balance and its handoffs done), four simulated minutes of steady state (twelve runs,
// two audits) everywhere; the phases followed for at most 5 minutes.
func ledBenchOptions(p Point) LedOptions {
	var contend time.Duration
	if v := os.Getenv("KCLTOOL_BENCH_CONTEND"); v != "" {
		contend, _ = time.ParseDuration(v)
	}
	strategy := assignment.ByLeaseCount
	if os.Getenv("KCLTOOL_BENCH_STRATEGY") == "throughput" {
		strategy = assignment.ByThroughput
	}
	return LedOptions{ContendPeriod: contend, Assign: assignment.Config{Strategy: strategy}, Warmup: 3 * time.Minute, Steady: 4 * time.Minute, CrashLimit: 5 * time.Minute, JoinLimit: 5 * time.Minute, KillLimit: 6 * time.Minute,
		Java: kcl3fleet.LeaderConfig{LeaseCount: true}}
}

func doneText(d time.Duration, done bool) string {
	if !done {
		return "> " + d.Round(time.Second).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

func joinText(r Result) string {
	s := r.Join.Round(time.Second).String()
	if r.JoinExtrapolated {
		s = "~" + s
	}
	return s
}

func opsText(m map[string]float64) string {
	var b strings.Builder
	for _, op := range []string{"Scan", "Query", "GetItem"} {
		fmt.Fprintf(&b, "%s %.4f ", op, m[op])
	}
	return strings.TrimSpace(b.String())
}

func crashText(r LedResult) string {
	return doneText(r.Crash, r.CrashDone)
}

// TestBenchKCL3Rolling is the rolling deploy of issue 26, point 5: 64
// leases × 4 workers, every worker stopped gracefully in turn and replaced
// (MeasureRolling), five seeds, the Java-led port against kcltool's lead.
// It prints the longest time any shard went unread, median and max over
// the seeds. KCLTOOL_BENCH_LEADS as TestBenchKCL3Leader.
func TestBenchKCL3Rolling(t *testing.T) {
	if os.Getenv("KCLTOOL_BENCH") == "" {
		t.Skip("benchmark: run with KCLTOOL_BENCH=1 (make bench)")
	}
	want := map[string]bool{"java3": true, "kcltool3": true}
	if v := os.Getenv("KCLTOOL_BENCH_LEADS"); v != "" {
		want = map[string]bool{}
		for _, s := range strings.Split(v, ",") {
			want[s] = true
		}
	}
	p := Point{64, 4}
	for _, c := range []struct {
		name   string
		lead   Lead
		engine Engine
	}{{"java3", LeadJava, Java3}, {"kcltool3", LeadKCLTool, KCLTool3}} {
		if !want[c.name] {
			continue
		}
		var longest []time.Duration
		var deploy time.Duration
		for seed := uint64(1); seed <= 5; seed++ {
			synctest.Test(t, func(t *testing.T) {
				r := MeasureRolling(c.lead, c.engine, p, LedOptions{Seed: seed, Java: kcl3fleet.LeaderConfig{LeaseCount: true}})
				longest = append(longest, r.Longest)
				deploy = max(deploy, r.Deploy)
			})
		}
		med, mx := medianMax(longest)
		fmt.Printf("bench lead3 rolling %s %s: longest unread median %s max %s over %d seeds (%v); deploy at most %s\n",
			p, c.lead, med.Round(100*time.Millisecond), mx.Round(100*time.Millisecond), len(longest), longest, deploy.Round(time.Second))
	}
}

func wopsText(m map[string]float64) string {
	var b strings.Builder
	for _, op := range []string{"UpdateItem", "PutItem", "DeleteItem", "Index"} {
		fmt.Fprintf(&b, "%s %.4f ", op, m[op])
	}
	return strings.TrimSpace(b.String())
}
