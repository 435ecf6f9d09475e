package assignment

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/leasecore"
)

// Pure tests of the deciders' rules, each from the KCL 3.5.1 method it
// ports (named in the case or the test).

func cpuWorker(id string, cpu ...float64) coordination.WorkerMetrics {
	return coordination.WorkerMetrics{WorkerID: id, Samples: map[string][]float64{"C": cpu},
		OperatingRange: map[string][]int64{"C": {100}}}
}

func ids(ws []*worker) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.id)
	}
	return out
}

// VarianceBasedLeaseAssignmentDecider.getWorkersToTakeLeasesFromIfRequired:
// rebalance when a worker is strictly outside avg ±10% or above its
// operating range; take from those at or above the upper limit (or above
// range), else from the most loaded.
func TestTakeFrom(t *testing.T) {
	for _, tc := range []struct {
		name string
		cpu  []float64
		opr  int64
		want string
	}{
		{"all within ±10%", []float64{100, 105, 95}, 200, "[]"},
		{"on the limits is within", []float64{110, 100, 90}, 200, "[]"},
		{"one above the upper limit", []float64{115, 100, 85}, 200, "[w0]"},
		{"two above", []float64{120, 112, 68}, 200, "[w0 w1]"},
		{"only one below: the most loaded gives", []float64{105, 107, 88}, 200, "[w1]"},
		{"above its operating range", []float64{60, 60, 60}, 50, "[w0 w1 w2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ws []*worker
			sum := 0.0
			for i, c := range tc.cpu {
				m := cpuWorker(fmt.Sprintf("w%d", i), c)
				m.OperatingRange["C"] = []int64{tc.opr}
				ws = append(ws, newWorker(m, 0.5))
				ws[i].metric("C")
				sum += c
			}
			d := &variance{cfg: Config{}.WithDefaults()}
			if got := fmt.Sprint(ids(d.takeFrom(ws, "C", sum/float64(len(ws))))); got != tc.want && !(got == "[]" && tc.want == "[]") {
				t.Fatalf("take from %v, want %v", got, tc.want)
			}
		})
	}
}

// getLeasesCombiningToThroughput: a lease is taken while the throughput
// still to take stays above zero after it; with allowThroughputOvershoot
// and nothing taken, the lightest lease.
func TestCombining(t *testing.T) {
	for _, tc := range []struct {
		tputs     []float64
		take      float64
		overshoot bool
		want      []float64
	}{
		{[]float64{1, 1, 1}, 1.2, true, []float64{1}},
		{[]float64{1, 1, 1}, 2.5, true, []float64{1, 1}},
		{[]float64{1, 1, 1}, 1.0, true, []float64{1}}, // none fits: the lightest
		{[]float64{1, 1, 1}, 1.0, false, nil},         // none fits, no overshoot
		{[]float64{3, 1, 2}, 3.5, true, []float64{3}}, // 3 leaves 0.5; 1 and 2 would not
		{[]float64{3, 1, 2}, 0.5, true, []float64{1}}, // overshoot takes the lightest
		{[]float64{3, 1, 2}, 6.5, false, []float64{3, 1, 2}},
	} {
		var ls []*lease
		for _, tp := range tc.tputs {
			ls = append(ls, &lease{tput: tp})
		}
		d := &variance{cfg: Config{NoThroughputOvershoot: !tc.overshoot}}
		var got []float64
		for _, l := range d.combining(ls, tc.take, false) {
			got = append(got, l.tput)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("combining %v to %v (overshoot %v): %v, want %v", tc.tputs, tc.take, tc.overshoot, got, tc.want)
		}
	}
}

