package reshard

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// wantLease checks a lease created by shard sync against the listed shard:
// checkpoint, parentShardId = parent + adjacent parent, hash keys, counter
// 0, no owner, no entityType (a KCL 2.x table must stay one).
func wantLease(t *testing.T, g *Graph, got map[string]leasecore.Lease, key, shard, checkpoint string, parents ...string) {
	t.Helper()
	l, ok := got[key]
	if !ok {
		t.Errorf("no lease %s; have %v", key, keys(got))
		return
	}
	n, _ := g.Node(shard)
	// parentShardId is a DynamoDB string set: no order survives.
	if l.Checkpoint != (leasecore.SequenceNumber{SequenceNumber: checkpoint}) || !slices.Equal(sorted(l.ParentShardIDs...), sorted(parents...)) ||
		l.StartingHashKey != n.HashRange.Start.String() || l.EndingHashKey != n.HashRange.End.String() ||
		l.LeaseCounter != 0 || l.LeaseOwner != "" || l.OwnerSwitchesSinceCheckpoint != 0 || l.EntityType != "" ||
		len(l.ChildShardIDs) != 0 {
		t.Errorf("lease %s = %+v\nwant checkpoint %s, parents %v, hash %v", key, l, checkpoint, parents, n.HashRange)
	}
}

func TestSyncEmptyTable(t *testing.T) {
	t.Parallel()
	s := newScenario(t)
	testSyncEmptyTable(t, s, []syncCase{
		// The roots, closed as they are: the children follow at SHARD_END.
		{"TRIM_HORIZON", TrimHorizon(), map[string][]string{s.root0: nil, s.root1: nil}},
		// The open shards; the merge child names both parents.
		{"LATEST", Latest(), map[string][]string{s.left: {s.root0}, s.merged: {s.right, s.root1}}},
	})
}

func TestSyncEmptyTableAtTimestamp(t *testing.T) {
	t.Parallel()
	s := newTimedScenario(t)
	testSyncEmptyTable(t, s, []syncCase{
		// Open at a time before the split: the roots.
		{"before split", AtTimestamp(s.beforeSplit), map[string][]string{s.root0: nil, s.root1: nil}},
		// After the merge: the open shards. kinesis-local's filter also
		// returns the closed ancestors; they must not get leases.
		{"after merge", AtTimestamp(s.afterMerge), map[string][]string{s.left: {s.root0}, s.merged: {s.right, s.root1}}},
	})
}

// TestSyncAtTimestampDropsClosedAncestors makes the AT_TIMESTAMP listing
// return closed ancestors along with their open descendants, as
// kinesis-local does for times within a second of a reshard or before the
// stream existed (a proxy drops the filter, deterministically): only the
// youngest shards of each line get leases.
func TestSyncAtTimestampDropsClosedAncestors(t *testing.T) {
	t.Parallel()
	s := newScenario(t)
	proxy := newFaultProxy(t, emulator.KinesisEndpoint(t), "ListShards", "", 0)
	var filtered atomic.Int32
	proxy.rewriteRequest = func(body []byte) []byte {
		var in map[string]any
		if json.Unmarshal(body, &in) != nil || in["ShardFilter"] == nil {
			return body
		}
		filtered.Add(1)
		delete(in, "ShardFilter")
		b, _ := json.Marshal(in)
		return b
	}
	kin := kinesis.NewFromConfig(noRetryConfig(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(proxy.URL) })
	s.kin = kin
	testSyncEmptyTable(t, s, []syncCase{
		{"all shards returned", AtTimestamp(s.afterMerge), map[string][]string{s.left: {s.root0}, s.merged: {s.right, s.root1}}},
	})
	if filtered.Load() == 0 {
		t.Error("SyncShards did not ask for an AT_TIMESTAMP listing")
	}
}

type syncCase struct {
	name    string
	initial Position
	want    map[string][]string // shard -> parents
}

// testSyncEmptyTable syncs each case into a fresh table.
func testSyncEmptyTable(t *testing.T, s *scenario, cases []syncCase) {
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := *s
			ts.table = emulator.Name(t, "t")
			emulator.CreateLeaseTable(t, s.ddb, ts.table)
			opt := SyncOptions{Stream: Stream{Name: s.stream}, Initial: tc.initial}
			rep, err := SyncShards(ctx, s.kin, s.ddb, ts.tbl(), opt)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.EmptyTable || len(rep.Created) != len(tc.want) || len(rep.Existing) != 0 || len(rep.Orphans) != 0 {
				t.Errorf("report: empty %v, created %d, existing %v, orphans %v", rep.EmptyTable, len(rep.Created), rep.Existing, rep.Orphans)
			}
			got := ts.leases(t)
			if len(got) != len(tc.want) {
				t.Errorf("table has %v, want leases for %v", keys(got), tc.want)
			}
			for shard, parents := range tc.want {
				wantLease(t, rep.Graph, got, shard, shard, tc.initial.Kind, parents...)
			}

			// A second sync (the table is no longer empty) finds nothing to
			// add: the open children descend from leased shards and get
			// their leases at SHARD_END.
			rep, err = SyncShards(ctx, s.kin, s.ddb, ts.tbl(), opt)
			if err != nil || rep.EmptyTable || len(rep.Created) != 0 {
				t.Errorf("second sync: created %v, empty %v, err %v", rep.Created, rep.EmptyTable, err)
			}
		})
	}
}

