package reshard

import (
	"container/heap"
	"fmt"
	"math/big"
	"slices"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/leasecore"
)

// Node is one shard of the lineage graph.
type Node struct {
	ShardID string
	// ParentShardID and AdjacentParentShardID are as Kinesis reports them,
	// even when that parent has been trimmed and is no longer in the graph:
	// lease parentShardId attributes carry them regardless.
	ParentShardID         string
	AdjacentParentShardID string
	// ChildShardIDs is derived from the children's parent fields, sorted.
	ChildShardIDs          []string
	HashRange              leasecore.HashRange
	StartingSequenceNumber string
	// Open means Kinesis reports no EndingSequenceNumber. The ending number of
	// a closed shard is never compared with checkpoints: some implementations
	// (kinesis-local) report a bogus constant there.
	Open bool
}

// ParentShardIDs returns the parent and, after a merge, the adjacent parent:
// what KCL writes into a lease's parentShardId.
func (n Node) ParentShardIDs() []string {
	var ids []string
	if n.ParentShardID != "" {
		ids = append(ids, n.ParentShardID)
	}
	if n.AdjacentParentShardID != "" {
		ids = append(ids, n.AdjacentParentShardID)
	}
	return ids
}

// IsMergeChild reports whether the shard was created by a merge.
func (n Node) IsMergeChild() bool { return n.AdjacentParentShardID != "" }

// Share is the shard's fraction of the hash key space, 0..1.
func (n Node) Share() float64 { return n.HashRange.Share() }

// Graph is the lineage of a stream's shards as one ListShards call saw them.
// It is immutable once built and safe for concurrent reads.
type Graph struct {
	nodes map[string]*Node
	// order is parents-first (topological), ties broken by starting sequence
	// number and then shard id, which is KCL's lease creation order. KCL sorts
	// by sequence number alone, which is parents-first on real Kinesis; the
	// explicit topological sort keeps it so where a merge child reuses a
	// parent's starting sequence number (kinesis-local does). Creating a child
	// lease before its parent's would let a crash in between start the child
	// early: a missing parent lease counts as finished.
	order []string
}

// NewGraph builds the lineage graph from a full shard list. It fails on
// shards without an id or with an unparsable hash range, and on duplicates.
func NewGraph(shards []types.Shard) (*Graph, error) {
	g := &Graph{nodes: make(map[string]*Node, len(shards))}
	seq := make(map[string]*big.Int, len(shards))
	for _, s := range shards {
		id := aws.ToString(s.ShardId)
		if id == "" {
			return nil, fmt.Errorf("shard without ShardId")
		}
		if _, dup := g.nodes[id]; dup {
			return nil, fmt.Errorf("shard %s listed twice", id)
		}
		if s.HashKeyRange == nil {
			return nil, fmt.Errorf("shard %s has no HashKeyRange", id)
		}
		hr, err := leasecore.ParseHashRange(aws.ToString(s.HashKeyRange.StartingHashKey), aws.ToString(s.HashKeyRange.EndingHashKey))
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", id, err)
		}
		n := &Node{
			ShardID:               id,
			ParentShardID:         aws.ToString(s.ParentShardId),
			AdjacentParentShardID: aws.ToString(s.AdjacentParentShardId),
			HashRange:             hr,
			Open:                  true,
		}
		if r := s.SequenceNumberRange; r != nil {
			n.StartingSequenceNumber = aws.ToString(r.StartingSequenceNumber)
			n.Open = r.EndingSequenceNumber == nil
		}
		seq[id], _ = new(big.Int).SetString(n.StartingSequenceNumber, 10)
		g.nodes[id] = n
		g.order = append(g.order, id)
	}
	for _, id := range g.order {
		for _, p := range g.presentParents(id) {
			g.nodes[p].ChildShardIDs = append(g.nodes[p].ChildShardIDs, id)
		}
	}
	for _, n := range g.nodes {
		sort.Strings(n.ChildShardIDs)
	}
	sort.SliceStable(g.order, func(i, j int) bool {
		a, b := seq[g.order[i]], seq[g.order[j]]
		if a != nil && b != nil {
			if c := a.Cmp(b); c != 0 {
				return c < 0
			}
		}
		return g.order[i] < g.order[j]
	})
	order, err := g.topological()
	if err != nil {
		return nil, err
	}
	g.order = order
	return g, nil
}

