package top

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/inspect/doctor"
	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

func TestMain(m *testing.M) { os.Exit(emulator.Main(m)) }

// TestDefaultIntervalCostsNoMoreThanATaker is the cost rule of docs/top.md:
// at the default interval a refresh's read units, a minute of them, are at
// most what one KCL 2.x worker's taker spends on the same table, one full
// Scan every 20 s. Both are counted from DynamoDB's ConsumedCapacity on a
// table seeded with 300 leases shaped as a busy fleet's.
func TestDefaultIntervalCostsNoMoreThanATaker(t *testing.T) {
	ctx := context.Background()
	ddb := emulator.DynamoDB(t)
	table := emulator.Name(t, "cost")
	emulator.CreateLeaseTable(t, ddb, table)
	seq := strings.Repeat("4", 56)
	for i := range 300 {
		l := leasecore.Lease{LeaseKey: fmt.Sprintf("shardId-%012d", i), LeaseOwner: fmt.Sprintf("worker-%d", i%7), LeaseCounter: int64(1000 + i),
			Checkpoint: leasecore.SequenceNumber{SequenceNumber: seq}, StartingHashKey: "0", EndingHashKey: strings.Repeat("3", 38)}
		if _, err := leasecore.CreateLease(ctx, ddb, table, l); err != nil {
			t.Fatal(err)
		}
	}
	clk := clocktest.New(time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC))
	s := NewSampler(APIs{DynamoDB: ddb}, Options{Table: table, Clock: clk})
	if _, err := s.Refresh(ctx); err != nil { // the first refresh also describes and detects
		t.Fatal(err)
	}
	clk.Advance(DefaultInterval)
	snap, err := s.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	taker, err := leasecore.ScanTable(ctx, ddb, table, leasecore.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	budget := TakerUnitsPerMinute(taker.ReadUnits)
	t.Logf("a refresh: %d scan, %d pages, %.1f RCU, %d DynamoDB calls; %.1f RCU a minute against the taker's %.1f", snap.Cost.Scans, snap.Cost.Pages, snap.Cost.ReadUnits, snap.Cost.TableCalls, snap.Cost.ReadUnitsPerMinute, budget)
	if taker.ReadUnits <= 0 || snap.Cost.ReadUnits <= 0 {
		t.Fatalf("no units counted: taker %.1f, top %.1f", taker.ReadUnits, snap.Cost.ReadUnits)
	}
	if snap.Cost.ReadUnitsPerMinute > budget+1e-9 {
		t.Errorf("the default interval costs %.1f RCU a minute, more than one taker's %.1f", snap.Cost.ReadUnitsPerMinute, budget)
	}
	if snap.Cost.Scans != 1 || snap.Cost.TableCalls != snap.Cost.Pages {
		t.Errorf("a steady refresh made %d scans and %d DynamoDB calls for %d pages, want one scan and nothing else", snap.Cost.Scans, snap.Cost.TableCalls, snap.Cost.Pages)
	}
}

