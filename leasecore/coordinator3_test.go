package leasecore

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/clock"
)

// The coordinator in AssignByLeader mode against dynalite, with the
// hand-written leader of leader3_test.go. fastConfig: failover 1s, renew
// every 308ms, discovery every 975ms (assignment interval 2s).

func startWorker3(t testing.TB, api CoordinatorAPI, table, id string, cfg Config, a Assignment) *testWorker {
	t.Helper()
	w := &testWorker{t: t, id: id, logs: &syncBuffer{}}
	cfg.WorkerID = id
	logger := slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, err := NewCoordinator(api, table, cfg, clock.RealClock(), Options{
		Logger:     logger,
		OnEvent:    func(e LeaseEvent) { w.mu.Lock(); w.events = append(w.events, e); w.mu.Unlock() },
		Rand:       rand.New(rand.NewPCG(uint64(len(id)), 7)),
		Assignment: a,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.c, w.cancel = c, cancel
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = c.Stop(context.Background(), false)
	})
	return w
}

func heldKeys(c *Coordinator) []string {
	var keys []string
	for _, l := range c.Held() {
		keys = append(keys, l.LeaseKey)
	}
	return keys
}

func (w *testWorker) eventsOf(key string) []EventKind {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []EventKind
	for _, e := range w.events {
		if e.Lease.LeaseKey == key {
			out = append(out, e.Kind)
		}
	}
	return out
}

// discoveryWait is two discovery intervals plus slack: a lease given just
// after a run is found at the next.
var discoveryWait = 2*fastConfig.DiscoveryInterval() + slack

func TestDiscovererGainsAssignedLeases(t *testing.T) {
	ddb, table := newKCL3Table(t, 4, "a", "a", "b") // lease 3 unowned
	a := startWorker3(t, ddb, table, "a", fastConfig, AssignByLeader)
	waitFor(t, discoveryWait, "a holds the two leases given to it", func() bool { return len(a.c.Held()) == 2 })
	if got, want := heldKeys(a.c), []string{shardKey(0), shardKey(1)}; !slices.Equal(got, want) {
		t.Fatalf("held %v, want %v", got, want)
	}
	before := mustGet(t, ddb, table, shardKey(0)).LeaseCounter
	// Held leases are renewed; the unowned lease and b's are never taken.
	time.Sleep(3 * fastConfig.FailoverTime)
	if got := owners(t, ddb, table); got["a"] != 2 || got["b"] != 1 || got[""] != 1 {
		t.Fatalf("owners %v: a 3.x worker took or stole", got)
	}
	if after := mustGet(t, ddb, table, shardKey(0)).LeaseCounter; after < before+6 {
		t.Fatalf("counter %d -> %d over 3 failover times: not renewed", before, after)
	}
	s := a.c.Stats()
	if s.Discovered != 2 || s.IndexQueries < 3 || s.TakerRuns != 0 || s.Lost != 0 || s.Requests["Query"] < 3 {
		t.Fatalf("stats %+v", s)
	}
	if s.Units[OpDiscover].Read <= 0 {
		t.Fatalf("discovery read units %v, want counted", s.Units)
	}
	// A lease given later is found at the next run.
	leaderAssign(t, ddb, table, shardKey(3), "a")
	waitFor(t, discoveryWait, "a holds the lease given later", func() bool { return a.c.IsHeld(shardKey(3)) })
	if e := a.eventsOf(shardKey(3)); !slices.Equal(e, []EventKind{LeaseGained}) {
		t.Fatalf("events of the new lease %v", e)
	}
}