// WorkerMetricStats.getMetricStat (an ExponentialMovingAverage, the first
// value as is, -1 skipped) and computePercentageToReachAverage (1 for an
// idle metric, (avg − v)/v otherwise, the smallest over the metrics).
func TestWorkerMetric(t *testing.T) {
	for _, tc := range []struct {
		samples []float64
		alpha   float64
		want    float64
	}{
		{[]float64{10, 20}, 0.5, 15},
		{[]float64{10, -1, 20}, 0.5, 15},
		{[]float64{10, 20}, 0.2, 12},
		{[]float64{-1}, 0.5, 0},
		{nil, 0.5, 0},
	} {
		w := newWorker(cpuWorker("w", tc.samples...), tc.alpha)
		if got := w.metric("C"); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("EMA of %v (alpha %v) = %v, want %v", tc.samples, tc.alpha, got, tc.want)
		}
	}
	fleet := map[string]float64{"C": 50, "M": 40}
	for _, tc := range []struct {
		m    coordination.WorkerMetrics
		want float64
	}{
		{cpuWorker("idle", 0), 1},
		{cpuWorker("low", 25), 1},
		{cpuWorker("hot", 100), -0.5},
		{coordination.WorkerMetrics{Samples: map[string][]float64{"C": {25}, "M": {80}}}, -0.5}, // the smaller
		{coordination.WorkerMetrics{}, math.MaxFloat64},
	} {
		if got := newWorker(tc.m, 0.5).toReachAverage(fleet); got != tc.want {
			t.Errorf("%s: to reach average %v, want %v", tc.m.WorkerID, got, tc.want)
		}
	}
}

// isValidWorkerMetric, isAnyWorkerMetricFailing and isExpired (lut older
// than 2 × workerMetricsReporterFreqInMillis: MigrationAwareLAMDataManager)
// decide the active workers; isUsingDefaultWorkerMetric (empty sts and
// opr, or a "T" metric) exempts a worker from the first two.
func TestActiveWorkers(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	fresh := now.Add(-60 * time.Second)
	for _, tc := range []struct {
		name   string
		m      coordination.WorkerMetrics
		active bool
	}{
		{"default metric", coordination.WorkerMetrics{LastUpdate: fresh}, true},
		{"cpu", coordination.WorkerMetrics{LastUpdate: fresh, Samples: map[string][]float64{"C": {10}}, OperatingRange: map[string][]int64{"C": {100}}}, true},
		{"stale: 61 s", coordination.WorkerMetrics{LastUpdate: now.Add(-61 * time.Second)}, false},
		{"no lut", coordination.WorkerMetrics{}, false},
		{"last sample failed", coordination.WorkerMetrics{LastUpdate: fresh, Samples: map[string][]float64{"C": {10, -1}}, OperatingRange: map[string][]int64{"C": {100}}}, false},
		{"earlier sample failed", coordination.WorkerMetrics{LastUpdate: fresh, Samples: map[string][]float64{"C": {-1, 10}}, OperatingRange: map[string][]int64{"C": {100}}}, true},
		{"no operating range for a metric", coordination.WorkerMetrics{LastUpdate: fresh, Samples: map[string][]float64{"C": {10}}, OperatingRange: map[string][]int64{"M": {100}}}, false},
		{"operating range 0", coordination.WorkerMetrics{LastUpdate: fresh, Samples: map[string][]float64{"C": {10}}, OperatingRange: map[string][]int64{"C": {0}}}, false},
		{"T with a failed sample is default", coordination.WorkerMetrics{LastUpdate: fresh, Samples: map[string][]float64{"T": {-1}}}, true},
	} {
		tc.m.WorkerID = "w"
		v := newView(nil, []coordination.WorkerMetrics{tc.m}, Config{}.WithDefaults(), now)
		if got := len(v.active) == 1; got != tc.active {
			t.Errorf("%s: active %v, want %v", tc.name, got, tc.active)
		}
	}
}

func mkLease(key, owner string, counter int64, tput *float64) *lease {
	return &lease{seen: leasecore.Lease{LeaseKey: key, LeaseOwner: owner, LeaseCounter: counter, ThroughputKBps: tput,
		Checkpoint: leasecore.SequenceNumber{SequenceNumber: "TRIM_HORIZON"}}}
}

func f64(v float64) *float64 { return &v }

