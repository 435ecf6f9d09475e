package reshard

import (
	"github.com/kcltool/kcltool/leasecore"
)

// Planned is one lease shard sync decided to create.
type Planned struct {
	ShardID    string
	Checkpoint string // sentinel: the initial position, or TRIM_HORIZON
}

// PlanInitialLeases plans the leases of a new application (empty lease
// table, KCL's EmptyLeaseTableSynchronizer): one per shard at the initial
// position, open or closed, each checkpointed at the initial position
// sentinel. Closed ones lead to their children through SHARD_END.
// Shards not in the graph are ignored. The result is in TopoOrder.
func PlanInitialLeases(g *Graph, atPosition []string, initial string) []Planned {
	want := map[string]bool{}
	for _, id := range atPosition {
		want[id] = true
	}
	var out []Planned
	for _, id := range g.inOrder(want) {
		out = append(out, Planned{ShardID: id, Checkpoint: initial})
	}
	return out
}

// PlanNewLeases plans the leases periodic shard sync adds to a non-empty
// table (KCL's NonEmptyLeaseTableSynchronizer). leased holds the shard ids
// that already have leases. For each open shard without a lease:
//
//   - if no ancestor has a lease or will get one, it gets a lease at the
//     initial position;
//   - otherwise it is a descendant, and leases are created only for the first
//     missing ancestor level (the parents that complete the lineage down from
//     the leased shards), at TRIM_HORIZON; with AT_TIMESTAMP they keep
//     AT_TIMESTAMP, and a co-parent that is not itself a descendant gets the
//     initial position. The open shard itself waits for SHARD_END of those
//     ancestors, whose holders create its lease.
//
// With TRIM_HORIZON or AT_TIMESTAMP an unleased root counts as "will be
// processed", so a lineage without any lease starts from its roots rather
// than from its open tip. Open shards with an open parent (an inconsistent
// listing) are skipped. The result is in TopoOrder, the order to create in.
func PlanNewLeases(g *Graph, leased map[string]bool, initial string) []Planned {
	p := &planner{g: g, leased: leased, initial: initial,
		memo: map[string]bool{}, shouldCreate: map[string]bool{}, out: map[string]string{}}
	skip := map[string]bool{}
	for _, id := range g.Inconsistent() {
		skip[id] = true
	}
	for _, id := range g.OpenShards() {
		if leased[id] || skip[id] {
			continue
		}
		if !p.descendant(id) {
			p.out[id] = initial
		}
	}
	var res []Planned
	for _, id := range g.order {
		if cp, ok := p.out[id]; ok {
			res = append(res, Planned{ShardID: id, Checkpoint: cp})
		}
	}
	return res
}

// planner is a port of KCL's checkIfDescendantAndAddNewLeasesForAncestors
// with its MemoizationContext. Keeping the structure of the Java code makes
// it checkable line by line against KCL, quirks included.
type planner struct {
	g       *Graph
	leased  map[string]bool
	initial string
	// memo caches "is a descendant of a shard that is or will be processed".
	memo map[string]bool
	// shouldCreate marks roots without a lease that TRIM_HORIZON or
	// AT_TIMESTAMP must still read.
	shouldCreate map[string]bool
	// out maps planned shard ids to their checkpoints.
	out map[string]string
}

func (p *planner) descendant(id string) bool {
	if v, ok := p.memo[id]; ok {
		return v
	}
	isDescendant := false
	switch {
	case !p.g.Has(id):
	case p.leased[id]:
		// Its own ancestors were handled when its lease was created.
		isDescendant = true
	default:
		parents := p.g.presentParents(id)
		descendantParents := map[string]bool{}
		for _, parent := range parents {
			if p.descendant(parent) || p.shouldCreate[parent] {
				isDescendant = true
				descendantParents[parent] = true
			}
		}
		if isDescendant {
			for _, parent := range parents {
				if p.leased[parent] {
					continue
				}
				_, planned := p.out[parent]
				// A parent that is not a descendant while this shard is one is
				// the oldest unleased shard of its line: it completes the hash
				// range, so it gets a lease too.
				if !planned && (p.shouldCreate[parent] || !descendantParents[parent]) {
					planned = true
				}
				if !planned {
					continue
				}
				if descendantParents[parent] && p.initial != leasecore.AT_TIMESTAMP {
					p.out[parent] = leasecore.TRIM_HORIZON
				} else {
					p.out[parent] = p.initial
				}
			}
		} else if p.initial == leasecore.TRIM_HORIZON || p.initial == leasecore.AT_TIMESTAMP {
			p.shouldCreate[id] = true
		}
	}
	p.memo[id] = isDescendant
	return isDescendant
}

// NewLease builds the lease KCL's newKCLLease builds for a listed shard: the
// given checkpoint (sub-sequence 0), parentShardId = parent + adjacent parent
// as Kinesis reports them, the hash range, counter 0, no owner, and in a
// multi-stream table the streamName and shardId attributes. ok is false if
// the shard is not in the graph.
func NewLease(g *Graph, s Stream, shardID, checkpoint string) (leasecore.Lease, bool) {
	n, ok := g.nodes[shardID]
	if !ok {
		return leasecore.Lease{}, false
	}
	return newLease(s, shardID, checkpoint, n.ParentShardIDs(), n.HashRange), true
}

func newLease(s Stream, shardID, checkpoint string, parents []string, hr leasecore.HashRange) leasecore.Lease {
	l := leasecore.Lease{
		LeaseKey:       s.LeaseKey(shardID),
		Checkpoint:     leasecore.SequenceNumber{SequenceNumber: checkpoint},
		ParentShardIDs: parents,
	}
	if hr.Start != nil && hr.End != nil {
		l.StartingHashKey, l.EndingHashKey = hr.Start.String(), hr.End.String()
	}
	if s.ID != "" {
		l.StreamName, l.ShardID = s.ID, shardID
	}
	return l
}
