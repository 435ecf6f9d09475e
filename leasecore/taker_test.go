package leasecore

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// views builds taker input: spec entries are "owner" for a live lease,
// "owner!" for an expired one, "" for unowned (never renewed) and "owner!!"
// for a very old one.
func viewsOf(spec ...string) []leaseView {
	var out []leaseView
	for i, s := range spec {
		v := leaseView{Lease: Lease{LeaseKey: shardKey(i)}}
		switch {
		case s == "":
			v.Available, v.VeryOld = true, true
		case len(s) > 2 && s[len(s)-2:] == "!!":
			v.LeaseOwner, v.Available, v.VeryOld = s[:len(s)-2], true, true
		case s[len(s)-1] == '!':
			v.LeaseOwner, v.Available = s[:len(s)-1], true
		default:
			v.LeaseOwner = s
		}
		out = append(out, v)
	}
	return out
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestComputeLeasesToTake(t *testing.T) {
	tests := []struct {
		name      string
		spec      []string
		cfg       Config
		wantTake  int
		wantSteal int
		victim    string
		target    int
		workers   int
	}{
		{name: "empty table", spec: nil, workers: 1},
		{name: "new unowned leases are very old: all taken, target ignored", spec: repeat("", 6), wantTake: 6, target: 6, workers: 1},
		{name: "very old capped by max leases", spec: repeat("", 6), cfg: Config{MaxLeasesForWorker: 4}, wantTake: 4, target: 4, workers: 1},
		{name: "very old: priority disabled takes the need only", spec: concat(repeat("b", 3), repeat("", 3)),
			cfg: Config{DisablePriorityLeaseAssignment: true}, wantTake: 3, target: 3, workers: 2},
		{name: "second worker steals one at a time", spec: repeat("a", 6), wantSteal: 1, victim: "a", target: 3, workers: 2},
		{name: "steal up to max at one time", spec: repeat("a", 6), cfg: Config{MaxLeasesToStealAtOneTime: 3}, wantSteal: 3, victim: "a", target: 3, workers: 2},
		{name: "steal no more than the victim has over target", spec: concat(repeat("a", 5), repeat("me", 2)),
			cfg: Config{MaxLeasesToStealAtOneTime: 5}, wantSteal: 1, victim: "a", target: 4, workers: 2},
		{name: "victim at target and I need more than one: steal one", spec: concat(repeat("a", 3), repeat("b", 3), repeat("c", 3)),
			cfg: Config{MaxLeasesToStealAtOneTime: 5}, wantSteal: 1, victim: "a", target: 3, workers: 4},
		{name: "victim at target and I need exactly one: no steal", spec: concat(repeat("a", 2), repeat("b", 2), repeat("me", 1)),
			target: 2, workers: 3},
		{name: "balanced: nothing", spec: concat(repeat("a", 3), repeat("me", 3)), target: 3, workers: 2},
		{name: "expired leases taken up to the need, no steal", spec: concat(repeat("a", 3), repeat("b!", 3)), wantTake: 3, target: 3, workers: 2},
		{name: "expired leases beyond the need stay", spec: concat(repeat("a", 2), repeat("me", 1), repeat("b!", 3)),
			wantTake: 2, target: 3, workers: 2},
		{name: "available leases exist: never steal", spec: concat(repeat("a", 8), repeat("b!", 1)), wantTake: 1, target: 5, workers: 2},
		{name: "more workers than leases: target 1", spec: []string{"a", "b", "c", ""}, wantTake: 1, target: 1, workers: 4},
		{name: "more workers than leases, none free: no steal", spec: []string{"a", "b"}, target: 1, workers: 3},
		{name: "max leases caps target (spillover)", spec: repeat("b!", 10), cfg: Config{MaxLeasesForWorker: 2}, wantTake: 2, target: 2, workers: 1},
		{name: "very old ignores the target", spec: concat(repeat("me", 5), repeat("a", 4), repeat("a!!", 1)), wantTake: 1, target: 5, workers: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := computeLeasesToTake(viewsOf(tt.spec...), "me", tt.cfg, rand.New(rand.NewPCG(1, 2)))
			if len(plan.Take) != tt.wantTake || len(plan.Steal) != tt.wantSteal {
				t.Fatalf("take %d steal %d, want %d %d (plan %+v)", len(plan.Take), len(plan.Steal), tt.wantTake, tt.wantSteal, plan)
			}
			if plan.Target != tt.target || plan.Workers != tt.workers {
				t.Errorf("target %d workers %d, want %d %d", plan.Target, plan.Workers, tt.target, tt.workers)
			}
			if plan.Victim != tt.victim {
				t.Errorf("victim %q, want %q", plan.Victim, tt.victim)
			}
			for _, l := range plan.Steal {
				if l.LeaseOwner != tt.victim {
					t.Errorf("stealing %s owned by %s, not the most loaded worker", l.LeaseKey, l.LeaseOwner)
				}
			}
			seen := map[string]bool{}
			for _, l := range append(plan.Take, plan.Steal...) {
				if seen[l.LeaseKey] {
					t.Errorf("%s chosen twice", l.LeaseKey)
				}
				seen[l.LeaseKey] = true
				if l.LeaseOwner == "me" {
					t.Errorf("chose my own live lease %s", l.LeaseKey)
				}
			}
		})
	}
}

