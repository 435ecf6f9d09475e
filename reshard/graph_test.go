package reshard

import (
	"math/big"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/leasecore"
)

// part returns the k-th to (k+n-1)-th eighth of the hash key space.
func part(k, n int) (string, string) {
	eighth := new(big.Int).Rsh(leasecore.KeySpace, 3)
	start := new(big.Int).Mul(eighth, big.NewInt(int64(k)))
	end := new(big.Int).Mul(eighth, big.NewInt(int64(k+n)))
	end.Sub(end, big.NewInt(1))
	return start.String(), end.String()
}

// fakeShard builds a listed shard covering eighths k..k+n-1 of the key
// space; parents are "" when absent; its starting sequence number follows
// its id.
func fakeShard(id int, parent, adjacent string, k, n int, open bool) types.Shard {
	start, end := part(k, n)
	s := types.Shard{
		ShardId:      aws.String(sid(id)),
		HashKeyRange: &types.HashKeyRange{StartingHashKey: aws.String(start), EndingHashKey: aws.String(end)},
		SequenceNumberRange: &types.SequenceNumberRange{
			StartingSequenceNumber: aws.String(strconv.Itoa(100 + id)),
		},
	}
	if parent != "" {
		s.ParentShardId = aws.String(parent)
	}
	if adjacent != "" {
		s.AdjacentParentShardId = aws.String(adjacent)
	}
	if !open {
		s.SequenceNumberRange.EndingSequenceNumber = aws.String("9223372036854775807")
	}
	return s
}

func sid(i int) string {
	return "shardId-" + strings.Repeat("0", 12-len(strconv.Itoa(i))) + strconv.Itoa(i)
}

func sids(is ...int) []string {
	out := []string{}
	for _, i := range is {
		out = append(out, sid(i))
	}
	return out
}

