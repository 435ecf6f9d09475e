package assignment

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kcltool/kcltool/coordination"
)

// Issue 26, "no steady-state movement": on workers without CPU data (the
// synthetic "T" metric, whose operating range of 100 is the fleet's
// average) a balancing run moves nothing while every worker is within the
// average ±reBalanceThresholdPercentage, where the KCL moves a lease from
// any worker above the average (variance.takeFrom). Out of the band, the
// workers above the average give, as in the KCL.
func TestSyntheticMetricKeepsTheBand(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	for _, tc := range []struct {
		name   string
		tputs  [][]float64 // per worker, its leases' throughputKBps (nil: none)
		moves  int
		toLast int // moves to the last worker
	}{
		// 33 and 31 leases without throughput: T 103.1 and 96.9. The
		// KCL moves one (bench at 64 × 2: 0.75 moves a minute).
		{"unit leases a lease apart", [][]float64{n(33, 0), n(31, 0)}, 0, 0},
		// 35 and 29: T 109.4 and 90.6, still inside.
		{"unit leases at the band's edge", [][]float64{n(35, 0), n(29, 0)}, 0, 0},
		// Ten workers of 100 leases with uneven throughputs: within ±5%.
		{"uneven throughputs within 5%", uneven(10, 100, 0.05), 0, 0},
		// 37 and 27: T 115.6 and 84.4: out of the band, a gives
		// 37 × 15.6/115.6 = 5 KBps undampened, 5 leases (to the
		// nearest lease: the KCL's rule stops under it, at 4).
		{"out of the band", [][]float64{n(37, 0), n(27, 0)}, 5, 5},
		// A new worker: the ten above the average all give (T 110 each:
		// 100 × 10/110 = 9.1 KBps, 9 leases each) until it reaches the
		// average: 90 leases, 1,000/11 = 90.9 being its share.
		{"a new worker", [][]float64{n(100, 0), n(100, 0), n(100, 0), n(100, 0), n(100, 0), n(100, 0), n(100, 0), n(100, 0), n(100, 0), n(100, 0), nil}, 90, 90},
		// The same after a crash (bench at 1,000 × 10): one worker at
		// 112 leases, eight at 111 and a new one: each gives 11 (12) to
		// the new one, which ends on the average, 100, not a lease under
		// it for a rounding error.
		{"a new worker on the average", [][]float64{n(112, 0), n(111, 0), n(111, 0), n(111, 0), n(111, 0), n(111, 0), n(111, 0), n(111, 0), n(111, 0), nil}, 100, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ws []coordination.WorkerMetrics
			var ls []*lease
			for i, tp := range tc.tputs {
				id := fmt.Sprintf("w%02d", i)
				ws = append(ws, coordination.WorkerMetrics{WorkerID: id, LastUpdate: now})
				for j, x := range tp {
					var p *float64
					if x > 0 {
						p = f64(x)
					}
					ls = append(ls, mkLease(fmt.Sprintf("%s-%d", id, j), id, 1, p))
				}
			}
			cfg := Config{}.WithDefaults()
			v := newView(ls, ws, cfg, now)
			newVariance(v, cfg, rand.New(rand.NewPCG(1, 1))).balance()
			last := ws[len(ws)-1].WorkerID
			to := 0
			for _, l := range v.order {
				if v.moves[l] == last {
					to++
				}
			}
			if len(v.order) != tc.moves || to != tc.toLast {
				t.Fatalf("%d moves, %d to %s; want %d and %d", len(v.order), to, last, tc.moves, tc.toLast)
			}
		})
	}
}

// n is k leases of throughput x.
func n(k int, x float64) []float64 {
	out := make([]float64, k)
	for i := range out {
		out[i] = x
	}
	return out
}

// uneven is workers × leases throughputs between 0.5 and 1.5 KBps, each
// worker's total scaled to within ±spread of the others' (alternately
// above and below).
func uneven(workers, leases int, spread float64) [][]float64 {
	r := rand.New(rand.NewPCG(7, 7))
	out := make([][]float64, workers)
	for w := range out {
		out[w] = make([]float64, leases)
		sum := 0.0
		for i := range out[w] {
			out[w][i] = 0.5 + r.Float64()
			sum += out[w][i]
		}
		scale := float64(leases) / sum * (1 + spread*float64(1-2*(w%2)))
		for i := range out[w] {
			out[w][i] *= scale
		}
	}
	return out
}

// A hot worker still sheds: with CPU data, a worker above its operating
// range gives leases although every worker is within the band (the KCL's
// rule, kept for measured metrics): a at 75% against a range of 70, the
// average 70, gives 100 × 5/75 × 60% = 4 KBps, 3 leases, to c (65%).
func TestHotCPUWorkerSheds(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	var ws []coordination.WorkerMetrics
	for _, c := range []struct {
		id  string
		cpu float64
	}{{"a", 75}, {"b", 70}, {"c", 65}} {
		m := cpuWorker(c.id, c.cpu)
		m.OperatingRange["C"] = []int64{70}
		m.LastUpdate = now
		ws = append(ws, m)
	}
	var ls []*lease
	for i := range 300 {
		ls = append(ls, mkLease(fmt.Sprint(i), []string{"a", "b", "c"}[i%3], 1, f64(1)))
	}
	cfg := Config{}.WithDefaults()
	v := newView(ls, ws, cfg, now)
	newVariance(v, cfg, rand.New(rand.NewPCG(1, 1))).balance()
	for _, l := range v.order {
		if l.actualOwner() != "a" || v.moves[l] != "c" {
			t.Fatalf("%s moved from %s to %s; want from a to c", l.seen.LeaseKey, l.actualOwner(), v.moves[l])
		}
	}
	if len(v.order) != 3 {
		t.Fatalf("hot worker a (75%% CPU against 70) gave %d leases, want 3", len(v.order))
	}
}

// combining with nearest (the synthetic metric): a lease is taken while it
// brings what is left to take closer to zero.
func TestCombiningToTheNearest(t *testing.T) {
	for _, tc := range []struct {
		tputs []float64
		take  float64
		want  []float64
	}{
		{[]float64{1, 1, 1}, 2.0, []float64{1, 1}}, // the KCL's rule: one
		{[]float64{1, 1, 1}, 1.6, []float64{1, 1}}, // 0.6 left: the second is nearer
		{[]float64{1, 1, 1}, 1.4, []float64{1}},    // 0.4 left: it stays
		{[]float64{3, 1, 2}, 3.5, []float64{3}},    // 0.5 left: 1 and 2 overshoot more
		{[]float64{2, 1, 3}, 3.5, []float64{2, 1}}, // 0.5 left
		{[]float64{1, 1, 1}, 0.4, []float64{1}},    // none nearer: the lightest (overshoot)
	} {
		var ls []*lease
		for _, tp := range tc.tputs {
			ls = append(ls, &lease{tput: tp})
		}
		d := &variance{cfg: Config{}}
		var got []float64
		for _, l := range d.combining(ls, tc.take, true) {
			got = append(got, l.tput)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("combining %v to %v, to the nearest: %v, want %v", tc.tputs, tc.take, got, tc.want)
		}
	}
}
