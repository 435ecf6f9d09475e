package leasecore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// TestBenchLeasing is `make bench`'s lease-protocol figure, measured with the
// default settings (failover 10s, adaptive taker pacing, one steal per run)
// on 64 leases and two workers:
//
//   - steady state: DynamoDB requests per lease per minute, counted at a
//     proxy in front of dynalite, against KCL 2.x's rate for the same table;
//   - crash takeover: from killing one worker until the other holds all 64
//     leases, median and max over KCLTOOL_BENCH_RUNS runs (default 5);
//   - balance: from a second worker's start until both hold 32.
//
// It takes about three minutes (the scenarios run side by side) and only
// runs with KCLTOOL_BENCH=1: timing belongs in benchmarks, not unit tests.
// KCLTOOL_BENCH_FAILOVER=2s scales every timing down for a quick look; the
// report names the failover it used.
func TestBenchLeasing(t *testing.T) {
	if os.Getenv("KCLTOOL_BENCH") == "" {
		t.Skip("benchmark: run with KCLTOOL_BENCH=1 (make bench)")
	}
	failover := DefaultFailoverTime
	if v := os.Getenv("KCLTOOL_BENCH_FAILOVER"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("KCLTOOL_BENCH_FAILOVER: %v", err)
		}
		failover = d
	}
	runs := 5
	if v := os.Getenv("KCLTOOL_BENCH_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("KCLTOOL_BENCH_RUNS: %q", v)
		}
		runs = n
	}
	cfg := Config{FailoverTime: failover}.WithDefaults()
	const leases, workers = 64, 2
	r := runLeasingBench(t, cfg, leases, workers, runs)
	r.print(cfg, leases, workers)
}

type benchResult struct {
	perLeaseMinute, kclPerLeaseMinute float64
	requests                          map[string]int64
	window, pacing                    time.Duration
	takeovers                         []time.Duration
	takeoverMedian, takeoverMax       time.Duration
	balance                           time.Duration
	steals                            int64
}

