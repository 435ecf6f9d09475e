package leasecore

import (
	"context"
	"testing"
	"time"
)

// TestFinishedLeasesNeedNoWorker: a worker releases a lease it finished, and
// takers neither take nor count leases at SHARD_END, so two workers share
// the four open leases 2/2 while two finished ones stay unowned for the
// cleanup.
func TestFinishedLeasesNeedNoWorker(t *testing.T) {
	ddb, table := newLeaseTable(t, 6)
	ctx := context.Background()
	for _, i := range []int{4, 5} {
		l, _, err := GetLease(ctx, ddb, table, shardKey(i), true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := CheckpointLease(ctx, ddb, table, l, SequenceNumber{SequenceNumber: SHARD_END}); err != nil {
			t.Fatal(err)
		}
	}
	a := startWorker(t, ddb, table, "a", fastConfig)
	b := startWorker(t, ddb, table, "b", fastConfig)
	waitFor(t, 10*time.Second, "2/2 over the open leases", func() bool { return a.held() == 2 && b.held() == 2 })
	time.Sleep(3 * fastConfig.TakerInterval) // more taker runs: nothing finished is taken
	for _, w := range []*testWorker{a, b} {
		for _, l := range w.c.Held() {
			if l.Checkpoint.IsShardEnd() {
				t.Errorf("worker %s took finished lease %s", w.id, l.LeaseKey)
			}
		}
	}

	// The holder of shard 0 finishes it: checkpoints SHARD_END and releases
	// it, as the runner does; then nobody takes it back.
	l, _, _ := GetLease(ctx, ddb, table, shardKey(0), true)
	holder := a
	if l.LeaseOwner == "b" {
		holder = b
	}
	if err := holder.c.Checkpoint(ctx, shardKey(0), SequenceNumber{SequenceNumber: SHARD_END}); err != nil {
		t.Fatal(err)
	}
	if err := holder.c.Release(ctx, shardKey(0)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "release event", func() bool { return holder.eventCount(LeaseReleased) == 1 })
	if holder.c.IsHeld(shardKey(0)) {
		t.Fatal("released lease still held")
	}
	time.Sleep(3 * fastConfig.TakerInterval)
	for _, i := range []int{0, 4, 5} {
		f, _, _ := GetLease(ctx, ddb, table, shardKey(i), true)
		if f.LeaseOwner != "" || !f.Checkpoint.IsShardEnd() {
			t.Errorf("finished lease %s: owner %q checkpoint %s", f.LeaseKey, f.LeaseOwner, f.Checkpoint.SequenceNumber)
		}
	}
	// Three open leases are left: one worker holds two, the other one.
	if n := a.held() + b.held(); n != 3 {
		t.Errorf("workers hold %d leases, want the 3 open ones", n)
	}
}
