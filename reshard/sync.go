package reshard

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/kcltool/kcltool/internal/backoff"
	"github.com/kcltool/kcltool/leasecore"
)

// SyncAPI is what SyncShards calls on the lease table.
type SyncAPI interface {
	leasecore.ScanAPI
	PutItemAPI
}

// SyncOptions configures SyncShards.
type SyncOptions struct {
	Stream  Stream
	Initial Position
	// IgnoreUnexpectedChildShards skips open shards with an open parent
	// instead of failing the sync (KCL's option of the same name, default
	// false).
	IgnoreUnexpectedChildShards bool
	// PageSize is the ListShards page size (service default when 0).
	PageSize int32
	// HashRangeAttempts and HashRangeDelay bound the re-listing when the
	// shards at the initial position do not tile the key space (KCL: 3
	// attempts, 1 s apart).
	HashRangeAttempts int
	HashRangeDelay    time.Duration
	// Retry applies to ListShards and to the lease table.
	Retry Retry
	// Listed, when set, is a recent read of the whole lease table (the
	// lease taker's scan) used instead of scanning it again. It is trusted
	// only to find that nothing is missing: when it lacks any lease the
	// sync would create, or every lease of the stream, the table is
	// scanned with consistent reads and the plan made again from that, so
	// a stale list never creates a lease the table would not have.
	Listed *leasecore.ScanResult
}

// SyncReport says what SyncShards found and did.
type SyncReport struct {
	// EmptyTable is set when the table had no lease of this stream, so the
	// leases were created at the initial position.
	EmptyTable bool
	Graph      *Graph
	Leases     []leasecore.Lease // the stream's leases before the sync
	Created    []leasecore.Lease // in creation order
	Existing   []string          // planned lease keys another worker created first
	// Inconsistent are open shards with an open parent, skipped when
	// IgnoreUnexpectedChildShards is set.
	Inconsistent []string
	Orphans      []Orphan
	// Malformed are the lease items of the table that do not decode, one
	// *leasecore.MalformedError each: nobody reads their shards.
	Malformed []error
}

// SyncShards is KCL's shard sync (HierarchicalShardSyncer): it lists the
// stream's shards, reads the lease table, and creates the missing leases in
// parents-first order, each with a create-if-not-exists so that concurrent
// syncs by several workers are harmless.
//
// On a table without leases of this stream it creates one lease per shard
// at the initial position (PlanInitialLeases):
//   - TRIM_HORIZON: the shards open at the trim horizon, i.e. the roots of the
//     full listing, closed or not. They are computed here rather than with
//     ShardFilter AT_TRIM_HORIZON, which kinesis-local gets wrong.
//   - LATEST: the open shards.
//   - AT_TIMESTAMP: ListShards with ShardFilter AT_TIMESTAMP; if the answer
//     overlaps itself, shards that are ancestors of other returned shards are
//     dropped: they had closed by then. (kinesis-local's filter works at
//     whole seconds: it also returns shards that closed within the second,
//     and every shard for a time before the stream existed.)
//
// The chosen shards must tile the hash key space; otherwise the listing is
// retried, as KCL does, since it raced a reshard.
//
// On a non-empty table it applies PlanNewLeases. Either way it reports
// orphans (leases of shards no longer listed) and deletes nothing.
func SyncShards(ctx context.Context, kin KinesisAPI, ddb SyncAPI, t Table, opt SyncOptions) (SyncReport, error) {
	var rep SyncReport
	if err := opt.Initial.Validate(); err != nil {
		return rep, err
	}
	list := ListOptions{PageSize: opt.PageSize, Retry: opt.Retry}
	shards, err := ListShards(ctx, kin, opt.Stream, list)
	if err != nil {
		return rep, err
	}
	if rep.Graph, err = NewGraph(shards); err != nil {
		return rep, fmt.Errorf("shards of %s: %w", streamLabel(opt.Stream), err)
	}
	var scan leasecore.ScanResult
	if opt.Listed != nil {
		mine := LeasesOfStream(opt.Listed.Leases, opt.Stream)
		if len(mine) > 0 && len(PlanNewLeases(rep.Graph, leasedShards(mine), opt.Initial.Kind)) == 0 {
			scan = *opt.Listed
		} else {
			opt.Listed = nil // something to create: read the table as it is now
		}
	}
	if opt.Listed == nil {
		if scan, err = scanLeases(ctx, ddb, t); err != nil {
			return rep, fmt.Errorf("read lease table %s: %w", t.Name, err)
		}
	}
	rep.Leases = LeasesOfStream(scan.Leases, opt.Stream)
	rep.Malformed = scan.Malformed
	rep.EmptyTable = len(rep.Leases) == 0

	rep.Inconsistent = rep.Graph.Inconsistent()
	if len(rep.Inconsistent) > 0 && !opt.IgnoreUnexpectedChildShards {
		return rep, fmt.Errorf("open shards %v have open parents: the shard listing raced a reshard; retry later", rep.Inconsistent)
	}
	var plan []Planned
	if rep.EmptyTable {
		if plan, err = initialPlan(ctx, kin, opt, &rep.Graph); err != nil {
			return rep, err
		}
	} else {
		plan = PlanNewLeases(rep.Graph, leasedShards(rep.Leases), opt.Initial.Kind)
	}

	for _, p := range plan {
		l, _ := NewLease(rep.Graph, opt.Stream, p.ShardID, p.Checkpoint)
		created, err := createLease(ctx, ddb, t, l)
		if err != nil {
			return rep, err
		}
		if created {
			rep.Created = append(rep.Created, l)
		} else {
			rep.Existing = append(rep.Existing, l.LeaseKey)
		}
	}
	rep.Orphans = FindOrphans(rep.Graph, opt.Stream, scan.Leases)
	return rep, nil
}

