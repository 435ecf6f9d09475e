package reshard

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kcltool/kcltool/leasecore"
)

// CleanupAPI is what Cleanup calls on the lease table.
type CleanupAPI interface {
	leasecore.ScanAPI
	DeleteItemAPI
}

// Candidate is a finished (SHARD_END) lease considered for deletion.
type Candidate struct {
	Lease         leasecore.Lease
	ChildShardIDs []string // from the lease's childShardIds, else from the graph
	Deletable     bool
	Reason        string // why it may or may not be deleted
}

// CleanupCandidates applies KCL's LeaseCleanupManager rule to every lease of
// stream s at SHARD_END. Such a lease may be deleted only when
//
//   - its children are known and every child lease exists with a checkpoint
//     other than TRIM_HORIZON or AT_TIMESTAMP: the child has started
//     checkpointing, so nothing needs the parent any more (LATEST counts as
//     started, as in KCL); and
//   - all of its own parent leases are gone. Deleting it first would strand
//     them: their cleanup needs this lease, as their child, to exist.
//
// Children come from the lease's childShardIds, written at SHARD_END; if that
// is empty, from g (which may be nil). Leases is one consistent read of the
// table. The result is sorted by lease key.
func CleanupCandidates(leases []leasecore.Lease, g *Graph, s Stream) []Candidate {
	mine := LeasesOfStream(leases, s)
	byKey := ByKey(leases)
	var out []Candidate
	for _, l := range mine {
		if !l.Checkpoint.IsShardEnd() {
			continue
		}
		c := Candidate{Lease: l, ChildShardIDs: l.ChildShardIDs}
		if len(c.ChildShardIDs) == 0 && g != nil {
			c.ChildShardIDs = g.Children(l.ShardIDOrKey())
		}
		c.Deletable, c.Reason = deletable(l, c.ChildShardIDs, byKey)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Candidate) int { return strings.Compare(a.Lease.LeaseKey, b.Lease.LeaseKey) })
	return out
}

func deletable(l leasecore.Lease, children []string, byKey map[string]leasecore.Lease) (bool, string) {
	if len(children) == 0 {
		return false, "child shards unknown (no childShardIds, not in ListShards)"
	}
	stream := streamOf(l)
	var missing, waiting, parents []string
	for _, c := range children {
		child, ok := byKey[stream.LeaseKey(c)]
		switch {
		case !ok:
			missing = append(missing, c)
		case child.Checkpoint.SequenceNumber == leasecore.TRIM_HORIZON || child.Checkpoint.SequenceNumber == leasecore.AT_TIMESTAMP:
			waiting = append(waiting, c)
		}
	}
	for i, key := range l.ParentLeaseKeys() {
		if _, ok := byKey[key]; ok {
			parents = append(parents, l.ParentShardIDs[i])
		}
	}
	var why []string
	if len(missing) > 0 {
		why = append(why, "no lease yet for child "+strings.Join(missing, ","))
	}
	if len(waiting) > 0 {
		why = append(why, "child "+strings.Join(waiting, ",")+" has not checkpointed yet")
	}
	if len(parents) > 0 {
		why = append(why, "parent lease "+strings.Join(parents, ",")+" still exists")
	}
	if len(why) > 0 {
		return false, strings.Join(why, "; ")
	}
	return true, "all children started and no parent lease left"
}

// CleanupReport says what Cleanup did.
type CleanupReport struct {
	Deleted []string    // lease keys
	Kept    []Candidate // finished leases not (yet) deletable
	Orphans []Orphan    // only when a graph was given
}

// Cleanup reads the table once (strongly consistent) and deletes every lease
// CleanupCandidates allows, each with a DeleteItem conditional on the
// checkpoint still being SHARD_END. A lease whose condition fails is kept and
// reported. With a graph it also reports orphans; those are never deleted.
func Cleanup(ctx context.Context, api CleanupAPI, t Table, s Stream, g *Graph) (CleanupReport, error) {
	var rep CleanupReport
	scan, err := scanLeases(ctx, api, t)
	if err != nil {
		return rep, fmt.Errorf("cleanup: %w", err)
	}
	for _, c := range CleanupCandidates(scan.Leases, g, s) {
		if !c.Deletable {
			rep.Kept = append(rep.Kept, c)
			continue
		}
		deleted, err := deleteFinishedLease(ctx, api, t, c.Lease.LeaseKey)
		if err != nil {
			return rep, fmt.Errorf("cleanup: %w", err)
		}
		if !deleted {
			c.Deletable, c.Reason = false, "checkpoint changed, or lease already deleted, since it was read"
			rep.Kept = append(rep.Kept, c)
			continue
		}
		rep.Deleted = append(rep.Deleted, c.Lease.LeaseKey)
	}
	if g != nil {
		rep.Orphans = FindOrphans(g, s, scan.Leases)
	}
	return rep, nil
}