func runLeasingBench(tb testing.TB, cfg Config, leases, workers, runs int) benchResult {
	var res benchResult
	seeded := make([]Lease, leases) // as seedOwnedLeases writes them
	for i := range seeded {
		seeded[i] = Lease{LeaseKey: shardKey(i), LeaseOwner: "survivor", LeaseCounter: 100, Checkpoint: SequenceNumber{SequenceNumber: LATEST}}
	}
	res.pacing = cfg.ScanPacing(leases, workers, scanReadUnits(seeded, 1))
	ddb := emulator.DynamoDB(tb)

	// Steady state: two workers, each re-adopting the 32 leases the table
	// says it owns, behind a counting proxy.
	proxy := newFaultProxy(tb, 0, 1)
	steadyTable := seedOwnedLeases(tb, leases, "steady-1", "steady-2")
	for _, id := range []string{"steady-1", "steady-2"} {
		startWorker(tb, proxy.client(), steadyTable, id, cfg)
	}

	// Balance: one worker holds all leases, a second one joins.
	_, balanceTable := newLeaseTable(tb, leases)
	first := startWorker(tb, ddb, balanceTable, "balance-1", cfg)
	if _, ok := poll(10*time.Second, func() bool { return first.held() == leases }); !ok {
		tb.Fatal("balance: the first worker did not take the leases")
	}
	second := startWorker(tb, ddb, balanceTable, "balance-2", cfg)

	// Crash runs: victim and survivor share the leases; the victim dies at
	// a random phase of its renewals and of the survivor's scans.
	type pair struct{ survivor, victim *testWorker }
	pairs := make([]pair, runs)
	for i := range pairs {
		table := seedOwnedLeases(tb, leases, "survivor", "victim")
		pairs[i] = pair{startWorker(tb, ddb, table, "survivor", cfg), startWorker(tb, ddb, table, "victim", cfg)}
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	wg.Add(2 + runs)
	go func() {
		defer wg.Done()
		time.Sleep(cfg.FailoverTime) // first scans and adoptions done
		before := proxy.Requests()
		// A whole number of renewal rounds (about a minute at the
		// defaults), so the count does not depend on where the window cuts.
		rounds := (6*cfg.FailoverTime + cfg.RenewInterval - 1) / cfg.RenewInterval
		res.window = rounds * cfg.RenewInterval
		time.Sleep(res.window)
		after := proxy.Requests()
		res.requests = map[string]int64{}
		var total int64
		for op, n := range after {
			res.requests[op] = n - before[op]
			total += n - before[op]
		}
		res.perLeaseMinute = float64(total) / float64(leases) / res.window.Minutes()
	}()
	go func() {
		defer wg.Done()
		limit := time.Duration(leases) * cfg.KCLTakerInterval()
		took, ok := poll(limit, func() bool { return first.held() == leases/2 && second.held() == leases/2 })
		if !ok {
			tb.Errorf("balance: not reached in %s (first %d, second %d)", limit, first.held(), second.held())
		}
		res.balance, res.steals = took, second.c.Stats().Stolen
	}()
	rng := rand.New(rand.NewPCG(2026, 3))
	for _, p := range pairs {
		settle := 2*res.pacing + time.Duration(rng.Int64N(int64(cfg.RenewInterval)))
		go func() {
			defer wg.Done()
			time.Sleep(settle)
			if p.survivor.held() != leases/2 || p.victim.held() != leases/2 {
				tb.Errorf("crash run: not balanced before the crash (%d/%d)", p.survivor.held(), p.victim.held())
				return
			}
			p.victim.crash()
			took, ok := poll(3*cfg.FailoverTime+2*res.pacing, func() bool { return p.survivor.held() == leases })
			if !ok {
				tb.Errorf("crash run: survivor holds %d after %s", p.survivor.held(), took)
				return
			}
			mu.Lock()
			res.takeovers = append(res.takeovers, took)
			mu.Unlock()
		}()
	}
	wg.Wait()

	kclScans := float64(time.Minute) / float64(cfg.KCLTakerInterval())
	res.kclPerLeaseMinute = float64(time.Minute)/float64(cfg.RenewInterval) + kclScans*float64(workers)/float64(leases)
	if len(res.takeovers) > 0 {
		slices.Sort(res.takeovers)
		res.takeoverMedian = res.takeovers[len(res.takeovers)/2]
		if len(res.takeovers)%2 == 0 {
			res.takeoverMedian = (res.takeovers[len(res.takeovers)/2-1] + res.takeovers[len(res.takeovers)/2]) / 2
		}
		res.takeoverMax = res.takeovers[len(res.takeovers)-1]
	}
	return res
}

func (r benchResult) print(cfg Config, leases, workers int) {
	kclTakeoverMax := cfg.FailoverTime + 2*cfg.KCLTakerInterval()
	fmt.Printf("bench leasing: %d leases, %d workers; failover %s, renew every %s, taker adaptive (here every %s; KCL %s), 1 steal per run\n",
		leases, workers, cfg.FailoverTime, cfg.RenewInterval.Round(time.Millisecond), r.pacing.Round(time.Millisecond), cfg.KCLTakerInterval())
	fmt.Printf("bench leasing steady state: %.2f DynamoDB requests/lease/min over %s %v; KCL 2.x %.2f; ratio %.3f (the budget is in capacity units: internal/testenv/fleetsim)\n",
		r.perLeaseMinute, r.window.Round(time.Second), r.requests, r.kclPerLeaseMinute, r.perLeaseMinute/r.kclPerLeaseMinute)
	fmt.Printf("bench leasing crash takeover: median %s, max %s over %d runs %v; KCL 2.x failover + up to 2 taker intervals (<= %s); goal median <= 12s at the defaults\n",
		r.takeoverMedian.Round(10*time.Millisecond), r.takeoverMax.Round(10*time.Millisecond), len(r.takeovers),
		roundAll(r.takeovers), kclTakeoverMax)
	fmt.Printf("bench leasing balance: a new worker reaches %d/%d in %s with %d steals; KCL 2.x about %s\n",
		leases/2, leases/2, r.balance.Round(10*time.Millisecond), r.steals, time.Duration(leases/2)*cfg.KCLTakerInterval())
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(10 * time.Millisecond)
	}
	return out
}

// seedOwnedLeases makes a table whose leases are owned round-robin by the
// given workers, as a running fleet leaves them.
func seedOwnedLeases(tb testing.TB, n int, owners ...string) string {
	tb.Helper()
	ddb := emulator.DynamoDB(tb)
	table := emulator.Name(tb, "bench")
	emulator.CreateLeaseTable(tb, ddb, table)
	for i := range n {
		l := Lease{LeaseKey: shardKey(i), LeaseOwner: owners[i%len(owners)], Checkpoint: SequenceNumber{SequenceNumber: LATEST}}
		if _, err := CreateLease(context.Background(), ddb, table, l); err != nil {
			tb.Fatal(err)
		}
	}
	return table
}

// poll is waitFor for goroutines that must not call Fatal.
func poll(timeout time.Duration, cond func() bool) (time.Duration, bool) {
	start := time.Now()
	for {
		if cond() {
			return time.Since(start), true
		}
		if time.Since(start) > timeout {
			return time.Since(start), false
		}
		time.Sleep(10 * time.Millisecond)
	}
}
