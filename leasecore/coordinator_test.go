package leasecore

import (
	"context"
	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"testing"
	"time"
)

// Multi-worker scenarios on the real clock with short timings (fastConfig:
// failover 1s, renew every 308ms, taker every 500ms). Deadlines carry a
// margin of slack for scheduling under -race; each would fail if the protocol
// waited an extra failover time or taker interval.
const slack = 250 * time.Millisecond

func TestOneWorkerTakesAll(t *testing.T) {
	ddb, table := newLeaseTable(t, 6)
	a := startWorker(t, ddb, table, "a", fastConfig)
	waitFor(t, fastConfig.TakerInterval, "one worker holds all 6 leases", func() bool { return a.held() == 6 })
	if got := owners(t, ddb, table); got["a"] != 6 {
		t.Fatalf("table owners %v, want a:6", got)
	}
	// Held leases are renewed: a keeps them over several failover times.
	time.Sleep(3 * fastConfig.FailoverTime)
	if a.held() != 6 || a.c.Stats().Lost != 0 || a.c.Stats().Renewals < 6*6 {
		t.Fatalf("after 3s: held %d, stats %+v", a.held(), a.c.Stats())
	}
}

func TestSecondWorkerStealsToBalance(t *testing.T) {
	for _, tc := range []struct {
		name     string
		maxSteal int
		runs     int // taker runs KCL needs: one steal per run at the default
	}{
		{"one steal per run", 1, 3},
		{"three steals per run", 3, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ddb, table := newLeaseTable(t, 6)
			a := startWorker(t, ddb, table, "a", fastConfig)
			waitFor(t, time.Second, "a holds 6", func() bool { return a.held() == 6 })
			cfg := fastConfig
			cfg.MaxLeasesToStealAtOneTime = tc.maxSteal
			b := startWorker(t, ddb, table, "b", cfg)
			// b's runs are at 0, T, 2T; a notices each steal at its next
			// renewal.
			limit := time.Duration(tc.runs-1)*cfg.TakerInterval + time.Second/3 + slack
			took := waitFor(t, limit, "3/3", func() bool { return b.held() == 3 && a.held() == 3 })
			t.Logf("balanced in %s (limit %s)", took, limit)
			if got := owners(t, ddb, table); got["a"] != 3 || got["b"] != 3 {
				t.Fatalf("table owners %v", got)
			}
			st := b.c.Stats()
			if st.Stolen != 3 || st.Taken != 0 {
				t.Fatalf("b stole %d and took %d, want 3 steals", st.Stolen, st.Taken)
			}
			if lost := a.c.Stats().Lost; lost != 3 {
				t.Fatalf("a lost %d leases, want 3", lost)
			}
			// Stable afterwards: no further churn.
			time.Sleep(3 * cfg.TakerInterval)
			if b.c.Stats().Stolen != 3 || a.held() != 3 {
				t.Fatal("leases kept moving after balance")
			}
		})
	}
}

func TestCrashedWorkersLeasesAreTakenAfterFailover(t *testing.T) {
	ddb, table := newLeaseTable(t, 6)
	cfg := fastConfig
	cfg.MaxLeasesToStealAtOneTime = 3
	a := startWorker(t, ddb, table, "a", cfg)
	waitFor(t, time.Second, "a holds 6", func() bool { return a.held() == 6 })
	b := startWorker(t, ddb, table, "b", cfg)
	waitFor(t, 2*time.Second, "3/3", func() bool { return a.held() == 3 && b.held() == 3 })

	a.crash()
	crashed := time.Now()
	// Not before the failover time: a live lease is never taken early.
	time.Sleep(cfg.FailoverTime - cfg.RenewInterval - 50*time.Millisecond)
	if b.held() != 3 {
		t.Fatalf("b holds %d leases before a's could have expired", b.held())
	}
	waitFor(t, cfg.FailoverTime+cfg.TakerInterval+slack-time.Since(crashed), "survivor holds all 6",
		func() bool { return b.held() == 6 })
	t.Logf("takeover %s after the crash (failover %s + taker interval %s)", time.Since(crashed), cfg.FailoverTime, cfg.TakerInterval)
	if got := owners(t, ddb, table); got["b"] != 6 {
		t.Fatalf("table owners %v", got)
	}
}

