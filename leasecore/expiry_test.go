package leasecore

import (
	"context"
	"errors"
	"github.com/kcltool/kcltool/internal/clock"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
)

// These tests drive coordinators by hand with fake clocks: one taker run or
// renewal round at a time against dynalite, time moved by Advance. They show
// that expiry is judged only by the observer's own clock, with no sleeping.

func fakeWorker(t *testing.T, api CoordinatorAPI, table, id string, clk clock.Clock, events *[]LeaseEvent) *Coordinator {
	t.Helper()
	c, err := NewCoordinator(api, table, Config{WorkerID: id}, clk, Options{
		Rand:    rand.New(rand.NewPCG(3, 4)),
		OnEvent: func(e LeaseEvent) { *events = append(*events, e) }, // single delivery goroutine
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestExpiryIsJudgedOnTheObserversClock(t *testing.T) {
	ddb, table := newLeaseTable(t, 1)
	ctx := context.Background()
	key := shardKey(0)
	start := time.Unix(1_700_000_000, 0)
	clockA, clockB := clocktest.New(start), clocktest.New(start)
	var eventsA, eventsB []LeaseEvent
	a := fakeWorker(t, ddb, table, "a", clockA, &eventsA)
	b := fakeWorker(t, ddb, table, "b", clockB, &eventsB)
	failover := a.Config().FailoverTime

	a.runTaker(ctx)
	if !a.IsHeld(key) {
		t.Fatal("a did not take the unowned lease")
	}
	b.runTaker(ctx) // first sight of a's lease: counts as renewed now
	clockB.Advance(failover)
	b.runTaker(ctx)
	if b.IsHeld(key) {
		t.Fatal("b took the lease after exactly the failover time; it must be unchanged for longer")
	}
	clockB.Advance(time.Millisecond)
	b.runTaker(ctx)
	if !b.IsHeld(key) {
		t.Fatal("b did not take a lease unchanged for longer than the failover time")
	}
	if l := mustGet(t, ddb, table, key); l.LeaseOwner != "b" || l.OwnerSwitchesSinceCheckpoint != 1 {
		t.Fatalf("table shows owner %q switches %d", l.LeaseOwner, l.OwnerSwitchesSinceCheckpoint)
	}

	// a's clock has not moved: it still believes it holds the lease, so its
	// checkpoint goes out, and the counter condition stops it.
	if !a.IsHeld(key) {
		t.Fatal("a's own clock says its lease is fresh")
	}
	err := a.Checkpoint(ctx, key, SequenceNumber{SequenceNumber: "100"})
	if !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("checkpoint of a stolen lease: %v, want ErrLeaseLost", err)
	}
	if a.IsHeld(key) || a.Stats().Lost != 1 {
		t.Fatalf("a must drop the lease at once (held %v, lost %d)", a.IsHeld(key), a.Stats().Lost)
	}
	if l := mustGet(t, ddb, table, key); l.Checkpoint.SequenceNumber != TRIM_HORIZON {
		t.Fatalf("a's checkpoint was written: %s", l.Checkpoint.SequenceNumber)
	}

	// b stops renewing (nobody calls its renewer): once its own last renewal
	// is older than the failover time it refuses to checkpoint, locally,
	// without sending anything.
	clockB.Advance(failover + time.Millisecond)
	before := b.Stats().Requests["UpdateItem"]
	if err := b.Checkpoint(ctx, key, SequenceNumber{SequenceNumber: "200"}); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("checkpoint after local expiry: %v, want ErrLeaseLost", err)
	}
	if after := b.Stats().Requests["UpdateItem"]; after != before {
		t.Fatalf("checkpoint after local expiry sent %d UpdateItem calls", after-before)
	}
	if b.IsHeld(key) {
		t.Fatal("b still holds a lease it did not renew for the failover time")
	}

	_ = a.Stop(ctx, false)
	_ = b.Stop(ctx, false)
	if len(eventsA) != 2 || eventsA[0].Kind != LeaseGained || eventsA[1].Kind != LeaseLost || !errors.Is(eventsA[1].Err, ErrLeaseLost) {
		t.Fatalf("a's events %+v, want gained then lost", eventsA)
	}
	if len(eventsB) != 2 || eventsB[1].Kind != LeaseLost {
		t.Fatalf("b's events %+v, want gained then lost", eventsB)
	}
}

func TestRenewalsKeepObserversOff(t *testing.T) {
	ddb, table := newLeaseTable(t, 1)
	ctx := context.Background()
	key := shardKey(0)
	start := time.Unix(1_700_000_000, 0)
	clockA, clockB := clocktest.New(start), clocktest.New(start)
	var ea, eb []LeaseEvent
	a := fakeWorker(t, ddb, table, "a", clockA, &ea)
	b := fakeWorker(t, ddb, table, "b", clockB, &eb)
	cfg := a.Config()

	a.runTaker(ctx)
	b.runTaker(ctx)
	for i := range 10 { // 10 renew intervals = 3.3 failover times
		clockA.Advance(cfg.RenewInterval)
		clockB.Advance(cfg.RenewInterval)
		a.renewAll(ctx, clockA.Now().Add(cfg.RenewInterval))
		if wait := b.runTaker(ctx); wait != b.cfg.ScanPacing(1, 2, 1) {
			t.Fatalf("round %d: the taker would wake after %s although the lease is renewed", i, wait)
		}
		if b.IsHeld(key) || !a.IsHeld(key) {
			t.Fatalf("round %d: a renewed lease changed hands", i)
		}
	}
	if got := a.Stats().Renewals; got != 10 {
		t.Fatalf("a renewed %d times, want 10", got)
	}

	// a stops renewing. Once b has seen the counter stand still for 1.5
	// renew intervals it schedules its next run just after the failover time.
	lastChange := clockB.Now()
	clockB.Advance(2 * cfg.RenewInterval)
	wait := b.runTaker(ctx)
	if want := lastChange.Add(cfg.FailoverTime + cfg.Epsilon).Sub(clockB.Now()); wait != want {
		t.Fatalf("taker wakes after %s, want %s (just past expiry)", wait, want)
	}
	clockB.Advance(wait)
	b.runTaker(ctx)
	if !b.IsHeld(key) {
		t.Fatal("b did not take the lease at the wake-up after its expiry")
	}
	// a's renewer notices at its next round.
	clockA.Advance(cfg.RenewInterval)
	a.renewAll(ctx, clockA.Now().Add(cfg.RenewInterval))
	if a.IsHeld(key) || a.Stats().Lost != 1 {
		t.Fatal("a's renewer must drop the lease when the counter condition fails")
	}
}

func TestRestartedWorkerReadoptsItsLeases(t *testing.T) {
	ddb, table := newLeaseTable(t, 3)
	ctx := context.Background()
	var e1, e2 []LeaseEvent
	first := fakeWorker(t, ddb, table, "w", clocktest.New(time.Unix(0, 0)), &e1)
	first.runTaker(ctx)
	if len(first.Held()) != 3 {
		t.Fatal("first incarnation did not take the leases")
	}
	// Same worker id, new process: it takes its own leases back at once
	// (KCL's renewer does so at initialisation), without an owner switch.
	second := fakeWorker(t, ddb, table, "w", clocktest.New(time.Unix(0, 0)), &e2)
	second.runTaker(ctx)
	if len(second.Held()) != 3 {
		t.Fatalf("restarted worker holds %d of its 3 leases", len(second.Held()))
	}
	for i := range 3 {
		if l := mustGet(t, ddb, table, shardKey(i)); l.OwnerSwitchesSinceCheckpoint != 0 {
			t.Fatalf("re-adoption counted an owner switch on %s", l.LeaseKey)
		}
	}
}
