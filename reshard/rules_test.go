package reshard

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kcltool/kcltool/leasecore"
)

const seqNum = "49590338271490256608559692538361571095921575989136588898"

// lease builds a lease of shard id with a checkpoint, parents and children.
func lease(id int, cp string, parents, children []string) leasecore.Lease {
	return leasecore.Lease{LeaseKey: sid(id), Checkpoint: leasecore.SequenceNumber{SequenceNumber: cp},
		ParentShardIDs: parents, ChildShardIDs: children}
}

func TestCleanupCandidates(t *testing.T) {
	g := kclExample(t)
	tests := []struct {
		name      string
		leases    []leasecore.Lease
		deletable []string // lease keys
		reason    string   // part of the reason of the first kept candidate
	}{
		{"children started", []leasecore.Lease{
			lease(5, leasecore.SHARD_END, nil, sids(9, 10)), lease(9, seqNum, sids(5), nil), lease(10, lt, sids(5), nil),
		}, sids(5), ""},
		{"child still at TRIM_HORIZON", []leasecore.Lease{
			lease(5, leasecore.SHARD_END, nil, sids(9, 10)), lease(9, seqNum, sids(5), nil), lease(10, th, sids(5), nil),
		}, nil, "has not checkpointed"},
		{"child still at AT_TIMESTAMP", []leasecore.Lease{
			lease(5, leasecore.SHARD_END, nil, sids(9, 10)), lease(9, seqNum, sids(5), nil), lease(10, at, sids(5), nil),
		}, nil, "has not checkpointed"},
		{"child lease missing", []leasecore.Lease{
			lease(5, leasecore.SHARD_END, nil, sids(9, 10)), lease(9, seqNum, sids(5), nil),
		}, nil, "no lease yet for child " + sid(10)},
		{"not finished", []leasecore.Lease{
			lease(5, seqNum, nil, sids(9, 10)), lease(9, seqNum, sids(5), nil), lease(10, seqNum, sids(5), nil),
		}, nil, ""},
		{"own parent lease still there", []leasecore.Lease{
			lease(0, seqNum, nil, nil), lease(1, leasecore.SHARD_END, nil, sids(6)),
			lease(6, leasecore.SHARD_END, sids(0, 1), sids(8)), lease(8, seqNum, sids(6, 7), nil),
		}, sids(1), "parent lease " + sid(0) + "," + sid(1) + " still exists"},
		{"children from the graph", []leasecore.Lease{
			lease(5, leasecore.SHARD_END, nil, nil), lease(9, seqNum, sids(5), nil), lease(10, seqNum, sids(5), nil),
		}, sids(5), ""},
		{"children unknown", []leasecore.Lease{
			lease(99, leasecore.SHARD_END, nil, nil),
		}, nil, "child shards unknown"},
	}
	for _, tc := range tests {
		var deletable []string
		var reasons []string
		for _, c := range CleanupCandidates(tc.leases, g, Stream{}) {
			if c.Deletable {
				deletable = append(deletable, c.Lease.LeaseKey)
			} else {
				reasons = append(reasons, c.Reason)
			}
		}
		if !slices.Equal(deletable, tc.deletable) {
			t.Errorf("%s: deletable %v, want %v (reasons %q)", tc.name, deletable, tc.deletable, reasons)
		}
		if tc.reason != "" && (len(reasons) == 0 || !strings.Contains(reasons[0], tc.reason)) {
			t.Errorf("%s: reasons %q, want %q", tc.name, reasons, tc.reason)
		}
	}
}

func TestCleanupCandidatesMultiStream(t *testing.T) {
	s := Stream{ID: "123456789012:orders:1700000000"}
	other := Stream{ID: "123456789012:other:1700000000"}
	ms := func(st Stream, l leasecore.Lease) leasecore.Lease {
		l.LeaseKey, l.StreamName, l.ShardID = st.LeaseKey(l.LeaseKey), st.ID, l.LeaseKey
		return l
	}
	leases := []leasecore.Lease{
		ms(s, lease(5, leasecore.SHARD_END, nil, sids(9, 10))),
		ms(s, lease(9, seqNum, sids(5), nil)), ms(s, lease(10, seqNum, sids(5), nil)),
		// The same shard ids in another stream: must neither count as the
		// children nor be considered.
		ms(other, lease(5, leasecore.SHARD_END, nil, sids(9, 10))),
		ms(other, lease(9, th, sids(5), nil)),
	}
	got := CleanupCandidates(leases, kclExample(t), s)
	if len(got) != 1 || got[0].Lease.LeaseKey != s.LeaseKey(sid(5)) || !got[0].Deletable {
		t.Errorf("got %+v", got)
	}
}

func TestBlockingParents(t *testing.T) {
	child := lease(8, th, sids(6, 7), nil)
	tests := []struct {
		parents []leasecore.Lease
		want    string
	}{
		{nil, "[]"},
		{[]leasecore.Lease{lease(6, leasecore.SHARD_END, nil, nil), lease(7, leasecore.SHARD_END, nil, nil)}, "[]"},
		{[]leasecore.Lease{lease(6, seqNum, nil, nil)}, "[waiting on shardId-000000000006 (checkpoint 4959…8898, not SHARD_END)]"},
		{[]leasecore.Lease{lease(6, leasecore.SHARD_END, nil, nil), lease(7, th, nil, nil)}, "[waiting on shardId-000000000007 (checkpoint TRIM_HORIZON, not SHARD_END)]"},
	}
	for _, tc := range tests {
		if got := fmt.Sprint(BlockingParents(child, ByKey(tc.parents))); got != tc.want {
			t.Errorf("parents %v: got %s, want %s", tc.parents, got, tc.want)
		}
	}
}

func TestFindOrphans(t *testing.T) {
	g := kclExample(t)
	leases := []leasecore.Lease{
		lease(8, seqNum, sids(6, 7), nil),
		lease(98, leasecore.SHARD_END, nil, nil), // gone, finished, nobody needs it
		lease(99, seqNum, nil, nil),              // gone, unfinished, a child waits on it
		lease(100, th, sids(99), nil),            // gone too, child of 99
	}
	got := FindOrphans(g, Stream{}, leases)
	if len(got) != 3 || got[0].LeaseKey != sid(98) || got[0].Blocking ||
		got[1].LeaseKey != sid(99) || !got[1].Blocking || !slices.Equal(got[1].Children, sids(100)) ||
		got[2].LeaseKey != sid(100) || got[2].Blocking {
		t.Errorf("FindOrphans = %+v", got)
	}
}
