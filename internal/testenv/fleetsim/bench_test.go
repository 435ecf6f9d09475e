package fleetsim

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBenchFleet is `make bench`'s fleet-scale figure (issue 17): for each
// grid point, kcltool's coordinators and the port of KCL 2.x on the same
// model table, ten simulated minutes of steady state, a crash and a join.
// KCLTOOL_BENCH_FLEET=64x2,1000x10 picks points; KCLTOOL_BENCH_STEADY a
// shorter window.
func TestBenchFleet(t *testing.T) {
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
	steady := time.Duration(0)
	if v := os.Getenv("KCLTOOL_BENCH_STEADY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		steady = d
	}
	// The fleets' garbage is most of the heap's churn (a scan's leases,
	// dropped at the next): collecting less often saves a tenth of the CPU
	// for about twice the memory (2 GB at 10,000 x 100).
	defer debug.SetGCPercent(debug.SetGCPercent(200))
	start := time.Now()
	for _, p := range grid {
		o := benchOptions(p)
		if steady > 0 {
			o.Steady = steady
		}
		// The two engines run side by side, each in its own bubble: the
		// figures are simulated, only the wall time shares the machine.
		var ours, kcl Result
		t.Run(p.String(), func(t *testing.T) {
			t.Run("kcltool", func(t *testing.T) { t.Parallel(); ours = timed(t, KCLTool, p, o) })
			t.Run("kcl2", func(t *testing.T) { t.Parallel(); kcl = timed(t, KCL2, p, o) })
		})
		printPoint(ours, kcl)
	}
	// The periodic lease-table reads beside the coordinators: kcltool's
	// shard sync (the taker's latest scan, or a consistent scan when that
	// is older than the sync interval: kcltool.go), KCL 2.x's leader
	// election (a scan per worker every 5 minutes) and leader audit (one
	// scan every 2 minutes).
	if os.Getenv("KCLTOOL_BENCH_FLEET") == "" {
		p := Point{1000, 10}
		o := Options{Steady: 10 * time.Minute, ShardSync: true, SkipCrash: true, SkipJoin: true}
		var ours, kcl Result
		t.Run("shard sync", func(t *testing.T) {
			t.Run("kcltool", func(t *testing.T) { t.Parallel(); ours = timed(t, KCLTool, p, o) })
			t.Run("kcl2", func(t *testing.T) { t.Parallel(); kcl = timed(t, KCL2, p, o) })
		})
		fmt.Printf("bench fleet %s with shard sync: units/lease/min read %.3f + write %.3f = %.3f; KCL 2.x (leader election, audit) %.3f + %.3f = %.3f; ratio %.3f\n",
			p, ours.ReadPerLeaseMin, ours.WritePerLeaseMin, ours.Total(), kcl.ReadPerLeaseMin, kcl.WritePerLeaseMin, kcl.Total(), ours.Total()/kcl.Total())
	}
	fmt.Printf("bench fleet: grid done in %s wall (budget 6m)\n", time.Since(start).Round(time.Second))
}

// benchOptions fits the grid into make bench's budget on a 2-core machine:
// ten simulated minutes of steady state where the fleet's scans allow it,
// one at 10,000 leases x 100 workers (a hundred workers each decoding a
// 10,000-lease scan every 20 s: half a minute of CPU per simulated minute;
// the figures are per minute of a periodic schedule, three scans per worker
// in the window); joins followed for at most 2 minutes (1 at 10,000 x 100),
// then extrapolated from the steal rate.
func benchOptions(p Point) Options {
	o := Options{Steady: 10 * time.Minute, CrashLimit: 2 * time.Minute, JoinLimit: 2 * time.Minute}
	if p.Leases <= 100 {
		o.JoinLimit = 12 * time.Minute
	}
	if p.Leases*p.Workers > 100_000 {
		o.Steady, o.CrashLimit, o.JoinLimit = time.Minute, time.Minute, time.Minute
	}
	return o
}

func timed(t *testing.T, e Engine, p Point, o Options) Result {
	start := time.Now()
	r := measure(t, e, p, o)
	r.Wall = time.Since(start)
	return r
}

func printPoint(ours, kcl Result) {
	p := ours.Point
	join := func(r Result) string {
		s := r.Join.Round(time.Second).String()
		if r.JoinExtrapolated {
			s = fmt.Sprintf("~%s (extrapolated from %d/%d)", s, r.JoinGained, r.Fair)
		}
		return s
	}
	fmt.Printf("bench fleet %s: units/lease/min read %.3f + write %.3f = %.3f; KCL 2.x %.3f + %.3f = %.3f; ratio %.3f (steady %s)\n",
		p, ours.ReadPerLeaseMin, ours.WritePerLeaseMin, ours.Total(), kcl.ReadPerLeaseMin, kcl.WritePerLeaseMin, kcl.Total(),
		ours.Total()/kcl.Total(), ours.Steady)
	fmt.Printf("bench fleet %s: moves/min %.2f (KCL 2.x %.2f); peak read units/s %.1f (KCL 2.x %.1f)\n",
		p, ours.MovesPerMin, kcl.MovesPerMin, ours.PeakReadPerSec, kcl.PeakReadPerSec)
	fmt.Printf("bench fleet %s: crash takeover %s (KCL 2.x %s); join to fair share %d: %s (KCL 2.x %s); wall %s + %s\n",
		p, ours.Takeover.Round(100*time.Millisecond), kcl.Takeover.Round(100*time.Millisecond), ours.Fair, join(ours), join(kcl),
		ours.Wall.Round(100*time.Millisecond), kcl.Wall.Round(100*time.Millisecond))
}
