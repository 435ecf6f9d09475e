package leasecore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
)

// The health state machine with a fake clock: no server, because the
// judging is pure bookkeeping over the calls' outcomes (health.go); the
// calls themselves are covered end to end in cmd/run_health_test.go.

const testFailover = 10 * time.Second

func newTestHealth(held *int) (*Health, *clocktest.Clock) {
	clk := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := NewHealth(clk, testFailover)
	h.bindHeld(func() int { return *held })
	return h, clk
}

var errDown = errors.New("dial tcp: connection refused")

func TestHealthLoopStopsProgressing(t *testing.T) {
	held := 0
	h, clk := newTestHealth(&held)
	ctx := context.Background()
	renewer := h.Loop("renewer", 20*time.Second)
	reader := h.Loop("reader shardId-1", 50*time.Second)
	if l := h.Live(); !l.Live || l.Loops != 2 {
		t.Fatalf("fresh loops: %+v, want live with 2 loops", l)
	}
	// Failing calls are progress: a loop whose every call fails is live.
	for range 10 {
		clk.Advance(5 * time.Second)
		LoopOf(WithLoop(ctx, renewer)).Beat() // as the metered client does after a failed call
		reader.Beat()
	}
	if l := h.Live(); !l.Live {
		t.Fatalf("beating loops: %+v, want live", l)
	}
	// The renewer stops beating; the reader waits on its handler, parked.
	reader.Park()
	clk.Advance(21 * time.Second)
	l := h.Live()
	if l.Live || l.Status != LiveWedged || len(l.Wedged) != 1 || l.Wedged[0].Loop != "renewer" ||
		l.Wedged[0].SinceProgressSeconds != 21 || l.Wedged[0].BoundSeconds != 20 {
		t.Fatalf("renewer silent for 21s past a 20s bound, reader parked: %+v, want only the renewer wedged", l)
	}
	clk.Advance(time.Hour) // a parked reader is never wedged, however long its handler runs
	if l := h.Live(); len(l.Wedged) != 1 {
		t.Fatalf("after an hour parked: %+v, want only the renewer wedged", l)
	}
	reader.Unpark()
	renewer.Beat()
	if l := h.Live(); !l.Live {
		t.Fatalf("both progressing again: %+v, want live", l)
	}
	// A loop that ended is not watched any more.
	renewer.Close()
	reader.Close()
	clk.Advance(time.Hour)
	if l := h.Live(); !l.Live || l.Loops != 0 {
		t.Fatalf("closed loops: %+v, want live with none watched", l)
	}
}

func TestHealthReadiness(t *testing.T) {
	held := 0
	h, clk := newTestHealth(&held)
	ctx := context.Background()
	if r := h.Ready(); r.Ready || r.Status != ReadyStarting {
		t.Fatalf("before any call: %+v, want starting, not ready", r)
	}
	// Holding no lease, the scans decide: a worker among more workers than
	// shards (or a 3.x worker waiting for the leader) is ready.
	h.LeaseCall(ctx, OpScan, nil)
	if r := h.Ready(); !r.Ready || r.Status != ReadyOK || r.LeasesHeld != 0 {
		t.Fatalf("no lease, scan succeeded: %+v, want ready", r)
	}
	// Holding leases: renewals decide. Failures within the failover time
	// are tolerated.
	held = 2
	h.LeaseCall(ctx, OpRenew, nil)
	clk.Advance(time.Second)
	h.LeaseCall(ctx, OpRenew, errDown)
	start := clk.Now()
	clk.Advance(testFailover)
	h.LeaseCall(ctx, OpRenew, errDown)
	if r := h.Ready(); !r.Ready {
		t.Fatalf("renewals failing for exactly the failover time: %+v, want still ready", r)
	}
	clk.Advance(time.Millisecond)
	r := h.Ready()
	if r.Ready || r.Status != ReadyFailing || r.Operation != OpRenew || r.Error != errDown.Error() ||
		r.FailingSince == nil || !r.FailingSince.Equal(start) || r.FailoverSeconds != 10 {
		t.Fatalf("renewals failing past the failover time: %+v, want failing with operation, error and start", r)
	}
	// The leases expire locally: holding none, the scans decide, but the
	// renewals' failing spell goes on counting until a scan succeeds, even
	// before the next scan has failed (the end-to-end test found the
	// worker ready again in between).
	held = 0
	if r := h.Ready(); r.Ready || !r.FailingSince.Equal(start) || r.Operation != OpRenew {
		t.Fatalf("leases expired, no scan since: %+v, want not ready since the renewals began failing", r)
	}
	h.LeaseCall(ctx, OpScan, errDown)
	if r := h.Ready(); r.Ready || !r.FailingSince.Equal(start) {
		t.Fatalf("leases expired, first scan failing: %+v, want not ready since the renewals began failing", r)
	}
	// Recovery: one success is enough.
	h.LeaseCall(ctx, OpScan, nil)
	if r := h.Ready(); !r.Ready || r.FailingSince != nil {
		t.Fatalf("scan succeeded again: %+v, want ready", r)
	}
	// A lost lease is an answer from the table, not a failure.
	held = 1
	h.LeaseCall(ctx, OpRenew, errDown)
	clk.Advance(2 * testFailover)
	h.LeaseCall(ctx, OpRenew, ErrLeaseLost)
	if r := h.Ready(); !r.Ready {
		t.Fatalf("renewal answered lease lost: %+v, want ready", r)
	}
	// A call cut off because the worker stops is no outcome.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	h.LeaseCall(cancelled, OpRenew, context.Canceled)
	clk.Advance(2 * testFailover)
	if r := h.Ready(); !r.Ready {
		t.Fatalf("only a cancelled call failed: %+v, want ready", r)
	}
	h.Stopping()
	if r := h.Ready(); r.Ready || r.Status != ReadyStopping {
		t.Fatalf("stopping: %+v, want stopping, not ready", r)
	}
}

