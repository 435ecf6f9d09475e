package reset

import (
	"context"
	"fmt"
	"github.com/kcltool/kcltool/internal/clock"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// ResetOptions says what to reset and where.
type ResetOptions struct {
	Table string
	// Stream is the stream name (in a multi-stream table, the name or the
	// full identifier). Every target but Positions needs it.
	Stream string
	// Shards narrows the reset to these shard ids or lease keys; empty
	// means every lease of the stream.
	Shards []string
	Target Target
	Clock  clock.Clock
	// Concurrency bounds the shards searched at once for a time (default 8).
	Concurrency int
	// Retry applies to ListShards.
	Retry reshard.Retry
	// Progress, when set, hears of each shard searched for a time: done of
	// total. It may be called from several goroutines at once.
	Progress func(done, total int)
}

// PlanReset reads the lease table (and, for every target but a positions
// file, the stream) and decides each lease's new checkpoint. It writes
// nothing. Bad input comes back as *InputError.
func PlanReset(ctx context.Context, ddb TableAPI, kin StreamAPI, opt ResetOptions) (*Plan, error) {
	if err := opt.Target.Validate(); err != nil {
		return nil, &InputError{Err: err}
	}
	clk := opt.Clock
	if clk == nil {
		clk = clock.RealClock()
	}
	now := clk.Now()
	t := opt.Target
	skipped := &Plan{}
	if err := refuseInvalid(skipped, t.File, t.Invalid, t.SkipInvalid); err != nil {
		return nil, err
	}
	if !t.At.IsZero() && t.At.After(now) {
		return nil, inputErrorf("%s is in the future (it is %s now): a reset can only go to a time records may have arrived at", stamp(t.At), stamp(now))
	}
	if t.Sequence != nil && len(opt.Shards) != 1 {
		return nil, inputErrorf("a sequence number belongs to one shard: give exactly one %s with %s", SettingShard, SettingToSequence)
	}
	if t.needsStream() && opt.Stream == "" {
		return nil, inputErrorf("%s is required: the reset reads the stream's shards", SettingStream)
	}
	scan, err := leasecore.ScanTable(ctx, ddb, opt.Table, leasecore.ScanOptions{ConsistentRead: true, KeepItems: true})
	if err != nil {
		return nil, fmt.Errorf("scan lease table %q: %w", opt.Table, err)
	}
	p := &Plan{Kind: "reset", Table: opt.Table, Target: t.String(), ReadAt: now, Scan: scan,
		Warnings: skipped.Warnings, Invalid: skipped.Invalid, InvalidFile: skipped.InvalidFile}
	for _, m := range scan.Malformed {
		p.warnf("malformed lease item left as is: %v", m)
	}
	rp := &resetPlanner{p: p, opt: opt, raw: itemsByKey(scan.Items), byKey: reshard.ByKey(scan.Leases), now: now}
	if !t.needsStream() {
		err = rp.positions(scan)
	} else {
		err = rp.lineage(ctx, kin, scan)
	}
	if err != nil {
		return nil, err
	}
	p.Changes = orderParentsFirst(p.Changes)
	return p, nil
}

// resetPlanner holds what the target-specific planning steps share.
type resetPlanner struct {
	p      *Plan
	opt    ResetOptions
	raw    map[string]map[string]types.AttributeValue
	byKey  map[string]leasecore.Lease
	now    time.Time
	g      *reshard.Graph
	stream reshard.Stream
	// streamLeases are all leases of the stream; scope the ones to reset.
	streamLeases, scope []leasecore.Lease
	entityType          string
}

func (rp *resetPlanner) positions(scan leasecore.ScanResult) error {
	scope, err := selectScope(scan.Leases, rp.opt.Shards, nil, scan.Malformed)
	if err != nil {
		return err
	}
	inScope := map[string]bool{}
	for _, l := range scope {
		inScope[l.LeaseKey] = true
	}
	var missing []string
	seen := map[string]bool{}
	for _, pos := range rp.opt.Target.Positions {
		l, ok := rp.byKey[pos.LeaseKey]
		if !ok {
			missing = append(missing, pos.LeaseKey)
			continue
		}
		if !inScope[pos.LeaseKey] {
			continue
		}
		seen[pos.LeaseKey] = true
		c := changeFor(l, rp.raw[l.LeaseKey])
		c.setAfter(pos.Checkpoint, "from "+rp.opt.Target.File)
		if pos.Checkpoint.SequenceNumber == leasecore.AT_TIMESTAMP && c.Action.Writes() {
			rp.p.warnf("%s: the file sets AT_TIMESTAMP; KCL workers then start at the timestamp of their own configuration, not at a time stored in the lease", pos.LeaseKey)
		}
		rp.p.Changes = append(rp.p.Changes, c)
	}
	if len(missing) > 0 {
		return inputErrorf("%s names leases the table %q does not have: %s (checkpoint import creates missing leases)", rp.opt.Target.File, rp.opt.Table, listShort(missing))
	}
	if len(rp.opt.Shards) > 0 {
		for _, l := range scope {
			if !seen[l.LeaseKey] {
				rp.p.warnf("%s is in --shard but not in %s: left as is", l.LeaseKey, rp.opt.Target.File)
			}
		}
	}
	return nil
}

// lineage plans the targets that read the stream.
func (rp *resetPlanner) lineage(ctx context.Context, kin StreamAPI, scan leasecore.ScanResult) error {
	stream, leases, err := pickStream(scan.Leases, rp.opt.Stream)
	if err != nil {
		return err
	}
	shards, err := reshard.ListShards(ctx, kin, stream, reshard.ListOptions{Retry: rp.opt.Retry})
	if err != nil {
		return err
	}
	g, err := reshard.NewGraph(shards)
	if err != nil {
		return fmt.Errorf("stream %q: %w", stream.Name, err)
	}
	scope, err := selectScope(leases, rp.opt.Shards, g, scan.Malformed)
	if err != nil {
		return err
	}
	rp.g, rp.stream, rp.streamLeases, rp.scope = g, stream, leases, scope
	rp.entityType = tableEntityType(scan.Leases)
	if len(rp.opt.Shards) > 0 {
		for _, l := range scope {
			if !g.Has(l.ShardIDOrKey()) {
				return inputErrorf("shard %s is not in stream %q (trimmed past the retention, or the stream was deleted and recreated)", l.ShardIDOrKey(), stream.Name)
			}
		}
	}
	t := rp.opt.Target
	switch {
	case t.To == leasecore.TRIM_HORIZON:
		rp.apply(func(string) resolution {
			return resolution{cp: trimHorizon, reason: "replay everything the stream still holds"}
		}, true)
	case t.To == leasecore.LATEST:
		rp.apply(func(id string) resolution {
			if n, _ := g.Node(id); !n.Open {
				return resolution{cp: leasecore.SequenceNumber{SequenceNumber: leasecore.SHARD_END}, reason: "closed shard: skip the rest of it"}
			}
			return resolution{cp: leasecore.SequenceNumber{SequenceNumber: leasecore.LATEST}, reason: "skip to the tip: the worker starts with records written after it starts reading"}
		}, false)
	case !t.At.IsZero():
		return rp.atTime(ctx, kin)
	case t.Sequence != nil:
		return rp.sequence(ctx, kin)
	}
	return nil
}

// apply sets each lease in scope to what decide says for its shard and,
// with recreate, recreates the missing ancestors that have records to
// replay.
func (rp *resetPlanner) apply(decide func(shardID string) resolution, recreate bool) {
	for _, l := range rp.scope {
		c := changeFor(l, rp.raw[l.LeaseKey])
		if !rp.g.Has(c.ShardID) {
			c.Action = ActionSkip
			c.Reason = "the stream has no shard " + c.ShardID + " (trimmed past the retention, or a deleted or recreated stream): left as is"
			rp.p.Changes = append(rp.p.Changes, c)
			continue
		}
		r := decide(c.ShardID)
		c.setAfter(r.cp, r.reason)
		rp.p.Changes = append(rp.p.Changes, c)
	}
	if recreate {
		rp.recreateAncestors(decide)
	}
	rp.warnOutOfScope(decide)
}

// atTime resolves the time per shard over the lineage of the leases in
// scope.
func (rp *resetPlanner) atTime(ctx context.Context, kin StreamAPI) error {
	at := rp.opt.Target.At
	sum, err := kin.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(rp.stream.Name)})
	if err != nil {
		return err
	}
	retention := time.Duration(aws.ToInt32(sum.StreamDescriptionSummary.RetentionPeriodHours)) * time.Hour
	if retention > 0 && at.Before(rp.now.Add(-retention)) {
		rp.p.warnf("%s is older than the stream's retention (%s): the records before it are gone, so every shard starts at TRIM_HORIZON", stamp(at), retention)
		rp.apply(func(string) resolution {
			return resolution{cp: trimHorizon, reason: "older than the retention: replay everything the stream still holds"}
		}, true)
		return nil
	}
	var ids []string
	seen := map[string]bool{}
	for _, l := range rp.scope {
		shard := l.ShardIDOrKey()
		if !rp.g.Has(shard) {
			continue
		}
		for _, id := range append(rp.g.Ancestors(shard), shard) {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	res := &timeResolver{kin: kin, stream: rp.stream.Name, g: rp.g, at: at, concurrency: rp.opt.Concurrency, progress: rp.opt.Progress}
	if res.concurrency == 0 {
		res.concurrency = 8
	}
	decided, err := res.resolve(ctx, ids)
	if err != nil {
		return err
	}
	rp.apply(func(id string) resolution { return decided[id] }, true)
	return nil
}

func (rp *resetPlanner) sequence(ctx context.Context, kin StreamAPI) error {
	l := rp.scope[0]
	seq := *rp.opt.Target.Sequence
	reason := "the given sequence number: processing resumes after it"
	if !leasecore.IsSentinel(seq.SequenceNumber) {
		if err := checkSequenceInShard(ctx, kin, rp.stream.Name, l.ShardIDOrKey(), seq.SequenceNumber); err != nil {
			return err
		}
	} else {
		reason = "the given position"
	}
	c := changeFor(l, rp.raw[l.LeaseKey])
	c.setAfter(seq, reason)
	rp.p.Changes = append(rp.p.Changes, c)
	return nil
}

// recreateAncestors plans a lease for every listed ancestor of a lease in
// scope that has no lease (cleaned up after SHARD_END) but records to
// replay. Without it the child would start at once (a missing parent lease
// counts as finished) and the parent's records would be skipped. Each is
// created as KCL's shard sync would, with the resolved checkpoint.
func (rp *resetPlanner) recreateAncestors(decide func(string) resolution) {
	need := map[string]string{} // ancestor -> a descendant in scope, for the reason
	for _, l := range rp.scope {
		shard := l.ShardIDOrKey()
		if !rp.g.Has(shard) {
			continue
		}
		for _, a := range rp.g.Ancestors(shard) {
			if _, exists := rp.raw[rp.stream.LeaseKey(a)]; exists || decide(a).isShardEnd() {
				continue
			}
			if _, ok := need[a]; !ok {
				need[a] = l.LeaseKey
			}
		}
	}
	for _, a := range rp.g.TopoOrder() {
		child, ok := need[a]
		if !ok {
			continue
		}
		r := decide(a)
		lease, _ := reshard.NewLease(rp.g, rp.stream, a, r.cp.SequenceNumber)
		lease.Checkpoint.SubSequenceNumber = r.cp.SubSequenceNumber
		lease.EntityType = rp.entityType
		if err := lease.Validate(); err != nil {
			rp.p.warnf("cannot recreate the lease of %s: %v", a, err)
			continue
		}
		rp.p.Changes = append(rp.p.Changes, Change{
			LeaseKey: lease.LeaseKey, ShardID: a, Action: ActionCreate, After: seqPtr(r.cp),
			Reason: "recreate (cleaned up after SHARD_END) so it is replayed before " + child + ": " + r.reason,
			Item:   leasecore.EncodeLease(lease),
		})
	}
}

// warnOutOfScope points at leases a --shard reset leaves inconsistent with
// the lineage: an ancestor that would be replayed but is not in scope, and
// a lease whose parent is recreated but is not itself reset.
func (rp *resetPlanner) warnOutOfScope(decide func(string) resolution) {
	if len(rp.opt.Shards) == 0 {
		return
	}
	inScope := map[string]bool{}
	for _, l := range rp.scope {
		inScope[l.LeaseKey] = true
	}
	created := map[string]bool{}
	for _, c := range rp.p.Changes {
		if c.Action == ActionCreate {
			created[c.ShardID] = true
		}
	}
	warned := map[string]bool{}
	for _, l := range rp.scope {
		if !rp.g.Has(l.ShardIDOrKey()) {
			continue
		}
		for _, a := range rp.g.Ancestors(l.ShardIDOrKey()) {
			al, ok := rp.byKey[rp.stream.LeaseKey(a)]
			if !ok || inScope[al.LeaseKey] || warned[al.LeaseKey] {
				continue
			}
			if r := decide(a); !sameCheckpoint(al.Checkpoint, r.cp) {
				warned[al.LeaseKey] = true
				rp.p.warnf("ancestor %s is not in --shard: it stays at %s where the reset of its lineage gives %s; add --shard %s to replay it too",
					a, describeCheckpoint(al.Checkpoint), describeCheckpoint(r.cp), a)
			}
		}
	}
	for _, l := range rp.streamLeases {
		if inScope[l.LeaseKey] {
			continue
		}
		if slices.ContainsFunc(l.ParentShardIDs, func(p string) bool { return created[p] }) {
			rp.p.warnf("%s is not in --shard but its parent is recreated: it will wait for the parent, then resume from its own checkpoint %s",
				l.LeaseKey, describeCheckpoint(l.Checkpoint))
		}
	}
}

// listShort joins at most ten names, so that a message about a 5,000-lease
// table stays one line.
func listShort(names []string) string {
	if len(names) > 10 {
		return fmt.Sprintf("%s and %d more", joinComma(names[:10]), len(names)-10)
	}
	return joinComma(names)
}

func joinComma(s []string) string { return strings.Join(s, ", ") }