// TestSamplerFollowsAShard: across refreshes the view counts the records a
// checkpoint moved over, keeps the lag's history, times the checkpoint's
// age, and calls a shard behind whose checkpoint stays still stuck.
func TestSamplerFollowsAShard(t *testing.T) {
	ctx := context.Background()
	st := emulator.NewStack(t, 1, emulator.StackOptions{})
	shard := "shardId-000000000000"
	var seqs []string
	for i := range 10 {
		out, err := st.Kinesis.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String(st.Stream), PartitionKey: aws.String("k"), Data: fmt.Appendf(nil, "r%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, aws.ToString(out.SequenceNumber))
	}
	l := leasecore.Lease{LeaseKey: shard, LeaseOwner: "w1", LeaseCounter: 1, Checkpoint: leasecore.SequenceNumber{SequenceNumber: seqs[2]}}
	if _, err := leasecore.CreateLease(ctx, st.DynamoDB, st.Table, l); err != nil {
		t.Fatal(err)
	}
	clk := clocktest.New(time.Now())
	s := NewSampler(APIs{DynamoDB: st.DynamoDB, Kinesis: st.Kinesis}, Options{Table: st.Table, Stream: st.Stream, Clock: clk})
	first := refresh(t, s)
	if sh := first.Shards[0]; sh.RecordsPerSec != nil || !sh.SinceAtLeast || sh.Behind == nil || *sh.Behind <= 0 {
		t.Fatalf("first refresh: rate %v, age at least %v, behind %v; want no rate yet, an open age, and behind", sh.RecordsPerSec, sh.SinceAtLeast, sh.Behind)
	}

	// The worker checkpoints 5 records further in 20 s: 0.25 records/s.
	l, _, err := leasecore.GetLease(ctx, st.DynamoDB, st.Table, shard, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leasecore.CheckpointLease(ctx, st.DynamoDB, st.Table, l, leasecore.SequenceNumber{SequenceNumber: seqs[7]}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(20 * time.Second)
	second := refresh(t, s)
	sh := second.Shards[0]
	if sh.RecordsPerSec == nil || *sh.RecordsPerSec != 0.25 || sh.RecordsCapped {
		t.Errorf("rate %v (capped %v), want 0.25 records/s", sh.RecordsPerSec, sh.RecordsCapped)
	}
	if sh.SinceAtLeast || sh.SinceCheckpoint != 0 || len(sh.History) != 2 {
		t.Errorf("age %s (at least %v), history %v; want 0s seen moving, two points", sh.SinceCheckpoint, sh.SinceAtLeast, sh.History)
	}
	if w := second.Workers; len(w) != 1 || w[0].ID != "w1" || w[0].Share != 1 || w[0].RecordsPerSec == nil || *w[0].RecordsPerSec != 0.25 {
		t.Errorf("workers %+v, want w1 with every lease at 0.25 records/s", w)
	}
	// ListShards, the probe's two calls and the count's two; doctor's
	// DescribeStreamSummary and ListStreamConsumers (its consumer checks)
	// were made by the first refresh and count once a minute.
	if c := second.Cost; c.KinesisCalls != 5 || c.KinesisCallsPerMinute != 5*3+2 {
		t.Errorf("%d Kinesis calls, %.0f a minute; want 5, and 17 a minute", c.KinesisCalls, c.KinesisCallsPerMinute)
	}
	// The first: ListShards, the probe, and doctor's two (no count yet).
	if c := first.Cost; c.KinesisCalls != 5 || c.KinesisCallsPerMinute != 3*3+2 {
		t.Errorf("first refresh: %d Kinesis calls, %.0f a minute; want 5, and 11 a minute", c.KinesisCalls, c.KinesisCallsPerMinute)
	}
	if ids := findingIDs(sh); len(ids) != 0 {
		t.Errorf("findings %v on a moving shard", ids)
	}

	// Still for a minute with records waiting, while its worker renews the
	// lease as a live one does: doctor's stuck-shard, on the shard's row.
	var third *Snapshot
	for range 3 {
		if l, _, err = leasecore.GetLease(ctx, st.DynamoDB, st.Table, shard, true); err != nil {
			t.Fatal(err)
		}
		if _, err := leasecore.RenewLease(ctx, st.DynamoDB, st.Table, l, "w1"); err != nil {
			t.Fatal(err)
		}
		clk.Advance(20 * time.Second)
		third = refresh(t, s)
	}
	sh = third.Shards[0]
	if sh.RecordsPerSec == nil || *sh.RecordsPerSec != 0 || sh.SinceCheckpoint != time.Minute {
		t.Errorf("rate %v, age %s; want 0 and 1m0s", sh.RecordsPerSec, sh.SinceCheckpoint)
	}
	if ids := findingIDs(sh); !slices.Contains(ids, doctor.FindStuckShard) {
		t.Errorf("findings %v, want %s", ids, doctor.FindStuckShard)
	}
	if third.Doctor.Partial || third.Doctor.Err != "" {
		t.Errorf("doctor %+v after 80s of reads, want a full window", third.Doctor)
	}
}

func refresh(t *testing.T, s *Sampler) *Snapshot {
	t.Helper()
	snap, err := s.Refresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Shards) != 1 {
		t.Fatalf("%d shards, want 1: %+v", len(snap.Shards), snap.Shards)
	}
	return snap
}

func findingIDs(sh Shard) []string {
	var ids []string
	for _, f := range sh.Findings {
		ids = append(ids, f.ID)
	}
	return ids
}
