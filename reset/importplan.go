package reset

import (
	"context"
	"fmt"
	"github.com/kcltool/kcltool/internal/clock"
	"sort"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/leasecore"
)

// ImportOptions says what to import where.
type ImportOptions struct {
	// Table is the lease table written to.
	Table  string
	Export *Export
	// File names the export, for reasons.
	File string
	// Shards narrows the import to these shard ids or lease keys.
	Shards []string
	// PositionsOnly copies checkpoints rather than whole items: the import
	// goes into another application's table (--to-app), whose owners,
	// counters and handoffs are its own.
	PositionsOnly bool
	// Prune deletes leases of the table that are not in the export, so
	// that an import undoes a reset that recreated leases. A lease whose
	// key the file names anywhere (in an entry that cannot be used, or one
	// marked malformed) is never deleted.
	Prune bool
	// SkipInvalid applies the usable entries of a file that has entries
	// that cannot be used (Export.Invalid); without it such a file is
	// refused whole.
	SkipInvalid bool
	// NoTable says the table does not exist yet (a dry run of an import
	// that would create it): the plan is made against an empty table.
	NoTable bool
	Clock   clock.Clock
}

// PlanImport reads the table and decides, lease by lease, what restoring
// the export means: restore every attribute of a lease that differs
// (leaseCounter excepted: it only ever increases), create a lease that is
// missing, leave equal ones alone, and with Prune delete leases the export
// does not have. Non-lease items (KCL 3.x leader lock, migration state,
// worker metrics) belong to the running application and are never written;
// nor is an item that does not decode as a lease.
func PlanImport(ctx context.Context, ddb TableAPI, opt ImportOptions) (*Plan, error) {
	clk := opt.Clock
	if clk == nil {
		clk = clock.RealClock()
	}
	if opt.Prune && opt.PositionsOnly {
		return nil, inputErrorf("%s deletes leases of the application's own table; it does not go with %s", SettingPrune, SettingToApp)
	}
	p := &Plan{Kind: "import", Table: opt.Table, Target: "export " + opt.File}
	if err := refuseInvalid(p, opt.File, opt.Export.Invalid, opt.SkipInvalid); err != nil {
		return nil, err
	}
	if unnamed := opt.Export.UnnamedInvalid(); opt.Prune && len(unnamed) > 0 {
		return nil, inputErrorf("%s: %s cannot tell which leases these entries are, so it could delete one the file has: %s; fix them, or import without %s",
			opt.File, SettingPrune, listEntries(unnamed), SettingPrune)
	}
	now := clk.Now()
	var scan leasecore.ScanResult
	if !opt.NoTable {
		var err error
		scan, err = leasecore.ScanTable(ctx, ddb, opt.Table, leasecore.ScanOptions{ConsistentRead: true, KeepItems: true})
		if err != nil {
			return nil, fmt.Errorf("scan lease table %q: %w", opt.Table, err)
		}
	}
	p.ReadAt, p.Scan = now, scan
	raw := itemsByKey(scan.Items)
	exported := map[string]ExportItem{}
	var leases []leasecore.Lease
	nonLeases, malformed := 0, 0
	for _, it := range opt.Export.Items {
		switch it.Kind {
		case KindLease:
			exported[it.LeaseKey] = it
			leases = append(leases, it.Lease)
		case KindNonLease:
			nonLeases++
		default:
			malformed++
			p.warnf("%s is recorded malformed in the export (%s): carried as it is, not written", it.LeaseKey, it.Error)
		}
	}
	if nonLeases > 0 {
		p.warnf("%d non-lease items in the export (KCL 3.x leader lock, migration state, worker metrics) are not imported: they belong to the running application", nonLeases)
	}
	// The scope is matched against the export's leases and the table's.
	scopeKeys, unknown := importScope(opt.Shards, leases, scan.Leases)
	switch {
	case len(unknown) > 0 && !opt.Prune:
		return nil, inputErrorf("unknown shard %s: neither the export nor the lease table has a lease for it", joinComma(unknown))
	case len(unknown) > 0:
		// The undo of a reset names the leases it recreated, with --prune
		// to delete them again; a worker may have finished one and cleaned
		// it up since. Nothing is left to restore or delete for it.
		p.warnf("no lease for %s in the export or the table: nothing to restore or delete (a lease a reset recreated and a worker has since finished and deleted has none)", joinComma(unknown))
	}
	keys := make([]string, 0, len(exported))
	for k := range exported {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if scopeKeys != nil && !scopeKeys[k] {
			continue
		}
		c, err := planImportLease(exported[k], raw[k], opt)
		if err != nil {
			p.warnf("%v", err)
			continue
		}
		p.Changes = append(p.Changes, c)
	}
	for _, l := range scan.Leases {
		if _, ok := exported[l.LeaseKey]; ok || (scopeKeys != nil && !scopeKeys[l.LeaseKey]) {
			continue
		}
		c := changeFor(l, raw[l.LeaseKey])
		switch {
		case opt.Export.Names(l.LeaseKey):
			// In the file but not restorable from it (recorded malformed,
			// or skipped): --prune deletes only what the export lacks.
			c.Action, c.After, c.Reason = ActionNone, seqPtr(l.Checkpoint), "its entry in the export is not restored (malformed or skipped): kept"
		case opt.Prune:
			c.Action, c.Reason = ActionDelete, "not in the export"
			if c.InHandoff() {
				c.Reason += "; in a KCL 3.x handoff (" + c.Lease.CheckpointOwner + " → " + c.Lease.LeaseOwner + "): applying needs --force"
			}
		default:
			c.Action, c.After, c.Reason = ActionNone, seqPtr(l.Checkpoint), "not in the export: kept (--prune deletes it)"
		}
		p.Changes = append(p.Changes, c)
	}
	p.Changes = orderParentsFirst(p.Changes)
	return p, nil
}