// kclExample is the lineage drawn in KCL's NonEmptyLeaseTableSynchronizer
// javadoc:
//
//	0 1 2 3 4   5   - shards till epoch 102
//	\ / \ / |   |
//	 6   7  4   5   - shards from epoch 103 - 205
//	 \  /   |  / \
//	  8     4 9  10 - shards from epoch 206 (open)
func kclExample(t *testing.T) *Graph {
	t.Helper()
	g, err := NewGraph([]types.Shard{
		// Listed out of order on purpose: the graph must not depend on it.
		fakeShard(8, sid(6), sid(7), 0, 4, true),
		fakeShard(0, "", "", 0, 1, false),
		fakeShard(1, "", "", 1, 1, false),
		fakeShard(2, "", "", 2, 1, false),
		fakeShard(3, "", "", 3, 1, false),
		fakeShard(4, "", "", 4, 2, true),
		fakeShard(5, "", "", 6, 2, false),
		fakeShard(6, sid(0), sid(1), 0, 2, false),
		fakeShard(7, sid(2), sid(3), 2, 2, false),
		fakeShard(9, sid(5), "", 6, 1, true),
		fakeShard(10, sid(5), "", 7, 1, true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestGraphLineage(t *testing.T) {
	g := kclExample(t)
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{"parents of merge child", g.Parents(sid(8)), sids(6, 7)},
		{"parents of split child", g.Parents(sid(9)), sids(5)},
		{"parents of root", g.Parents(sid(0)), nil},
		{"parents of unknown shard", g.Parents("shardId-x"), nil},
		{"children of split parent", g.Children(sid(5)), sids(9, 10)},
		{"children of merge parent", g.Children(sid(1)), sids(6)},
		{"children of open shard", g.Children(sid(4)), nil},
		{"roots", g.Roots(), sids(0, 1, 2, 3, 4, 5)},
		{"open", g.OpenShards(), sids(4, 8, 9, 10)},
		{"ancestors", g.Ancestors(sid(8)), sids(0, 1, 2, 3, 6, 7)},
		{"descendants", g.Descendants(sid(0)), sids(6, 8)},
		{"descendants of leaf", g.Descendants(sid(10)), nil},
		{"inconsistent", g.Inconsistent(), nil},
	}
	for _, tc := range tests {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	n, _ := g.Node(sid(8))
	if !n.IsMergeChild() || n.ParentShardID != sid(6) || n.AdjacentParentShardID != sid(7) || !n.Open {
		t.Errorf("node 8 = %+v", n)
	}
	if n, _ := g.Node(sid(6)); n.Open || !n.IsMergeChild() {
		t.Errorf("node 6 = %+v, want closed merge child", n)
	}
	for id, share := range map[int]float64{8: 0.5, 4: 0.25, 9: 0.125, 0: 0.125} {
		if n, _ := g.Node(sid(id)); n.Share() != share {
			t.Errorf("share of %d = %v, want %v", id, n.Share(), share)
		}
	}
}

func TestTopoOrderIsParentsFirst(t *testing.T) {
	// Shard 4 reuses its parent 1's starting sequence number, as a merge
	// child does in kinesis-local: a sort by sequence number alone would put
	// it before its parent 3.
	shards := []types.Shard{
		fakeShard(0, "", "", 0, 4, false),
		fakeShard(1, "", "", 4, 4, false),
		fakeShard(2, sid(0), "", 0, 2, true),
		fakeShard(3, sid(0), "", 2, 2, false),
		fakeShard(4, sid(3), sid(1), 2, 6, true),
	}
	shards[4].SequenceNumberRange.StartingSequenceNumber = shards[1].SequenceNumberRange.StartingSequenceNumber
	g, err := NewGraph(shards)
	if err != nil {
		t.Fatal(err)
	}
	order := g.TopoOrder()
	if want := sids(0, 1, 2, 3, 4); !slices.Equal(order, want) {
		t.Fatalf("TopoOrder = %v, want %v", order, want)
	}
	for _, e := range g.Edges() {
		if slices.Index(order, e.Parent) > slices.Index(order, e.Child) {
			t.Errorf("child %s before parent %s", e.Child, e.Parent)
		}
	}
	if got := len(kclExample(t).Edges()); got != 8 {
		t.Errorf("kcl example has %d edges, want 8", got)
	}
}

func TestGraphRejectsBadListings(t *testing.T) {
	dup := fakeShard(0, "", "", 0, 8, true)
	cyc1, cyc2 := fakeShard(1, sid(2), "", 0, 4, true), fakeShard(2, sid(1), "", 4, 4, true)
	bad := fakeShard(3, "", "", 0, 8, true)
	bad.HashKeyRange.EndingHashKey = aws.String("340282366920938463463374607431768211456") // 2^128
	for name, shards := range map[string][]types.Shard{
		"duplicate":      {dup, dup},
		"cycle":          {cyc1, cyc2},
		"hash key > max": {bad},
		"no hash range":  {{ShardId: aws.String("s")}},
		"no shard id":    {{}},
	} {
		if _, err := NewGraph(shards); err == nil {
			t.Errorf("%s: NewGraph accepted it", name)
		}
	}
}

func TestInconsistentAndTrimmedParents(t *testing.T) {
	g, err := NewGraph([]types.Shard{
		fakeShard(0, "", "", 0, 8, true),     // open parent...
		fakeShard(1, sid(0), "", 0, 4, true), // ...of an open child: listing raced a reshard
		fakeShard(5, "shardId-trimmed", "", 4, 4, true),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Inconsistent(); !slices.Equal(got, sids(1)) {
		t.Errorf("Inconsistent = %v", got)
	}
	// A trimmed parent is not in the graph, so the child is a root, but the
	// lease still names the parent, as KCL's newKCLLease does.
	if !slices.Contains(g.Roots(), sid(5)) {
		t.Errorf("roots %v lack the shard with a trimmed parent", g.Roots())
	}
	l, ok := NewLease(g, Stream{}, sid(5), "LATEST")
	if !ok || !slices.Equal(l.ParentShardIDs, []string{"shardId-trimmed"}) {
		t.Errorf("lease = %+v", l)
	}
}

func TestCheckTiling(t *testing.T) {
	g := kclExample(t)
	tests := []struct {
		ids  []string
		want string // "" for success, else part of the error
	}{
		{sids(0, 1, 2, 3, 4, 5), ""},
		{sids(8, 4, 9, 10), ""},
		{sids(6, 7, 4, 5), ""},
		{sids(8, 4, 9), "belong to no shard"},
		{sids(0, 1, 2, 3, 4, 5, 8), "overlaps"},
		{sids(1, 2, 3, 4, 5), "belong to no shard"},
		{nil, "no shards"},
	}
	for _, tc := range tests {
		err := g.CheckTiling(tc.ids)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckTiling(%v) = %v, want %q", tc.ids, err, tc.want)
		}
	}
	if got := g.WithoutAncestors(sids(0, 1, 2, 3, 4, 6, 7, 8, 5, 9, 10)); !slices.Equal(got, sids(4, 8, 9, 10)) {
		t.Errorf("WithoutAncestors = %v", got)
	}
}

func inconsistentListing() []types.Shard {
	return []types.Shard{
		fakeShard(0, "", "", 0, 4, true),
		fakeShard(1, sid(0), "", 0, 2, true),
		fakeShard(7, "", "", 4, 4, true),
	}
}