// loadInMemoryStorageView: a lease without throughputKBps counts the
// average; targetAverageThroughput = average × leases / workers; a worker
// without CPU gets "T" = its throughput / the target × 100 against an
// operating range of 100 (setOperatingRangeAndWorkerMetricsDataForDefaultWorker).
// kcltool's one change: no throughput anywhere weighs every lease 1.
func TestDefaultWorkerMetric(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	ws := []coordination.WorkerMetrics{{WorkerID: "a", LastUpdate: now}, {WorkerID: "b", LastUpdate: now}}
	ls := []*lease{mkLease("1", "a", 1, f64(10)), mkLease("2", "a", 1, f64(30)), mkLease("3", "a", 1, nil), mkLease("4", "b", 1, f64(20))}
	v := newView(ls, ws, Config{}.WithDefaults(), now)
	if v.targetTput != 40 || ls[2].tput != 20 {
		t.Fatalf("target %v, lease without throughput %v; want 40 and the average 20", v.targetTput, ls[2].tput)
	}
	if a, b := v.active[0].metric("T"), v.active[1].metric("T"); a != 150 || b != 50 || v.active[0].maxOf("T") != 100 {
		t.Fatalf("T of a %v, of b %v; want 150 and 50 against 100", a, b)
	}
	unit := []*lease{mkLease("1", "a", 1, nil), mkLease("2", "a", 1, f64(0)), mkLease("3", "a", 1, nil)}
	v = newView(unit, ws, Config{}.WithDefaults(), now)
	if a, b := v.active[0].metric("T"), v.active[1].metric("T"); a != 200 || b != 0 || math.IsNaN(a) {
		t.Fatalf("no throughput: T of a %v, of b %v; want lease counts, 200 and 0", a, b)
	}
}

// balanceWorkerVariance: take throughput × (v − avg)/v × 60% from each
// worker above the limit and give it to the workers with the most room.
// Two workers at 75% CPU and one at 0 (30, 30, 0 leases of 1 KBps): each
// gives 30 × (25/75) × 0.6 = 6 KBps, that is 5 leases (a lease is taken
// only while some throughput is left to take after it). On the synthetic
// "T" metric (workers without CPU, 150, 150 and 0) kcltool does not
// dampen (variance.dampening): each gives 30 × 50/150 = 10 KBps, 10 leases
// (to the nearest lease), whatever the dampening.
func TestBalanceMovesDampenedThroughput(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	cpu := func(id string, v float64) coordination.WorkerMetrics {
		m := cpuWorker(id, v)
		m.LastUpdate = now
		return m
	}
	withCPU := []coordination.WorkerMetrics{cpu("a", 75), cpu("b", 75), cpu("c", 0)}
	noCPU := []coordination.WorkerMetrics{{WorkerID: "a", LastUpdate: now}, {WorkerID: "b", LastUpdate: now}, {WorkerID: "c", LastUpdate: now}}
	for _, tc := range []struct {
		ws        []coordination.WorkerMetrics
		dampening int
		want      int
	}{{withCPU, 60, 10}, {withCPU, 100, 18}, {withCPU, 30, 4}, {noCPU, 60, 20}, {noCPU, 30, 20}} {
		var ls []*lease
		for i := range 60 {
			ls = append(ls, mkLease(fmt.Sprint(i), []string{"a", "b"}[i%2], 1, f64(1)))
		}
		cfg := Config{DampeningPercentage: tc.dampening}.WithDefaults()
		v := newView(ls, tc.ws, cfg, now)
		d := newVariance(v, cfg, rand.New(rand.NewPCG(1, 1)))
		d.balance()
		to := map[string]int{}
		for _, l := range v.order {
			to[v.moves[l]]++
		}
		if len(v.order) != tc.want || to["c"] != tc.want {
			t.Errorf("dampening %d, CPU %v: moves %v, want %d to c", tc.dampening, tc.ws[0].Samples != nil, to, tc.want)
		}
	}
	// With the fleet even, nothing moves.
	var ls []*lease
	for i := range 12 {
		ls = append(ls, mkLease(fmt.Sprint(i), []string{"a", "b", "c"}[i%3], 1, f64(1)))
	}
	cfg := Config{}.WithDefaults()
	v := newView(ls, noCPU, cfg, now)
	newVariance(v, cfg, rand.New(rand.NewPCG(1, 1))).balance()
	if len(v.order) != 0 {
		t.Fatalf("even fleet: %d moves", len(v.order))
	}
}