// importScope returns the lease keys --shard selects among the exported
// and current leases (nil: everything), and the names that select nothing.
func importScope(shards []string, exported, current []leasecore.Lease) (map[string]bool, []string) {
	if len(shards) == 0 {
		return nil, nil
	}
	keys := map[string]bool{}
	var unknown []string
	for _, s := range shards {
		found := false
		for _, l := range append(append([]leasecore.Lease{}, exported...), current...) {
			if l.ShardIDOrKey() == s || l.LeaseKey == s {
				keys[l.LeaseKey], found = true, true
			}
		}
		if !found {
			unknown = append(unknown, s)
		}
	}
	return keys, unknown
}

func planImportLease(x ExportItem, cur map[string]types.AttributeValue, opt ImportOptions) (Change, error) {
	after := *x.Checkpoint
	c := Change{LeaseKey: x.LeaseKey, ShardID: x.Lease.ShardIDOrKey(), After: seqPtr(after)}
	if cur != nil {
		l, err := leasecore.DecodeLease(cur)
		if err != nil {
			return Change{}, fmt.Errorf("%s: the item in the table is not a lease KCL reads (%v): not written", x.LeaseKey, err)
		}
		c = changeFor(l, cur)
		c.After = seqPtr(after)
	}
	switch {
	case cur == nil && opt.PositionsOnly:
		c.Action, c.Reason = ActionCreate, "copy the position from "+opt.File+" (new lease: no owner, counter 0)"
		c.Item = leasecore.EncodeLease(positionOnly(x.Lease))
	case cur == nil:
		c.Action, c.Reason = ActionCreate, "restore the missing lease from "+opt.File
		c.Item = withCounter(x.Item, x.Lease.LeaseCounter+1)
	case opt.PositionsOnly:
		c.setAfter(after, "copy the position from "+opt.File)
	default:
		diff := diffAttributes(x.Item, cur, leasecore.AttrLeaseCounter)
		if len(diff) == 0 {
			c.Action, c.Reason = ActionNone, "as in the export"
			return c, nil
		}
		c.Action, c.Item = ActionRestore, x.Item
		c.Reason = "restore " + listShort(diff) + " from " + opt.File
		if c.InHandoff() {
			c.Reason += "; in a KCL 3.x handoff (" + c.Lease.CheckpointOwner + " → " + c.Lease.LeaseOwner + "): applying needs --force"
		}
	}
	return c, nil
}

// positionOnly is the lease another application starts with at the same
// position: the lineage and the checkpoint, nobody's ownership.
func positionOnly(l leasecore.Lease) leasecore.Lease {
	n := l
	n.LeaseOwner, n.CheckpointOwner = "", ""
	n.LeaseCounter, n.OwnerSwitchesSinceCheckpoint = 0, 0
	n.PendingCheckpoint, n.PendingCheckpointState = nil, nil
	n.ThroughputKBps, n.Extra = nil, nil
	return n
}

// withCounter returns a copy of item with leaseCounter set to n.
func withCounter(item map[string]types.AttributeValue, n int64) map[string]types.AttributeValue {
	out := make(map[string]types.AttributeValue, len(item))
	for k, v := range item {
		out[k] = v
	}
	out[leasecore.AttrLeaseCounter] = &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
	return out
}