func TestStealVictimIsMostLoaded(t *testing.T) {
	spec := concat(repeat("a", 3), repeat("b", 6), repeat("c", 2))
	for seed := range uint64(20) {
		plan := computeLeasesToTake(viewsOf(spec...), "me", Config{}, rand.New(rand.NewPCG(seed, seed)))
		if plan.Victim != "b" || len(plan.Steal) != 1 || plan.Steal[0].LeaseOwner != "b" {
			t.Fatalf("seed %d: stole %v from %q, want one of b's", seed, plan.Steal, plan.Victim)
		}
	}
}

func TestShuffleSpreadsChoices(t *testing.T) {
	// Two workers taking from the same expired set must not always pick the
	// same leases, or they would keep colliding on the conditional write.
	spec := concat(repeat("a", 4), repeat("x!", 8))
	picks := map[string]bool{}
	for seed := range uint64(10) {
		plan := computeLeasesToTake(viewsOf(spec...), "me", Config{}, rand.New(rand.NewPCG(seed, 99)))
		var keys []string
		for _, l := range plan.Take {
			keys = append(keys, l.LeaseKey)
		}
		sort.Strings(keys)
		picks[keys[0]+keys[len(keys)-1]] = true
	}
	if len(picks) < 3 {
		t.Fatalf("shuffles gave only %d distinct choices over 10 seeds", len(picks))
	}
}

func TestObserveLikeKCL(t *testing.T) {
	t0 := time.Unix(1000, 0)
	failover := 10 * time.Second
	scan := func(owner string, counter int64) []Lease {
		return []Lease{{LeaseKey: "k", LeaseOwner: owner, LeaseCounter: counter}}
	}
	seen := observe(nil, scan("a", 5), t0)
	if seen["k"].lastChange != t0 {
		t.Fatal("a new owned lease counts as renewed at scan time")
	}
	seen = observe(seen, scan("a", 5), t0.Add(failover))
	if seen["k"].expired(t0.Add(failover), failover) {
		t.Fatal("expired after exactly the failover time; KCL needs strictly longer")
	}
	if !seen["k"].expired(t0.Add(failover+time.Millisecond), failover) {
		t.Fatal("not expired after the failover time with an unchanged counter")
	}
	seen = observe(seen, scan("a", 6), t0.Add(11*time.Second))
	if seen["k"].lastChange != t0.Add(11*time.Second) {
		t.Fatal("a changed counter must reset the observation")
	}
	seen = observe(nil, scan("", 0), t0)
	if !seen["k"].lastChange.IsZero() || !seen["k"].expired(t0, failover) {
		t.Fatal("a new unowned lease is never-renewed and immediately available")
	}
	if seen = observe(seen, nil, t0); len(seen) != 0 {
		t.Fatal("leases gone from the table must be forgotten")
	}
}

func TestScanPacing(t *testing.T) {
	def := Config{}
	kcl := def.KCLTakerInterval()
	if kcl != 20050*time.Millisecond {
		t.Fatalf("KCL taker interval %s, want 20.05s", kcl)
	}
	if got := (Config{TakerInterval: 3 * time.Second}).ScanPacing(1000, 1, 1); got != 3*time.Second {
		t.Fatalf("a fixed taker interval must win, got %s", got)
	}
	// Beyond a small table: KCL's interval, however many leases a worker
	// holds (a scan there costs as many read units as the KCL's fleet).
	for _, tc := range []struct {
		leases, workers int
		units           float64
	}{{101, 1, 3}, {1000, 10, 25}, {10000, 10, 250}, {10000, 100, 250}, {100000, 2, 2500}} {
		if got := def.ScanPacing(tc.leases, tc.workers, tc.units); got != kcl {
			t.Errorf("%+v: %s, want KCL's %s", tc, got, kcl)
		}
	}
	// Small tables: faster, within the budget in units.
	for _, tc := range []struct {
		leases, workers int
		units           float64
	}{{64, 2, 2}, {100, 2, 2.5}, {100, 4, 2.5}, {40, 1, 1}, {6, 2, 0.5}} {
		iv := def.ScanPacing(tc.leases, tc.workers, tc.units)
		if iv < def.MinTakerInterval() || iv > kcl {
			t.Errorf("%+v: interval %s out of [%s, %s]", tc, iv, def.MinTakerInterval(), kcl)
		}
		renewals := 60 / 3.308 * float64(tc.leases)
		ours := renewals + tc.units*float64(time.Minute)/float64(iv)*float64(tc.workers)
		kclUnits := renewals + tc.units*60/20.05*float64(tc.workers)
		if ours > max(kclUnits, (1+ScanBudgetRatio)*renewals)*1.001 {
			t.Errorf("%+v: %.1f units/min exceeds max(KCL %.1f, budget)", tc, ours, kclUnits)
		}
		if ours > 1.05*kclUnits {
			t.Errorf("%+v: %.1f units/min is more than 1.05 × KCL's %.1f", tc, ours, kclUnits)
		}
	}
	if got := def.ScanPacing(64, 2, 2); got > 6*time.Second {
		t.Errorf("32 leases/worker scan every %s; want ≤ 6s so a crash is noticed quickly", got)
	}
}