func TestDiscovererRespectsStopTakingAndInclude(t *testing.T) {
	ddb, table := newKCL3Table(t, 2, "a", "a")
	cfg := fastConfig
	cfg.WorkerID = "a"
	c, err := NewCoordinator(ddb, table, cfg, clock.RealClock(), Options{
		Assignment: AssignByLeader,
		Include:    func(l Lease) bool { return l.LeaseKey != shardKey(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background(), false)
	waitFor(t, discoveryWait, "a holds lease 0", func() bool { return c.IsHeld(shardKey(0)) })
	c.StopTaking()
	leaderAssign(t, ddb, table, shardKey(0), "b")
	waitFor(t, fastConfig.FailoverTime, "lease 0 lost", func() bool { return !c.IsHeld(shardKey(0)) })
	leaderAssign(t, ddb, table, shardKey(0), "a")
	time.Sleep(discoveryWait)
	if held := heldKeys(c); len(held) != 0 {
		t.Fatalf("held %v after StopTaking (lease 1 is excluded, lease 0 given after the stop)", held)
	}
}

func TestHandoffAwayFromThisWorker(t *testing.T) {
	ddb, table := newKCL3Table(t, 1, "a")
	key := shardKey(0)
	a := startWorker3(t, ddb, table, "a", fastConfig, AssignByLeader)
	waitFor(t, discoveryWait, "a holds the lease", func() bool { return a.c.IsHeld(key) })

	leaderHandoff(t, ddb, table, key, "b")
	waitFor(t, renewFast+slack, "LeaseHandoff event", func() bool { return a.eventCount(LeaseHandoff) == 1 })
	// Still held and renewed while the handoff lasts, reported once.
	c0 := mustGet(t, ddb, table, key).LeaseCounter
	time.Sleep(2 * fastConfig.FailoverTime)
	cur := mustGet(t, ddb, table, key)
	if !a.c.IsHeld(key) || cur.LeaseCounter < c0+4 || cur.LeaseOwner != "b" || cur.CheckpointOwner != "a" {
		t.Fatalf("during the handoff: held %v, item %+v (counter was %d)", a.c.IsHeld(key), cur, c0)
	}
	if n := a.eventCount(LeaseHandoff); n != 1 {
		t.Fatalf("%d LeaseHandoff events, want 1", n)
	}
	// The old owner checkpoints its last batch.
	if err := a.c.Checkpoint(context.Background(), key, SequenceNumber{SequenceNumber: "4711"}); err != nil {
		t.Fatalf("checkpoint during the handoff: %v", err)
	}
	before := mustGet(t, ddb, table, key)
	if err := a.c.CompleteHandoff(context.Background(), key); err != nil {
		t.Fatalf("CompleteHandoff: %v", err)
	}
	after := mustGet(t, ddb, table, key)
	if after.LeaseOwner != "b" || after.CheckpointOwner != "" || after.LeaseCounter != before.LeaseCounter+1 || after.Checkpoint.SequenceNumber != "4711" {
		t.Fatalf("after the handoff: %+v (before %+v)", after, before)
	}
	waitFor(t, slack, "LeaseHandedOff event", func() bool { return a.eventCount(LeaseHandedOff) == 1 })
	if a.c.IsHeld(key) || a.eventCount(LeaseLost) != 0 {
		t.Fatalf("after the handoff: held %v, events %v", a.c.IsHeld(key), a.eventsOf(key))
	}
	if s := a.c.Stats(); s.Handoffs != 1 || s.HandedOff != 1 {
		t.Fatalf("stats %+v", s)
	}
	// b's lease now: a must not get it back from the index.
	time.Sleep(discoveryWait)
	if a.c.IsHeld(key) {
		t.Fatal("a holds the lease it handed off")
	}
}

func TestHandoffToThisWorker(t *testing.T) {
	ddb, table := newKCL3Table(t, 1, "x")
	key := shardKey(0)
	leaderHandoff(t, ddb, table, key, "a") // leaseOwner a, checkpointOwner x
	a := startWorker3(t, ddb, table, "a", fastConfig, AssignByLeader)
	time.Sleep(discoveryWait)
	if a.c.IsHeld(key) || a.c.Stats().IndexQueries < 2 {
		t.Fatalf("a gained a lease its old owner still hands over (held %v, stats %+v)", a.c.IsHeld(key), a.c.Stats())
	}
	// x completes the handoff (its assignLease write).
	old := mustGet(t, ddb, table, key)
	if _, err := HandoffLease(context.Background(), ddb, table, old, "x"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, discoveryWait, "a holds the lease once checkpointOwner is gone", func() bool { return a.c.IsHeld(key) })
}

func TestAssignedAwayWithoutHandoffIsLost(t *testing.T) {
	ddb, table := newKCL3Table(t, 1, "a")
	key := shardKey(0)
	a := startWorker3(t, ddb, table, "a", fastConfig, AssignByLeader)
	waitFor(t, discoveryWait, "a holds the lease", func() bool { return a.c.IsHeld(key) })
	leaderAssign(t, ddb, table, key, "b")
	waitFor(t, renewFast+slack, "LeaseLost at the next renewal", func() bool { return a.eventCount(LeaseLost) == 1 })
	if a.c.IsHeld(key) || a.eventCount(LeaseHandoff) != 0 {
		t.Fatalf("held %v, events %v", a.c.IsHeld(key), a.eventsOf(key))
	}
}

func TestSetAssignmentBothWays(t *testing.T) {
	ddb, table := newKCL3Table(t, 2) // unowned: the 2.x taker takes them
	a := startWorker3(t, ddb, table, "a", fastConfig, AssignByTaking)
	waitFor(t, fastConfig.TakerInterval+slack, "the taker takes both", func() bool { return len(a.c.Held()) == 2 })

	a.c.SetAssignment(AssignByLeader)
	if a.c.Assignment() != AssignByLeader {
		t.Fatal("Assignment() does not report the switch")
	}
	// Held leases stay held; renewals now fail on a checkpointOwner: the
	// 3.x condition sees the handoff.
	leaderHandoff(t, ddb, table, shardKey(0), "b")
	waitFor(t, renewFast+slack, "the 3.x renewal sees the handoff", func() bool { return a.eventCount(LeaseHandoff) == 1 })
	if !a.c.IsHeld(shardKey(1)) {
		t.Fatal("lease 1 dropped by the switch")
	}
	// No taking in leader mode: an unowned lease stays unowned.
	if ok, err := CreateLease(context.Background(), ddb, table, Lease{LeaseKey: shardKey(2), Checkpoint: SequenceNumber{SequenceNumber: TRIM_HORIZON}}); err != nil || !ok {
		t.Fatal(ok, err)
	}
	runs := a.c.Stats().TakerRuns
	time.Sleep(2 * fastConfig.TakerInterval)
	if a.c.IsHeld(shardKey(2)) || a.c.Stats().TakerRuns != runs {
		t.Fatalf("taker ran in leader mode (runs %d -> %d)", runs, a.c.Stats().TakerRuns)
	}

	a.c.SetAssignment(AssignByTaking)
	waitFor(t, fastConfig.TakerInterval+slack, "the taker takes the new lease", func() bool { return a.c.IsHeld(shardKey(2)) })
	if !a.c.IsHeld(shardKey(1)) {
		t.Fatal("lease 1 dropped by the switch back")
	}
}

func TestStopReleaseEvictsIn3x(t *testing.T) {
	ddb, table := newKCL3Table(t, 2, "a", "a")
	a := startWorker3(t, ddb, table, "a", fastConfig, AssignByLeader)
	waitFor(t, discoveryWait, "a holds both", func() bool { return len(a.c.Held()) == 2 })
	leaderHandoff(t, ddb, table, shardKey(1), "b")
	waitFor(t, renewFast+slack, "handoff seen", func() bool { return a.eventCount(LeaseHandoff) == 1 })
	c0, c1 := mustGet(t, ddb, table, shardKey(0)), mustGet(t, ddb, table, shardKey(1))
	if err := a.c.Stop(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	l0, l1 := mustGet(t, ddb, table, shardKey(0)), mustGet(t, ddb, table, shardKey(1))
	// getDynamoEvictLeaseUpdate: no owner left on 0; on 1 (in handoff) the
	// next owner stays and checkpointOwner goes; counters + 1.
	if l0.LeaseOwner != "" || l0.LeaseCounter != c0.LeaseCounter+1 {
		t.Fatalf("lease 0 after Stop(release): %+v (was %+v)", l0, c0)
	}
	if l1.LeaseOwner != "b" || l1.CheckpointOwner != "" || l1.LeaseCounter != c1.LeaseCounter+1 {
		t.Fatalf("lease 1 after Stop(release): %+v (was %+v)", l1, c1)
	}
	if n := a.eventCount(LeaseReleased); n != 2 {
		t.Fatalf("%d LeaseReleased events, want 2", n)
	}
}

func TestThroughputWrittenAndSmoothed(t *testing.T) {
	ddb, table := newKCL3Table(t, 1, "a")
	key := shardKey(0)
	a := startWorker3(t, ddb, table, "a", fastConfig, AssignByLeader)
	waitFor(t, discoveryWait, "a holds the lease", func() bool { return a.c.IsHeld(key) })
	// Nothing recorded yet: no throughputKBps written.
	time.Sleep(2 * renewFast)
	if l := mustGet(t, ddb, table, key); l.ThroughputKBps != nil {
		t.Fatalf("throughputKBps %v written with no bytes recorded", *l.ThroughputKBps)
	}
	// A reader's steady flow: a record made just after a renewal is a
	// whole window old at the next one and may fall out of it (as in the
	// KCL's LeaseStatsRecorder), a flow never does.
	waitFor(t, 2*renewFast+slack, "throughputKBps written", func() bool {
		a.c.RecordBytes(key, 64<<10)
		l := mustGet(t, ddb, table, key)
		return l.ThroughputKBps != nil && *l.ThroughputKBps > 0
	})
	// No more bytes: the average decays, halving each renewal, but a value
	// is still written.
	first := *mustGet(t, ddb, table, key).ThroughputKBps
	waitFor(t, 4*renewFast, "throughputKBps decays", func() bool {
		l := mustGet(t, ddb, table, key)
		return l.ThroughputKBps != nil && *l.ThroughputKBps < first/2
	})
}

// renewFast is fastConfig's renew interval (308ms).
var renewFast = fastConfig.WithDefaults().RenewInterval

// A handoff the leader calls off by assigning the lease back to its old
// owner: the holder drops it (its shard stopped for the handoff) and the
// discoverer gains it again, so that a new run reads it. Holding it on,
// as renewed, would leave a lease that nothing reads.
func TestHandoffCalledOffIsGainedAgain(t *testing.T) {
	ddb, table := newKCL3Table(t, 1, "a")
	key := shardKey(0)
	a := startWorker3(t, ddb, table, "a", fastConfig, AssignByLeader)
	waitFor(t, discoveryWait, "a holds the lease", func() bool { return a.c.IsHeld(key) })
	leaderHandoff(t, ddb, table, key, "b")
	waitFor(t, renewFast+slack, "LeaseHandoff event", func() bool { return a.eventCount(LeaseHandoff) == 1 })
	if !leaderAssign(t, ddb, table, key, "a") {
		t.Fatal("leader assign failed")
	}
	waitFor(t, renewFast+slack, "LeaseLost event", func() bool { return a.eventCount(LeaseLost) == 1 })
	waitFor(t, discoveryWait, "a gains the lease again", func() bool { return a.eventCount(LeaseGained) == 2 && a.c.IsHeld(key) })
	if err := a.c.CompleteHandoff(context.Background(), key); err == nil {
		t.Fatal("CompleteHandoff of a lease no longer in handoff succeeded")
	}
}
