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
	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
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

// TestKCL3TableCostsOneScanARefresh: on a KCL 3.5 table the leader lock,
// Migration3.0 and the workers' metrics are items of the lease table, so
// the view takes them from its scan: a steady refresh asks DynamoDB for
// the Scan's pages and nothing else, within one taker's units a minute,
// and still shows the leader and each worker's metrics. The items are
// written as the KCL writes them (kcl3fleet).
func TestKCL3TableCostsOneScanARefresh(t *testing.T) {
	ctx := context.Background()
	ddb := emulator.DynamoDB(t)
	clk := clocktest.New(time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC))
	f := kcl3fleet.Setup(t, ddb, kcl3fleet.Layout{Kind: kcl3fleet.NewApp})
	f.Clock = clk
	table := f.Tables.Lease
	leader := f.NewLeader(kcl3fleet.LeaderConfig{WorkerID: "w1"})
	if held, err := leader.TakeLock(ctx); err != nil || !held {
		t.Fatalf("take the lock: %v %v", held, err)
	}
	t.Cleanup(func() { _ = leader.Release(context.Background()) })
	metrics := func() {
		t.Helper()
		if err := leader.Heartbeat(ctx); err != nil {
			t.Fatal(err)
		}
		if err := f.PutWorkerMetrics(ctx, "w1", kcl3fleet.Metrics{Stats: map[string][]float64{"C": {41}}}, clk.Now()); err != nil {
			t.Fatal(err)
		}
	}
	var leases []leasecore.Lease
	for i := range 20 {
		l := leasecore.Lease{LeaseKey: shardKey(i), LeaseOwner: "w1", LeaseCounter: 1, Checkpoint: leasecore.SequenceNumber{SequenceNumber: leasecore.TRIM_HORIZON}}
		if _, err := leasecore.CreateLease(ctx, ddb, table, l); err != nil {
			t.Fatal(err)
		}
		leases = append(leases, l)
	}
	s := NewSampler(APIs{DynamoDB: ddb}, Options{Table: table, Clock: clk, CloudWatchSkipped: "--no-cloudwatch"})
	var snap *Snapshot
	for i := range 3 {
		if i > 0 {
			clk.Advance(DefaultInterval)
			for j := range leases { // a live worker renews, its leader heartbeats, its metrics report
				next, err := leasecore.RenewLease(ctx, ddb, table, leases[j], "w1")
				if err != nil {
					t.Fatal(err)
				}
				leases[j] = next
			}
		}
		metrics()
		var err error
		if snap, err = s.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	taker, err := leasecore.ScanTable(ctx, ddb, table, leasecore.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := snap.Cost
	t.Logf("a refresh: %d scan, %d pages, %d DynamoDB calls, %.1f RCU; %.1f RCU a minute against the taker's %.1f", c.Scans, c.Pages, c.TableCalls, c.ReadUnits, c.ReadUnitsPerMinute, TakerUnitsPerMinute(taker.ReadUnits))
	if c.Scans != 1 || c.TableCalls != c.Pages {
		t.Errorf("a steady refresh made %d DynamoDB calls for %d scan pages, want the scan alone", c.TableCalls, c.Pages)
	}
	if c.ReadUnitsPerMinute > TakerUnitsPerMinute(taker.ReadUnits)+1e-9 {
		t.Errorf("%.1f RCU a minute, more than one taker's %.1f", c.ReadUnitsPerMinute, TakerUnitsPerMinute(taker.ReadUnits))
	}
	if snap.KCL3 == nil || snap.KCL3.Leader != "w1" || snap.KCL3.Layout != "lease table" {
		t.Errorf("KCL 3.x %+v, want leader w1 in the lease table", snap.KCL3)
	}
	if len(snap.Workers) != 1 || !snap.Workers[0].Leader || snap.Workers[0].Metrics == nil {
		t.Errorf("workers %+v, want w1, the leader, with its metrics", snap.Workers)
	}
	for _, f := range snap.Findings {
		if f.Severity >= doctor.SeverityWarn {
			t.Errorf("a healthy 3.x fleet shows %s: %s", f.ID, f.Summary)
		}
	}
}
