package inspect

import (
	"context"
	"fmt"

	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// LineageNode is one shard of the lineage view, with its lease when the
// view was asked for an application.
type LineageNode struct {
	reshard.Node
	Lease *leasecore.Lease
	// State is the lease's state as `leases ls` derives it; empty without a
	// lease or without --app.
	State State
	// BlockedBy names the parents an idle child waits for.
	BlockedBy []reshard.Blocker
}

// Lineage is the result of ShardLineage.
type Lineage struct {
	Stream string
	Graph  *reshard.Graph
	Nodes  map[string]*LineageNode
	// Orphans are leases of shards the stream does not have (with --app).
	Orphans []reshard.Orphan
	// WithLeases is set when a lease table was read.
	WithLeases bool
	// Malformed are the lease items that do not decode, one
	// *leasecore.MalformedError each: their shards show no lease.
	Malformed []error
}

// ShardLineage lists the stream's shards as a parent→child graph and, when
// table is not empty, joins each shard with its lease.
func ShardLineage(ctx context.Context, kin reshard.KinesisAPI, ddb TableAPI, stream, table string, retry reshard.Retry) (*Lineage, error) {
	shards, err := reshard.ListShards(ctx, kin, reshard.Stream{Name: stream}, reshard.ListOptions{Retry: retry})
	if err != nil {
		return nil, err
	}
	g, err := reshard.NewGraph(shards)
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", stream, err)
	}
	res := &Lineage{Stream: stream, Graph: g, Nodes: map[string]*LineageNode{}}
	for _, n := range g.Nodes() {
		res.Nodes[n.ShardID] = &LineageNode{Node: n}
	}
	if table == "" {
		return res, nil
	}
	if _, err := ddb.DescribeTable(ctx, describe(table)); err != nil {
		return nil, err
	}
	scan, err := leasecore.ScanTable(ctx, ddb, table, leasecore.ScanOptions{})
	if err != nil {
		return nil, fmt.Errorf("scan lease table %q: %w", table, err)
	}
	res.WithLeases, res.Malformed = true, scan.Malformed
	s := streamFor(scan.Leases, stream)
	leases := reshard.LeasesOfStream(scan.Leases, s)
	rows := LeaseRows(leases, nil)
	for i := range rows {
		r := &rows[i]
		if n, ok := res.Nodes[r.ShardIDOrKey()]; ok {
			n.Lease, n.State, n.BlockedBy = r.Lease, r.State, r.BlockedBy
		}
	}
	res.Orphans = reshard.FindOrphans(g, s, leases)
	return res, nil
}

// streamFor finds the multi-stream identifier of stream among the leases;
// a single-stream table gives a Stream without ID.
func streamFor(leases []leasecore.Lease, stream string) reshard.Stream {
	if ss, err := StreamsOf(leases, stream); err == nil && len(ss) == 1 {
		return ss[0]
	}
	return reshard.Stream{Name: stream}
}
