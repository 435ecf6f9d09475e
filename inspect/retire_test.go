package inspect

import (
	"context"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// TestCheckRetired: consumers deregister's liveness rule on the local
// server. A missing table blocks; a lease renewed during the sample blocks;
// held leases that nobody renews do not, with a sample or without one.
func TestCheckRetired(t *testing.T) {
	ctx := context.Background()
	ddb := emulator.DynamoDB(t)
	table := emulator.Name(t, "retire")
	emulator.CreateLeaseTable(t, ddb, table)
	l := leasecore.Lease{LeaseKey: "shardId-000000000000", LeaseOwner: "w1", LeaseCounter: 3,
		Checkpoint: leasecore.SequenceNumber{SequenceNumber: leasecore.TRIM_HORIZON}}
	if _, err := leasecore.CreateLease(ctx, ddb, table, l); err != nil {
		t.Fatal(err)
	}

	check := func(table string, sample time.Duration, during func()) (*AppActivity, Blocker) {
		t.Helper()
		clock := clocktest.New(time.Now())
		type answer struct {
			a *AppActivity
			b Blocker
		}
		done := make(chan answer, 1)
		go func() {
			a, b, err := CheckRetired(ctx, ddb, table, sample, clock)
			if err != nil {
				t.Error(err)
			}
			done <- answer{a, b}
		}()
		// A sample on an existing table waits on the clock; a missing one
		// is known at the first read.
		if during != nil {
			if err := clock.WaitTimers(ctx, 1); err != nil {
				t.Fatal(err)
			}
			during()
			clock.Advance(sample)
		}
		got := <-done
		return got.a, got.b
	}

	if a, b := check(table+"-none", 10*time.Second, nil); b != BlockedTableMissing {
		t.Errorf("missing table: %v (%+v), want BlockedTableMissing", b, a)
	}
	if a, b := check(table, 0, nil); b != NoBlocker {
		t.Errorf("one read of a held lease: %v (%+v), want NoBlocker: a stopped worker's name stays on its leases", b, a)
	}
	if a, b := check(table, 10*time.Second, func() {}); b != NoBlocker {
		t.Errorf("nothing renewed: %v (%+v), want NoBlocker", b, a)
	}
	if a, b := check(table, 10*time.Second, func() {
		if _, err := leasecore.RenewLease(ctx, ddb, table, l, l.LeaseOwner); err != nil {
			t.Fatal(err)
		}
	}); b != BlockedAppRunning {
		t.Errorf("w1 renewed during the sample: %v (%+v), want BlockedAppRunning", b, a)
	}
}
