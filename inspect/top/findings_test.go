package top

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kcltool/kcltool/inspect/doctor"
	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// TestTopShowsDoctorsWindowFindings: the view runs doctor's checks over its
// own reads, so it shows what only a window of reads tells, here a worker
// that renews nothing (dead-worker), on the shard it strands and in the
// snapshot's list; the first refreshes say the window is still filling.
func TestTopShowsDoctorsWindowFindings(t *testing.T) {
	ctx := context.Background()
	ddb := emulator.DynamoDB(t)
	table := emulator.Name(t, "topdoc")
	emulator.CreateLeaseTable(t, ddb, table)
	leases := map[string]leasecore.Lease{}
	for i, owner := range []string{"w1", "w2"} {
		l := leasecore.Lease{LeaseKey: shardKey(i), LeaseOwner: owner, LeaseCounter: 1, Checkpoint: leasecore.SequenceNumber{SequenceNumber: leasecore.TRIM_HORIZON}}
		if _, err := leasecore.CreateLease(ctx, ddb, table, l); err != nil {
			t.Fatal(err)
		}
		leases[l.LeaseKey] = l
	}
	clk := clocktest.New(time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC))
	s := NewSampler(APIs{DynamoDB: ddb}, Options{Table: table, Clock: clk, CloudWatchSkipped: "--no-cloudwatch"})
	var snap *Snapshot
	for i := range 4 { // reads at 0s, 20s, 40s, 60s: doctor's 1m window
		if i > 0 {
			clk.Advance(DefaultInterval)
			next, err := leasecore.RenewLease(ctx, ddb, table, leases[shardKey(0)], "w1")
			if err != nil {
				t.Fatal(err)
			}
			leases[shardKey(0)] = next
		}
		var err error
		if snap, err = s.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if want := i < 3; snap.Doctor.Partial != want || snap.Doctor.Err != "" {
			t.Errorf("refresh %d: doctor %+v, want partial %v", i+1, snap.Doctor, want)
		}
	}
	i := slices.IndexFunc(snap.Findings, func(f Finding) bool { return f.ID == doctor.FindDeadWorker })
	if i < 0 || !slices.Equal(snap.Findings[i].Workers, []string{"w2"}) || snap.Findings[i].Severity != doctor.SeverityCritical {
		t.Fatalf("findings %+v, want a critical dead-worker naming w2", snap.Findings)
	}
	for _, sh := range snap.Shards {
		has := slices.Contains(findingIDs(sh), doctor.FindDeadWorker)
		if want := sh.Key == shardKey(1); has != want {
			t.Errorf("%s: findings %v, dead-worker %v, want %v", sh.Key, findingIDs(sh), has, want)
		}
	}
}

func shardKey(i int) string { return fmt.Sprintf("shardId-%012d", i) }
