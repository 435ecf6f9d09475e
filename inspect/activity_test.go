package inspect

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// TestReadAppActivity: one read names the holders; a sample in which a
// worker renews one lease makes the application live and names the
// worker; a still table is not live; a missing table is Missing, no error.
func TestReadAppActivity(t *testing.T) {
	ctx := context.Background()
	ddb := emulator.DynamoDB(t)
	table := emulator.Name(t, "act")
	emulator.CreateLeaseTable(t, ddb, table)
	leases := map[string]leasecore.Lease{}
	for _, l := range []leasecore.Lease{
		{LeaseKey: "shardId-000000000000", LeaseOwner: "w1", LeaseCounter: 3},
		{LeaseKey: "shardId-000000000001", LeaseOwner: "w2", LeaseCounter: 5},
		{LeaseKey: "shardId-000000000002", LeaseOwner: "w3", LeaseCounter: 9, Checkpoint: leasecore.SequenceNumber{SequenceNumber: leasecore.SHARD_END}},
		{LeaseKey: "shardId-000000000003"},
	} {
		if l.Checkpoint.SequenceNumber == "" {
			l.Checkpoint.SequenceNumber = leasecore.TRIM_HORIZON
		}
		if _, err := leasecore.CreateLease(ctx, ddb, table, l); err != nil {
			t.Fatal(err)
		}
		leases[l.LeaseKey] = l
	}

	one, err := ReadAppActivity(ctx, ddb, table, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if one.Missing || one.Live() || one.Leases != 3 || !slices.Equal(one.Holders, []string{"w1", "w2"}) {
		t.Errorf("one read: %+v", one)
	}

	sample := func(during func()) *AppActivity {
		t.Helper()
		clock := clocktest.New(time.Now())
		done := make(chan *AppActivity, 1)
		go func() {
			a, err := ReadAppActivity(ctx, ddb, table, 10*time.Second, clock)
			if err != nil {
				t.Error(err)
			}
			done <- a
		}()
		if err := clock.WaitTimers(ctx, 1); err != nil {
			t.Fatal(err)
		}
		during()
		clock.Advance(10 * time.Second)
		return <-done
	}
	still := sample(func() {})
	if still.Live() || still.Sample != 10*time.Second {
		t.Errorf("nothing renewed, yet %+v", still)
	}
	live := sample(func() {
		l := leases["shardId-000000000001"]
		if _, err := leasecore.RenewLease(ctx, ddb, table, l, l.LeaseOwner); err != nil {
			t.Fatal(err)
		}
	})
	if !live.Live() || !slices.Equal(live.Moved, []string{"shardId-000000000001"}) || !slices.Equal(live.Workers, []string{"w2"}) {
		t.Errorf("w2 renewed, yet %+v", live)
	}

	missing, err := ReadAppActivity(ctx, ddb, table+"-none", 0, nil)
	if err != nil || !missing.Missing {
		t.Errorf("missing table: %+v, %v", missing, err)
	}
}