func TestGracefulStopReleasesLeases(t *testing.T) {
	ddb, table := newLeaseTable(t, 6)
	cfg := fastConfig
	cfg.MaxLeasesToStealAtOneTime = 3
	a := startWorker(t, ddb, table, "a", cfg)
	waitFor(t, time.Second, "a holds 6", func() bool { return a.held() == 6 })
	b := startWorker(t, ddb, table, "b", cfg)
	waitFor(t, 2*time.Second, "3/3", func() bool { return a.held() == 3 && b.held() == 3 })

	if err := a.c.Stop(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	if a.held() != 0 || a.eventCount(LeaseReleased) != 3 {
		t.Fatalf("after release a holds %d and reported %d releases", a.held(), a.eventCount(LeaseReleased))
	}
	if got := owners(t, ddb, table); got["a"] != 0 {
		t.Fatalf("a still owns leases in the table: %v", got)
	}
	took := waitFor(t, cfg.TakerInterval+slack, "survivor holds all 6 within one taker interval",
		func() bool { return b.held() == 6 })
	t.Logf("survivor took the released leases %s after the stop", took)
	if time.Since(stopped) >= cfg.FailoverTime {
		t.Fatal("took as long as a crash")
	}
}

// A lease whose renewals stalled past the failover time is still
// released at Stop when nobody took it meanwhile: the conditional write is
// the guard, not the local clock. A lease taken by another worker is left
// to it.
func TestStopReleasesStaleLeaseNobodyTook(t *testing.T) {
	ddb, table := newLeaseTable(t, 2)
	clk := clocktest.New(time.Now())
	c, err := NewCoordinator(ddb, table, Config{WorkerID: "a", FailoverTime: 10 * time.Second}, clk, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 2 {
		if !c.takeOne(ctx, mustGet(t, ddb, table, shardKey(i)), false) {
			t.Fatalf("could not take lease %d", i)
		}
	}
	if _, _, err := TakeLease(ctx, ddb, table, mustGet(t, ddb, table, shardKey(1)), "b"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(11 * time.Second) // no renewal: both stale locally
	if err := c.Stop(ctx, true); err != nil {
		t.Fatal(err)
	}
	if got := owners(t, ddb, table); got["a"] != 0 || got["b"] != 1 {
		t.Fatalf("owners after the stop %v, want a none and b its stolen lease", got)
	}
}

// A worker that stopped taking (it is shutting down) takes nothing, not
// even unowned leases, and makes no taker scans; without StopTaking the
// same worker takes all six at once.
func TestStopTakingTakesNothing(t *testing.T) {
	ddb, table := newLeaseTable(t, 6)
	cfg := fastConfig
	cfg.WorkerID = "a"
	c, err := NewCoordinator(ddb, table, cfg, clock.RealClock(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.StopTaking()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Stop(context.Background(), true) }()
	time.Sleep(3 * fastConfig.TakerInterval)
	if held, st := len(c.Held()), c.Stats(); held != 0 || st.Taken != 0 || st.TakerRuns != 0 {
		t.Fatalf("after StopTaking: held %d, taken %d, taker runs %d; want none", held, st.Taken, st.TakerRuns)
	}
	if got := owners(t, ddb, table); got[""] != 6 {
		t.Fatalf("table owners %v, want 6 unowned", got)
	}
	b := startWorker(t, ddb, table, "b", fastConfig)
	waitFor(t, fastConfig.TakerInterval, "a worker that takes holds all 6", func() bool { return b.held() == 6 })
}
