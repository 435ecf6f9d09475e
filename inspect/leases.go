// Package inspect holds kcltool's read-only analyses of a lease table: the
// lease listing, lag, lineage and owners, and the shard probe and lag rows
// that doctor (inspect/doctor) builds on. It never writes.
package inspect

import (
	"context"
	"fmt"
	"github.com/kcltool/kcltool/internal/clock"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// TableAPI is the part of the DynamoDB client the read-only views use.
type TableAPI interface {
	DescribeTable(ctx context.Context, params *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	Scan(ctx context.Context, params *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// State is the derived state of one lease, as `leases ls` shows it.
type State string

// The lease states, in the order they are decided: the first that applies wins.
const (
	StateShardEnd        State = "shard-end"
	StateHandoff         State = "handoff"
	StateWaitingOnParent State = "waiting-on-parent"
	StateExpired         State = "expired"
	StateOwned           State = "owned"
	StateUnassigned      State = "unassigned"
)

// LeaseRow is one lease with what kcltool derives from it. The lease is
// shared with the scan's slice, not copied: a lease is some 300 bytes, and a
// 100,000-lease listing held two copies of every one while it was built.
type LeaseRow struct {
	*leasecore.Lease
	State State
	// BlockedBy lists the parent leases that are not at SHARD_END yet.
	BlockedBy []reshard.Blocker
	// RenewalsSeen is how far the counter moved during --sample (nil without it).
	RenewalsSeen *int64
}

// Listing is the result of ListLeases.
type Listing struct {
	Table     string
	Leases    []LeaseRow
	NonLeases []leasecore.NonLeaseItem
	Malformed []error
	// Sample is the time between the two reads, zero for a single read.
	Sample time.Duration
	// OwnerRenewals is the counter movement per owner during the sample.
	OwnerRenewals map[string]int64
	// Scans and Pages count the DynamoDB reads the listing cost.
	Scans, Pages int
}

// ListOptions narrows and tunes ListLeases.
type ListOptions struct {
	Owner string // only leases held by this worker
	Shard string // only this shard id (or lease key)
	// Sample reads the table twice this far apart to tell expired leases.
	Sample time.Duration
	// Clock times the sample; the real clock when nil.
	Clock clock.Clock
}

// ListLeases reads a lease table and derives each lease's state.
func ListLeases(ctx context.Context, api TableAPI, table string, opt ListOptions) (*Listing, error) {
	desc, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return nil, err
	}
	scanOpt := leasecore.ScanOptions{Segments: leasecore.SegmentsFor(aws.ToInt64(desc.Table.TableSizeBytes)), Uncounted: true}
	first, err := leasecore.ScanTable(ctx, api, table, scanOpt)
	if err != nil {
		return nil, fmt.Errorf("scan lease table %q: %w", table, err)
	}
	res := &Listing{Table: table, Scans: 1, Pages: first.Pages}
	final := first
	var before map[string]leasecore.Lease
	if opt.Sample > 0 {
		clk := opt.Clock
		if clk == nil {
			clk = clock.RealClock()
		}
		if err := clock.Sleep(ctx, clk, opt.Sample); err != nil {
			return nil, err
		}
		second, err := leasecore.ScanTable(ctx, api, table, scanOpt)
		if err != nil {
			return nil, fmt.Errorf("scan lease table %q: %w", table, err)
		}
		res.Scans, res.Pages, res.Sample = 2, res.Pages+second.Pages, opt.Sample
		before = reshard.ByKey(first.Leases)
		final = second
	}
	res.NonLeases, res.Malformed = final.NonLeases, final.Malformed
	res.Leases = LeaseRows(final.Leases, before)
	if before != nil {
		res.OwnerRenewals = ownerRenewals(res.Leases)
	}
	res.Leases = filterRows(res.Leases, opt)
	return res, nil
}

// LeaseRows decides every lease's state. before is the first sample read,
// nil when not sampling.
func LeaseRows(leases []leasecore.Lease, before map[string]leasecore.Lease) []LeaseRow {
	parents := parentLeases(leases)
	rows := make([]LeaseRow, 0, len(leases))
	for i := range leases {
		l := &leases[i]
		row := LeaseRow{Lease: l}
		if prev, ok := before[l.LeaseKey]; ok {
			d := l.LeaseCounter - prev.LeaseCounter
			row.RenewalsSeen = &d
		}
		row.BlockedBy = reshard.BlockingParents(*l, parents)
		row.State = stateOf(row)
		rows = append(rows, row)
	}
	less := func(a, b *LeaseRow) bool {
		if a.StreamName != b.StreamName {
			return a.StreamName < b.StreamName
		}
		return a.ShardIDOrKey() < b.ShardIDOrKey()
	}
	// Scans return leases by key, which is shard order for single-stream
	// tables: check before moving 10,000 large rows around.
	if !sort.SliceIsSorted(rows, func(i, j int) bool { return less(&rows[i], &rows[j]) }) {
		sort.SliceStable(rows, func(i, j int) bool { return less(&rows[i], &rows[j]) })
	}
	return rows
}

// parentLeases indexes the leases some lease names as its parent, all that
// BlockingParents looks up: a copy of every lease by key would be the
// largest thing a 100,000-lease listing holds while it is built.
func parentLeases(leases []leasecore.Lease) map[string]leasecore.Lease {
	keys := map[string]bool{}
	for _, l := range leases {
		for _, k := range l.ParentLeaseKeys() {
			keys[k] = true
		}
	}
	m := make(map[string]leasecore.Lease, len(keys))
	for _, l := range leases {
		if keys[l.LeaseKey] {
			m[l.LeaseKey] = l
		}
	}
	return m
}

func stateOf(r LeaseRow) State {
	switch {
	case r.Checkpoint.IsShardEnd():
		return StateShardEnd
	case r.CheckpointOwner != "":
		return StateHandoff
	case len(r.BlockedBy) > 0:
		return StateWaitingOnParent
	case r.LeaseOwner != "" && r.RenewalsSeen != nil && *r.RenewalsSeen == 0:
		// KCL's own rule: a counter unchanged for the failover time is expired.
		return StateExpired
	case r.LeaseOwner != "":
		return StateOwned
	default:
		return StateUnassigned
	}
}

func ownerRenewals(rows []LeaseRow) map[string]int64 {
	m := map[string]int64{}
	for _, r := range rows {
		if r.LeaseOwner != "" && r.RenewalsSeen != nil {
			m[r.LeaseOwner] += *r.RenewalsSeen
		}
	}
	return m
}

func filterRows(rows []LeaseRow, opt ListOptions) []LeaseRow {
	if opt.Owner == "" && opt.Shard == "" {
		return rows
	}
	out := rows[:0]
	for _, r := range rows {
		if opt.Owner != "" && r.LeaseOwner != opt.Owner && r.CheckpointOwner != opt.Owner {
			continue
		}
		if opt.Shard != "" && r.ShardIDOrKey() != opt.Shard && r.LeaseKey != opt.Shard {
			continue
		}
		out = append(out, r)
	}
	return out
}

// Summary counts what the listing holds, for the line under the table.
type Summary struct {
	Leases, Workers, Unassigned, ShardEnd, Expired, NonLeases, Malformed int
}

// Summarize counts the listing's leases by state and distinct owners.
func (l *Listing) Summarize() Summary {
	s := Summary{Leases: len(l.Leases), NonLeases: len(l.NonLeases), Malformed: len(l.Malformed)}
	owners := map[string]bool{}
	for _, r := range l.Leases {
		if r.LeaseOwner != "" {
			owners[r.LeaseOwner] = true
		}
		switch r.State {
		case StateUnassigned:
			s.Unassigned++
		case StateShardEnd:
			s.ShardEnd++
		case StateExpired:
			s.Expired++
		}
	}
	s.Workers = len(owners)
	return s
}

func describe(table string) *dynamodb.DescribeTableInput {
	return &dynamodb.DescribeTableInput{TableName: aws.String(table)}
}