func leasedShards(leases []leasecore.Lease) map[string]bool {
	leased := make(map[string]bool, len(leases))
	for _, l := range leases {
		leased[l.ShardIDOrKey()] = true
	}
	return leased
}

// initialPlan picks the shards of a new application and checks that they
// tile the key space, re-listing (and replacing *g) when they do not.
func initialPlan(ctx context.Context, kin KinesisAPI, opt SyncOptions, g **Graph) ([]Planned, error) {
	attempts := opt.HashRangeAttempts
	if attempts <= 0 {
		attempts = 3
	}
	delay := opt.HashRangeDelay
	if delay <= 0 {
		delay = time.Second
	}
	var plan []Planned
	err := backoff.Retry(ctx, opt.Retry.sleep, func(int) time.Duration { return delay }, func(attempt int) (bool, error) {
		if attempt > 1 {
			shards, err := ListShards(ctx, kin, opt.Stream, ListOptions{PageSize: opt.PageSize, Retry: opt.Retry})
			if err != nil {
				return false, err
			}
			if *g, err = NewGraph(shards); err != nil {
				return false, err
			}
		}
		ids, err := shardsAtPosition(ctx, kin, opt, *g)
		if err != nil {
			return false, err
		}
		tileErr := (*g).CheckTiling(ids)
		if tileErr == nil {
			plan = PlanInitialLeases(*g, ids, opt.Initial.Kind)
			return false, nil
		}
		if attempt >= attempts {
			return false, fmt.Errorf("shards of %s at %s do not cover the hash key space after %d listings: %w",
				streamLabel(opt.Stream), opt.Initial.Kind, attempts, tileErr)
		}
		return true, tileErr
	}, backoff.WaitErrorOnCut)
	if err != nil {
		return nil, err
	}
	return plan, nil
}

func shardsAtPosition(ctx context.Context, kin KinesisAPI, opt SyncOptions, g *Graph) ([]string, error) {
	switch opt.Initial.Kind {
	case leasecore.TRIM_HORIZON:
		return g.Roots(), nil
	case leasecore.LATEST:
		return g.OpenShards(), nil
	}
	filter := &types.ShardFilter{Type: types.ShardFilterTypeAtTimestamp, Timestamp: aws.Time(opt.Initial.Timestamp)}
	shards, err := ListShards(ctx, kin, opt.Stream, ListOptions{Filter: filter, PageSize: opt.PageSize, Retry: opt.Retry})
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, s := range shards {
		ids = append(ids, aws.ToString(s.ShardId))
	}
	if g.CheckTiling(ids) == nil {
		return ids, nil
	}
	return g.WithoutAncestors(ids), nil
}
