package reshard

import (
	"slices"
	"strings"

	"github.com/kcltool/kcltool/leasecore"
)

// Orphan is a lease whose shard ListShards no longer returns: trimmed past
// retention, or the lease of a deleted or recreated stream. KCL removes such
// leases only when a worker processing one gets ResourceNotFound
// (docs/kcl-compat.md, SHARD_END, lineage and cleanup), so this package reports
// them and never deletes them: a child whose parentShardId names the orphan
// waits on it until it is at SHARD_END or gone.
type Orphan struct {
	LeaseKey   string
	ShardID    string
	Owner      string
	Checkpoint leasecore.SequenceNumber
	// Children are the lease keys of leases whose parentShardId names it.
	Children []string
	// Blocking is set when Children exist and the orphan is not at
	// SHARD_END: those children cannot start until someone drains or removes
	// it.
	Blocking bool
}

// LeasesOfStream returns the leases that belong to stream s: in a
// multi-stream table those whose key or streamName carries s.ID; in a
// single-stream table (s.ID empty) all of them.
func LeasesOfStream(leases []leasecore.Lease, s Stream) []leasecore.Lease {
	if s.ID == "" {
		return leases
	}
	var out []leasecore.Lease
	for _, l := range leases {
		if streamOf(l).ID == s.ID {
			out = append(out, l)
		}
	}
	return out
}

// FindOrphans returns the leases of stream s whose shards are not in g,
// sorted by lease key.
func FindOrphans(g *Graph, s Stream, leases []leasecore.Lease) []Orphan {
	mine := LeasesOfStream(leases, s)
	var out []Orphan
	for _, l := range mine {
		shard := l.ShardIDOrKey()
		if g.Has(shard) {
			continue
		}
		o := Orphan{LeaseKey: l.LeaseKey, ShardID: shard, Owner: l.LeaseOwner, Checkpoint: l.Checkpoint}
		for _, c := range mine {
			if slices.Contains(c.ParentLeaseKeys(), l.LeaseKey) {
				o.Children = append(o.Children, c.LeaseKey)
			}
		}
		slices.Sort(o.Children)
		o.Blocking = len(o.Children) > 0 && !l.Checkpoint.IsShardEnd()
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b Orphan) int { return strings.Compare(a.LeaseKey, b.LeaseKey) })
	return out
}