// TestSyncConcurrentWorkers runs the initial sync of several workers at
// once: each lease is created exactly once.
func TestSyncConcurrentWorkers(t *testing.T) {
	t.Parallel()
	s := newScenario(t)
	reps := make(chan SyncReport, 4)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			rep, err := SyncShards(context.Background(), s.kin, s.ddb, s.tbl(), SyncOptions{Stream: Stream{Name: s.stream}, Initial: Latest()})
			reps <- rep
			errs <- err
		}()
	}
	created := 0
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		created += len((<-reps).Created)
	}
	if got := s.leases(t); created != 2 || len(got) != 2 {
		t.Errorf("4 workers created %d leases in total, table has %v; want 2", created, keys(got))
	}
}

func TestSyncNonEmptyTable(t *testing.T) {
	t.Parallel()
	s := newScenario(t)
	ctx := context.Background()
	seq := leasecore.SequenceNumber{SequenceNumber: seqNum}
	tests := []struct {
		name    string
		leased  func() []string
		initial Position
		want    map[string]string // shard -> checkpoint
	}{
		// root0 is leased: the open left child descends from it and waits.
		// The merge child descends from it through right; its other parent,
		// root1, is the first missing ancestor level. Under LATEST root1 is
		// not a descendant itself, so it gets the initial position.
		{"root0 leased LATEST", func() []string { return []string{s.root0} }, Latest(),
			map[string]string{s.root1: leasecore.LATEST}},
		{"root0 leased TRIM_HORIZON", func() []string { return []string{s.root0} }, TrimHorizon(),
			map[string]string{s.root1: leasecore.TRIM_HORIZON}},
		{"root0 leased AT_TIMESTAMP", func() []string { return []string{s.root0} }, AtTimestamp(s.beforeSplit),
			map[string]string{s.root1: leasecore.AT_TIMESTAMP}},
		// Only left is leased: the merge child has no leased ancestor and
		// starts at LATEST...
		{"left leased LATEST", func() []string { return []string{s.left} }, Latest(),
			map[string]string{s.merged: leasecore.LATEST}},
		// ...but under TRIM_HORIZON its lineage is read from its roots.
		{"left leased TRIM_HORIZON", func() []string { return []string{s.left} }, TrimHorizon(),
			map[string]string{s.root0: leasecore.TRIM_HORIZON, s.root1: leasecore.TRIM_HORIZON}},
		{"open shards leased", func() []string { return []string{s.left, s.merged} }, TrimHorizon(), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := *s
			ts.table = emulator.Name(t, "t")
			emulator.CreateLeaseTable(t, s.ddb, ts.table)
			for _, id := range tc.leased() {
				ts.putLease(t, leasecore.Lease{LeaseKey: id, LeaseOwner: "w1", LeaseCounter: 7, Checkpoint: seq})
			}
			// A lease of a shard this stream never had: an orphan, reported
			// and left alone.
			ts.putLease(t, leasecore.Lease{LeaseKey: "shardId-000000000999", Checkpoint: seq})
			rep, err := SyncShards(ctx, s.kin, s.ddb, ts.tbl(), SyncOptions{Stream: Stream{Name: s.stream}, Initial: tc.initial})
			if err != nil {
				t.Fatal(err)
			}
			if rep.EmptyTable || len(rep.Created) != len(tc.want) {
				t.Errorf("created %v, want %v", rep.Created, tc.want)
			}
			got := ts.leases(t)
			for shard, cp := range tc.want {
				wantLease(t, rep.Graph, got, shard, shard, cp, rep.Graph.Parents(shard)...)
			}
			if len(got) != len(tc.leased())+1+len(tc.want) {
				t.Errorf("table has %v", keys(got))
			}
			if len(rep.Orphans) != 1 || rep.Orphans[0].LeaseKey != "shardId-000000000999" {
				t.Errorf("orphans = %+v", rep.Orphans)
			}
			if _, ok := got["shardId-000000000999"]; !ok {
				t.Error("the orphan lease was deleted")
			}
		})
	}
}

