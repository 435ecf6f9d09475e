package leasecore

import (
	"context"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
)

func TestStopMarginAndStealWait(t *testing.T) {
	for _, c := range []struct {
		cfg          Config
		margin, wait time.Duration
	}{
		// Defaults: renew every 3.308s; margin one renew interval.
		{Config{}, 3308333333, 6616666666},
		{Config{FailoverTime: 3 * time.Second}, 975 * time.Millisecond, 1950 * time.Millisecond},
		// A renew interval close to the failover time: half of what is left,
		// so that a renewal on time still comes before the deadline.
		{Config{FailoverTime: 10 * time.Second, RenewInterval: 9 * time.Second}, 500 * time.Millisecond, 9500 * time.Millisecond},
	} {
		if got := c.cfg.StopMargin(); got != c.margin {
			t.Errorf("%+v: stop margin %s, want %s", c.cfg, got, c.margin)
		}
		if got := c.cfg.StealWait(); got != c.wait {
			t.Errorf("%+v: steal wait %s, want %s", c.cfg, got, c.wait)
		}
	}
}

// The holder's handler deadline is its last applied write plus failover
// minus the margin, moved by every renewal and never waiting for one in
// flight; a steal's event carries the old owner and the wait, a take of an
// expired lease neither.
func TestHandlerDeadlineAndStealWait(t *testing.T) {
	ddb, table := newLeaseTable(t, 2)
	ctx := context.Background()
	start := time.Unix(1_700_000_000, 0)
	clockA, clockB := clocktest.New(start), clocktest.New(start)
	var ea, eb []LeaseEvent
	a := fakeWorker(t, ddb, table, "a", clockA, &ea)
	b := fakeWorker(t, ddb, table, "b", clockB, &eb)
	cfg := a.Config()
	left := cfg.FailoverTime - cfg.StopMargin()

	a.runTaker(ctx)
	if len(a.Held()) != 2 {
		t.Fatal("a did not take both unowned leases")
	}
	tenures := map[string]uint64{}
	tenure := func(key string) uint64 { return tenures[key] }
	for i := range 2 {
		key := shardKey(i)
		tenures[key] = a.lookup(key).tenure
		if d, ok := a.HandlerDeadline(key, tenure(key)); !ok || !d.Equal(start.Add(left)) {
			t.Fatalf("%s: deadline %v (held %v), want take + %s", key, d, ok, left)
		}
		if _, ok := a.HandlerDeadline(key, tenure(key)+10); ok {
			t.Fatalf("%s: a deadline for a holding that does not exist", key)
		}
	}
	clockA.Advance(cfg.RenewInterval)
	a.renewAll(ctx, clockA.Now().Add(cfg.RenewInterval))
	key0 := shardKey(0)
	if d, _ := a.HandlerDeadline(key0, tenure(key0)); !d.Equal(clockA.Now().Add(left)) {
		t.Fatalf("deadline %v after a renewal at %v, want renewal + %s", d, clockA.Now(), left)
	}
	// A renewal in flight holds the lease's lock; the deadline is read
	// without it.
	hl := a.lookup(key0)
	hl.mu.Lock()
	got := make(chan bool, 1)
	go func() { _, ok := a.HandlerDeadline(key0, hl.tenure); got <- ok }()
	select {
	case ok := <-got:
		if !ok {
			t.Fatal("no deadline while a renewal is in flight")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("HandlerDeadline waited for the lease's lock")
	}
	hl.mu.Unlock()

	// b joins: both leases are fresh, so it steals one.
	b.runTaker(ctx)
	if len(b.Held()) != 1 {
		t.Fatalf("b holds %d leases, want one stolen", len(b.Held()))
	}
	stolen := b.Held()[0].LeaseKey
	// b renews its own; a's other lease, renewed no more, expires for b.
	for range 4 {
		clockB.Advance(cfg.RenewInterval)
		b.renewAll(ctx, clockB.Now().Add(cfg.RenewInterval))
	}
	b.runTaker(ctx)
	if len(b.Held()) != 2 {
		t.Fatalf("b holds %d leases, want the expired one taken too", len(b.Held()))
	}
	// a learns at its next renewal that both are gone: those holdings are
	// over, and have no deadline.
	clockA.Advance(cfg.RenewInterval)
	a.renewAll(ctx, clockA.Now().Add(cfg.RenewInterval))
	for key, tn := range tenures {
		if _, ok := a.HandlerDeadline(key, tn); ok {
			t.Fatalf("%s: a deadline for a lease a has lost", key)
		}
	}
	_ = a.Stop(ctx, false)
	_ = b.Stop(ctx, false)

	if len(eb) != 2 {
		t.Fatalf("b's events %+v, want two gained", eb)
	}
	for _, e := range eb {
		switch {
		case e.Kind != LeaseGained:
			t.Fatalf("b's event %+v, want gained", e)
		case e.Lease.LeaseKey == stolen && (e.StolenFrom != "a" || !e.NotBefore.Equal(start.Add(cfg.StealWait()))):
			t.Fatalf("the stolen lease's event says from %q, not before %v; want a, take + %s", e.StolenFrom, e.NotBefore, cfg.StealWait())
		case e.Lease.LeaseKey != stolen && (e.StolenFrom != "" || !e.NotBefore.IsZero()):
			t.Fatalf("the expired lease's event says from %q, not before %v; want neither", e.StolenFrom, e.NotBefore)
		}
	}
	for _, e := range ea {
		if e.Kind == LeaseGained && (e.StolenFrom != "" || !e.NotBefore.IsZero()) {
			t.Fatalf("a's take of an unowned lease says from %q, not before %v", e.StolenFrom, e.NotBefore)
		}
	}
}