// topological reorders g.order parents-first, keeping the current order
// among shards that are ready at the same time (Kahn's algorithm over a heap
// of ranks).
func (g *Graph) topological() ([]string, error) {
	rank := make(map[string]int, len(g.order))
	for i, id := range g.order {
		rank[id] = i
	}
	waiting := make(map[string]int, len(g.order))
	ready := &rankHeap{}
	for i, id := range g.order {
		waiting[id] = len(g.presentParents(id))
		if waiting[id] == 0 {
			heap.Push(ready, i)
		}
	}
	out := make([]string, 0, len(g.order))
	for ready.Len() > 0 {
		id := g.order[heap.Pop(ready).(int)]
		out = append(out, id)
		for _, c := range g.nodes[id].ChildShardIDs {
			if waiting[c]--; waiting[c] == 0 {
				heap.Push(ready, rank[c])
			}
		}
	}
	if len(out) != len(g.order) {
		return nil, fmt.Errorf("shard lineage has a cycle")
	}
	return out, nil
}

type rankHeap []int

func (h rankHeap) Len() int           { return len(h) }
func (h rankHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h rankHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *rankHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *rankHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Len is the number of shards in the graph.
func (g *Graph) Len() int { return len(g.nodes) }

// Has reports whether Kinesis listed the shard.
func (g *Graph) Has(shardID string) bool {
	_, ok := g.nodes[shardID]
	return ok
}

// Node returns a copy of the shard's node.
func (g *Graph) Node(shardID string) (Node, bool) {
	n, ok := g.nodes[shardID]
	if !ok {
		return Node{}, false
	}
	c := *n
	c.ChildShardIDs = slices.Clone(n.ChildShardIDs)
	return c, true
}

// Nodes returns copies of all nodes, parents first (see TopoOrder).
func (g *Graph) Nodes() []Node {
	out := make([]Node, 0, len(g.order))
	for _, id := range g.order {
		n, _ := g.Node(id)
		out = append(out, n)
	}
	return out
}

// TopoOrder returns all shard ids parents-first; shards whose parents are
// done at the same time are ordered by starting sequence number, then id.
// This is the order leases are created in.
func (g *Graph) TopoOrder() []string { return slices.Clone(g.order) }

// Parents returns the shard's parent and adjacent parent as Kinesis reports
// them (also when trimmed from the graph); nil for an unknown shard.
func (g *Graph) Parents(shardID string) []string {
	n, ok := g.nodes[shardID]
	if !ok {
		return nil
	}
	return n.ParentShardIDs()
}

// Children returns the shard's children, sorted.
func (g *Graph) Children(shardID string) []string {
	if n, ok := g.nodes[shardID]; ok {
		return slices.Clone(n.ChildShardIDs)
	}
	return nil
}

// presentParents are the parents still in the graph, the only ones KCL's
// shard sync walks (getParentShardIds).
func (g *Graph) presentParents(shardID string) []string {
	var out []string
	for _, p := range g.nodes[shardID].ParentShardIDs() {
		if _, ok := g.nodes[p]; ok {
			out = append(out, p)
		}
	}
	return out
}

// Edge is one parent→child link.
type Edge struct {
	Parent, Child string
	// Adjacent marks the link from a merge child's adjacent parent.
	Adjacent bool
}

// Edges returns every parent→child link between listed shards, children in
// TopoOrder, for tree and Graphviz renderings.
func (g *Graph) Edges() []Edge {
	var out []Edge
	for _, id := range g.order {
		n := g.nodes[id]
		if g.Has(n.ParentShardID) {
			out = append(out, Edge{Parent: n.ParentShardID, Child: id})
		}
		if g.Has(n.AdjacentParentShardID) {
			out = append(out, Edge{Parent: n.AdjacentParentShardID, Child: id, Adjacent: true})
		}
	}
	return out
}
