package reshard

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// scanCounter counts the Scan calls SyncShards makes.
type scanCounter struct {
	SyncAPI
	scans atomic.Int32
}

func (c *scanCounter) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	c.scans.Add(1)
	return c.SyncAPI.Scan(ctx, in, optFns...)
}

// TestSyncFromListedLeases: a shard sync given a recent list of the table
// (the runner passes the lease taker's scan) reads nothing when the list
// shows every lease it needs, and reads the table again before it creates
// anything, so a stale list neither creates a lease another worker created
// since nor misses one that is really missing.
func TestSyncFromListedLeases(t *testing.T) {
	t.Parallel()
	s := newScenario(t)
	ctx := context.Background()
	seq := leasecore.SequenceNumber{SequenceNumber: seqNum}
	listOf := func(t *testing.T, ts *scenario, keep ...string) *leasecore.ScanResult {
		res, err := leasecore.ScanTable(ctx, s.ddb, ts.table, leasecore.ScanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var kept []leasecore.Lease
		for _, l := range res.Leases {
			for _, k := range keep {
				if l.LeaseKey == k {
					kept = append(kept, l)
				}
			}
		}
		res.Leases = kept
		res.Malformed = []error{errors.New("a malformed item the list saw")}
		return &res
	}
	tests := []struct {
		name      string
		table     func() []string // leased shards in the table
		listed    func() []string // those in the list
		scans     int32
		createdTo []string
	}{
		{"list shows every lease", func() []string { return []string{s.left, s.merged} }, func() []string { return []string{s.left, s.merged} }, 0, nil},
		{"stale list lacks a lease created since", func() []string { return []string{s.left, s.merged} }, func() []string { return []string{s.left} }, 1, nil},
		{"lease missing in list and table", func() []string { return []string{s.root0} }, func() []string { return []string{s.root0} }, 1, []string{s.root1}},
		{"list without the stream-s leases", func() []string { return []string{s.left, s.merged} }, func() []string { return nil }, 1, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := *s
			ts.table = emulator.Name(t, "t")
			emulator.CreateLeaseTable(t, s.ddb, ts.table)
			for _, id := range tc.table() {
				ts.putLease(t, leasecore.Lease{LeaseKey: id, LeaseOwner: "w1", LeaseCounter: 7, Checkpoint: seq})
			}
			listed := listOf(t, &ts, tc.listed()...)
			api := &scanCounter{SyncAPI: s.ddb}
			rep, err := SyncShards(ctx, s.kin, api, ts.tbl(), SyncOptions{Stream: Stream{Name: s.stream}, Initial: Latest(), Listed: listed})
			if err != nil {
				t.Fatal(err)
			}
			if got := api.scans.Load(); got != tc.scans {
				t.Errorf("%d Scan calls, want %d", got, tc.scans)
			}
			var created []string
			for _, l := range rep.Created {
				created = append(created, l.LeaseKey)
			}
			if len(created) != len(tc.createdTo) || len(created) > 0 && created[0] != tc.createdTo[0] {
				t.Errorf("created %v, want %v", created, tc.createdTo)
			}
			if got := ts.leases(t); len(got) != len(tc.table())+len(tc.createdTo) {
				t.Errorf("table has %v", keys(got))
			}
			if tc.scans == 0 && len(rep.Malformed) != 1 {
				t.Errorf("malformed items of the list not reported: %v", rep.Malformed)
			}
		})
	}
}