// VarianceBasedLeaseAssignmentDecider.assignLease: a lease whose actual
// owner is the chosen worker is not moved, unless it is an expired lease
// pending a handoff checkpoint (it would be stuck otherwise).
func TestAssignSkipsTheOwner(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	ws := []coordination.WorkerMetrics{{WorkerID: "a", LastUpdate: now}}
	own := mkLease("1", "a", 1, nil)
	pending := mkLease("2", "b", 1, nil)
	pending.seen.CheckpointOwner = "a"
	cfg := Config{}.WithDefaults()
	v := newView([]*lease{own, pending}, ws, cfg, now)
	d := newVariance(v, cfg, rand.New(rand.NewPCG(1, 1)))
	if left := d.assignExpired([]*lease{own, pending}); len(left) != 0 {
		t.Fatalf("left %d", len(left))
	}
	if _, moved := v.moves[own]; moved {
		t.Fatal("a lease was moved to its own owner")
	}
	if v.moves[pending] != "a" {
		t.Fatalf("the expired pending handoff went to %q, want a", v.moves[pending])
	}
}

// assignExpiredOrUnassignedLeases: oldest lastCounterIncrementNanos first,
// unassigned (0) before all; the queue empty, the rest is spillover.
func TestExpiredOrderAndSpillover(t *testing.T) {
	base := time.Unix(1_790_000_000, 0)
	old, older, un := mkLease("old", "x", 1, nil), mkLease("older", "x", 1, nil), mkLease("un", "", 0, nil)
	old.lastMove, older.lastMove = base.Add(-20*time.Second), base.Add(-40*time.Second)
	ls := []*lease{old, un, older}
	sortByLastMove(ls)
	if got := []string{ls[0].seen.LeaseKey, ls[1].seen.LeaseKey, ls[2].seen.LeaseKey}; fmt.Sprint(got) != "[un older old]" {
		t.Fatalf("order %v", got)
	}
	// maxLeasesForWorker 1 and one worker: two leases spill over.
	cfg := Config{MaxLeasesForWorker: 1}.WithDefaults()
	v := newView(ls, []coordination.WorkerMetrics{{WorkerID: "a", LastUpdate: base}}, cfg, base)
	left := newVariance(v, cfg, rand.New(rand.NewPCG(1, 1))).assignExpired(ls)
	if len(left) != 2 || v.moves[un] != "a" {
		t.Fatalf("left %d, un to %q; want 2 left and un with a", len(left), v.moves[un])
	}
}

// LeaseCountBasedLeaseAssignmentDecider: calculateTargetLeaseCount is
// ceil(leases/workers), 1 with as many workers as leases, capped at
// maxLeasesForWorker; balanceWorkerVariance moves one lease at a time from
// the most to the least loaded, never a lease blocked on a handoff.
func TestLeaseCount(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	for _, tc := range []struct{ leases, workers, max, want int }{
		{12, 3, 0, 4}, {13, 3, 0, 5}, {2, 3, 0, 1}, {3, 3, 0, 1}, {100, 2, 10, 10},
	} {
		var ws []coordination.WorkerMetrics
		for i := range tc.workers {
			ws = append(ws, coordination.WorkerMetrics{WorkerID: fmt.Sprint(i), LastUpdate: now})
		}
		ls := make([]*lease, tc.leases)
		for i := range ls {
			ls[i] = mkLease(fmt.Sprint(i), "", 0, nil)
		}
		cfg := Config{MaxLeasesForWorker: tc.max}.WithDefaults()
		d := &leaseCount{v: newView(ls, ws, cfg, now), cfg: cfg, now: now}
		if got := d.target(); got != tc.want {
			t.Errorf("target for %d leases, %d workers, max %d: %d, want %d", tc.leases, tc.workers, tc.max, got, tc.want)
		}
	}

	ws := []coordination.WorkerMetrics{{WorkerID: "a", LastUpdate: now}, {WorkerID: "b", LastUpdate: now}, {WorkerID: "c", LastUpdate: now}}
	var ls []*lease
	for i := range 12 {
		ls = append(ls, mkLease(fmt.Sprintf("%02d", i), []string{"a", "b"}[i%2], 1, nil))
	}
	// Two of b's leases are in a handoff that has not timed out.
	for _, l := range ls[1:4:4] {
		if l.seen.LeaseOwner == "b" {
			l.seen.LeaseOwner, l.seen.CheckpointOwner, l.handoffEnd = "a", "b", now.Add(time.Minute)
		}
	}
	cfg := Config{}.WithDefaults()
	v := newView(ls, ws, cfg, now)
	d := &leaseCount{v: v, cfg: cfg, now: now}
	d.balance()
	counts := d.counts()
	if counts["a"] != 4 || counts["b"] != 4 || counts["c"] != 4 {
		t.Fatalf("counts after balance %v, want 4 each", counts)
	}
	for _, l := range v.order {
		if l.seen.CheckpointOwner != "" {
			t.Fatalf("moved %s, blocked on a pending handoff", l.seen.LeaseKey)
		}
	}
}

