package reshard

import (
	"sort"

	"github.com/kcltool/kcltool/leasecore"
)

// Roots returns the shards none of whose parents is listed, in TopoOrder.
// Kinesis lists a closed shard until its last record is past retention, so a
// shard whose parents are gone started before the trim horizon: the roots
// are exactly the shards open at TRIM_HORIZON (what ListShards' broken-in-
// kinesis-local AT_TRIM_HORIZON filter should return).
func (g *Graph) Roots() []string {
	var out []string
	for _, id := range g.order {
		if len(g.presentParents(id)) == 0 {
			out = append(out, id)
		}
	}
	return out
}

// OpenShards returns the shards without an EndingSequenceNumber, in
// TopoOrder: the shards open at LATEST.
func (g *Graph) OpenShards() []string {
	var out []string
	for _, id := range g.order {
		if g.nodes[id].Open {
			out = append(out, id)
		}
	}
	return out
}

// Ancestors returns every listed ancestor of the shard (parents, their
// parents, ...), in TopoOrder.
func (g *Graph) Ancestors(shardID string) []string {
	return g.closure(shardID, g.presentParents)
}

// Descendants returns every listed descendant of the shard, in TopoOrder.
func (g *Graph) Descendants(shardID string) []string {
	return g.closure(shardID, func(id string) []string { return g.nodes[id].ChildShardIDs })
}

func (g *Graph) closure(shardID string, next func(string) []string) []string {
	if !g.Has(shardID) {
		return nil
	}
	seen := map[string]bool{}
	stack := next(shardID)
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !seen[id] {
			seen[id] = true
			stack = append(stack, next(id)...)
		}
	}
	return g.inOrder(seen)
}

// inOrder returns the members of set in TopoOrder.
func (g *Graph) inOrder(set map[string]bool) []string {
	var out []string
	for _, id := range g.order {
		if set[id] {
			out = append(out, id)
		}
	}
	return out
}

// Inconsistent returns open shards that have an open parent, sorted. Kinesis
// never shows that state; it means the listing raced a reshard, and KCL
// refuses to sync on it unless told to ignore such children.
func (g *Graph) Inconsistent() []string {
	var out []string
	for _, id := range g.order {
		if !g.nodes[id].Open {
			continue
		}
		for _, p := range g.presentParents(id) {
			if g.nodes[p].Open {
				out = append(out, id)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// CheckTiling reports whether the given shards cover the hash key space
// exactly once, without holes or overlaps.
func (g *Graph) CheckTiling(shardIDs []string) error {
	ranges := make(map[string]leasecore.HashRange, len(shardIDs))
	for _, id := range shardIDs {
		if n, ok := g.nodes[id]; ok {
			ranges[id] = n.HashRange
		}
	}
	return checkTiling(ranges)
}

// WithoutAncestors drops from shardIDs every shard that is an ancestor of
// another member: of two shards in one line, only the younger can have been
// open at a single instant (except at the very instant of the reshard).
func (g *Graph) WithoutAncestors(shardIDs []string) []string {
	set := map[string]bool{}
	for _, id := range shardIDs {
		set[id] = true
	}
	drop := map[string]bool{}
	for id := range set {
		for _, a := range g.Ancestors(id) {
			drop[a] = true
		}
	}
	keep := map[string]bool{}
	for id := range set {
		if !drop[id] {
			keep[id] = true
		}
	}
	return g.inOrder(keep)
}