// Succeeding scans do not hide failing renewals of held leases; once the
// leases are gone, a scan that succeeded after the renewals began failing
// makes the worker ready (holding none, the scans decide).
func TestHealthScansDoNotHideRenewals(t *testing.T) {
	held := 3
	h, clk := newTestHealth(&held)
	ctx := context.Background()
	h.LeaseCall(ctx, OpRenew, nil)
	h.LeaseCall(ctx, OpRenew, errDown)
	for range 5 {
		clk.Advance(5 * time.Second)
		h.LeaseCall(ctx, OpScan, nil)
	}
	if r := h.Ready(); r.Ready || r.Operation != OpRenew || r.FailingSeconds != 25 {
		t.Fatalf("renewals failing 25s, scans succeeding: %+v, want not ready on renew", r)
	}
	held = 0
	if r := h.Ready(); !r.Ready {
		t.Fatalf("leases gone, scans succeeding since: %+v, want ready", r)
	}
}

func TestHealthStartingAfterFailures(t *testing.T) {
	held := 0
	h, clk := newTestHealth(&held)
	h.LeaseCall(context.Background(), OpDiscover, errDown)
	clk.Advance(time.Minute)
	r := h.Ready()
	if r.Ready || r.Status != ReadyStarting || r.Operation != OpDiscover || r.FailingSeconds != 60 {
		t.Fatalf("first discovery failing for a minute: %+v, want starting with the failure", r)
	}
	h.LeaseCall(context.Background(), OpDiscover, nil)
	if r := h.Ready(); !r.Ready {
		t.Fatalf("discovery succeeded, no lease: %+v, want ready", r)
	}
}

// A nil Health and nil loops are inert, so that coordinators and workers
// built without one need no checks.
func TestHealthNil(t *testing.T) {
	var h *Health
	l := h.Loop("x", time.Second)
	l.Beat()
	l.Park()
	l.Unpark()
	l.Close()
	h.LeaseCall(context.Background(), OpRenew, errDown)
	h.Stopping()
	if !h.Live().Live || h.Ready().Ready {
		t.Fatal("nil Health: want live and not ready")
	}
	if LoopOf(WithLoop(context.Background(), nil)) != nil {
		t.Fatal("WithLoop(nil) carried a loop")
	}
}

// The coordinator loops' bounds cover their waits and calls at the
// defaults (docs/deploy.md lists them).
func TestHealthBounds(t *testing.T) {
	cfg := Config{WorkerID: "w", FailoverTime: testFailover}.WithDefaults()
	for name, b := range map[string]time.Duration{
		"renewer": cfg.renewerBound(), "taker": cfg.takerBound(), "discoverer": cfg.discovererBound(),
	} {
		// The bound must exceed the loop's wait between rounds plus a call,
		// or an idle, healthy loop would be called wedged.
		if b <= cfg.RenewInterval+cfg.ItemTimeout() || b <= healthMargin {
			t.Errorf("%s bound %s too short", name, b)
		}
	}
	if cfg.takerBound() <= cfg.KCLTakerInterval()+cfg.ScanTimeout() {
		t.Errorf("taker bound %s does not cover its interval %s and a scan page", cfg.takerBound(), cfg.KCLTakerInterval())
	}
}