// Lease.blockedOnPendingCheckpoint and isEligibleForGracefulShutdown.
func TestLeaseHandoffRules(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	for _, tc := range []struct {
		name              string
		cp                string
		expired, shardEnd bool
		deadline          time.Duration
		blocked, graceful bool
	}{
		{"live", "", false, false, 0, false, true},
		{"expired", "", true, false, 0, false, false},
		{"at shard end", "", false, true, 0, false, false},
		{"handoff pending", "b", false, false, time.Second, true, false},
		{"handoff timed out", "b", false, false, 0, false, false},
		{"handoff pending, expired", "b", true, false, time.Second, false, false},
		{"handoff pending, shard end", "b", false, true, time.Second, false, false},
	} {
		l := mkLease("k", "a", 1, nil)
		l.seen.CheckpointOwner, l.expiredOrUnassigned, l.handoffEnd = tc.cp, tc.expired, now.Add(tc.deadline)
		if tc.shardEnd {
			l.seen.Checkpoint.SequenceNumber = leasecore.SHARD_END
		}
		if b, g := l.blockedOnPendingCheckpoint(now), l.eligibleForGracefulShutdown(); b != tc.blocked || g != tc.graceful {
			t.Errorf("%s: blocked %v graceful %v, want %v %v", tc.name, b, g, tc.blocked, tc.graceful)
		}
	}
}

// updateLeasesLastCounterIncrementNanosAndLeaseShutdownTimeout: the time
// a counter last moved, and a handoff's deadline kept while the same
// handoff is seen.
func TestTrack(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	m := NewManager(nil, coordination.Tables{}, Config{}, nil, nil)
	scan := func(at time.Time, ls ...*lease) map[string]*lease {
		m.track(ls, at)
		out := map[string]*lease{}
		for _, l := range ls {
			out[l.seen.LeaseKey] = l
		}
		return out
	}
	h := mkLease("h", "b", 5, nil)
	h.seen.CheckpointOwner = "a"
	got := scan(now, mkLease("x", "a", 5, nil), mkLease("u", "", 0, nil), h)
	if !got["x"].lastMove.Equal(now) || !got["u"].lastMove.IsZero() || !got["h"].handoffEnd.Equal(now.Add(40*time.Second)) {
		t.Fatalf("first scan: %+v %+v %+v", got["x"], got["u"], got["h"])
	}
	later := now.Add(20 * time.Second)
	h2 := mkLease("h", "b", 6, nil)
	h2.seen.CheckpointOwner = "a"
	got = scan(later, mkLease("x", "a", 5, nil), mkLease("u", "", 0, nil), h2)
	if !got["x"].lastMove.Equal(now) || !got["h"].lastMove.Equal(later) || !got["h"].handoffEnd.Equal(now.Add(40*time.Second)) {
		t.Fatalf("second scan: x moved %v, h moved %v, h deadline %v", got["x"].lastMove, got["h"].lastMove, got["h"].handoffEnd)
	}
	h3 := mkLease("h", "c", 6, nil)
	h3.seen.CheckpointOwner = "a"
	got = scan(later.Add(time.Second), mkLease("x", "a", 2, nil), h3)
	if !got["x"].lastMove.Equal(later.Add(time.Second)) || !got["h"].handoffEnd.Equal(later.Add(41*time.Second)) {
		t.Fatalf("third scan: a counter that went down must count as moved (%v); another handoff gets a new deadline (%v)", got["x"].lastMove, got["h"].handoffEnd)
	}
	keys := make([]string, 0, len(m.prev))
	for k := range m.prev {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if fmt.Sprint(keys) != "[h x]" {
		t.Fatalf("leases kept %v: a lease gone from the table is forgotten", keys)
	}
}