// TestSyncMultiStream syncs a multi-stream lease table: keys carry the
// stream identifier, streamName and shardId are set, parents stay raw ids,
// and other streams' leases neither count nor get touched.
func TestSyncMultiStream(t *testing.T) {
	t.Parallel()
	s := newScenario(t)
	ctx := context.Background()
	st := Stream{Name: s.stream, ID: "000000000000:" + s.stream + ":1700000000"}
	other := Stream{ID: "000000000000:other:1700000000"}
	s.putLease(t, leasecore.Lease{LeaseKey: other.LeaseKey(s.left), StreamName: other.ID, ShardID: s.left,
		Checkpoint: leasecore.SequenceNumber{SequenceNumber: seqNum}})
	rep, err := SyncShards(ctx, s.kin, s.ddb, s.tbl(), SyncOptions{Stream: st, Initial: Latest()})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.EmptyTable || len(rep.Orphans) != 0 {
		t.Errorf("another stream's lease counted: empty %v, orphans %v", rep.EmptyTable, rep.Orphans)
	}
	got := s.leases(t)
	wantLease(t, rep.Graph, got, st.LeaseKey(s.merged), s.merged, leasecore.LATEST, s.right, s.root1)
	wantLease(t, rep.Graph, got, st.LeaseKey(s.left), s.left, leasecore.LATEST, s.root0)
	if l := got[st.LeaseKey(s.merged)]; l.StreamName != st.ID || l.ShardID != s.merged {
		t.Errorf("multi-stream attributes: %+v", l)
	}
	if len(got) != 3 {
		t.Errorf("table has %v", keys(got))
	}
}

// TestSyncRetriesThrottledCreates throttles a lease creation: it is retried
// with backoff and the lease is created once.
func TestSyncRetriesThrottledCreates(t *testing.T) {
	t.Parallel()
	s := newScenario(t)
	proxy := newFaultProxy(t, emulator.DynamoDBEndpoint(t), "PutItem", "ProvisionedThroughputExceededException", 1)
	ddb := dynamodb.NewFromConfig(noRetryConfig(), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(proxy.URL) })
	clock := &instantClock{}
	var ops []string
	retry := Retry{Clock: clock, OnRetry: func(op string, _ int, err error) { ops = append(ops, op) }}
	rep, err := SyncShards(context.Background(), s.kin, ddb, Table{Name: s.table, Retry: retry},
		SyncOptions{Stream: Stream{Name: s.stream}, Initial: Latest(), Retry: retry})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Created) != 2 || !slices.Equal(ops, []string{"PutItem"}) {
		t.Errorf("created %d, retries %v", len(rep.Created), ops)
	}
}

// TestSyncRefusesInconsistentListing feeds SyncShards a listing that raced a
// reshard (an open child of an open parent; a proxy reopens root0): KCL
// refuses to sync on it, and so must we, unless told to ignore such
// children, which then get no lease.
func TestSyncRefusesInconsistentListing(t *testing.T) {
	t.Parallel()
	s := newScenario(t)
	proxy := newFaultProxy(t, emulator.KinesisEndpoint(t), "ListShards", "", 0)
	proxy.rewrite = func(body []byte) []byte {
		var out map[string]any
		if err := json.Unmarshal(body, &out); err != nil {
			return body
		}
		for _, sh := range out["Shards"].([]any) {
			if m := sh.(map[string]any); m["ShardId"] == s.root0 {
				delete(m["SequenceNumberRange"].(map[string]any), "EndingSequenceNumber")
			}
		}
		b, _ := json.Marshal(out)
		return b
	}
	kin := kinesis.NewFromConfig(noRetryConfig(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(proxy.URL) })
	s.putLease(t, leasecore.Lease{LeaseKey: s.root1, Checkpoint: leasecore.SequenceNumber{SequenceNumber: seqNum}})
	opt := SyncOptions{Stream: Stream{Name: s.stream}, Initial: Latest()}
	rep, err := SyncShards(context.Background(), kin, s.ddb, s.tbl(), opt)
	if err == nil || !strings.Contains(err.Error(), "open parents") || !slices.Equal(rep.Inconsistent, []string{s.left}) {
		t.Fatalf("err %v, inconsistent %v", err, rep.Inconsistent)
	}
	opt.IgnoreUnexpectedChildShards = true
	if rep, err = SyncShards(context.Background(), kin, s.ddb, s.tbl(), opt); err != nil {
		t.Fatal(err)
	}
	// root0 (reopened, no leased ancestor) gets a lease, its "open" child
	// left does not. The merge child descends from the leased root1 and
	// waits; its other parent, right, is the first missing level.
	if got := s.leases(t); !slices.Equal(keys(got), sorted(s.root0, s.root1, s.right)) {
		t.Errorf("table has %v", keys(got))
	}
}

func TestSyncRejectsBadPosition(t *testing.T) {
	for _, p := range []Position{{}, {Kind: "SHARD_END"}, {Kind: leasecore.AT_TIMESTAMP}} {
		_, err := SyncShards(context.Background(), nil, nil, Table{}, SyncOptions{Initial: p})
		if err == nil || !strings.Contains(err.Error(), "initial position") {
			t.Errorf("%+v: %v", p, err)
		}
	}
}
