package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/internal/backoff"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
	"github.com/kcltool/kcltool/runner/retrieval"
)

// errNoChildrenYet: the listing does not name a child of a shard that ended.
var errNoChildrenYet = errors.New("the shard listing names no child shard of it yet")

// childWarnEvery spaces the warnings of a shard end waiting for its
// children: the first attempt warns, then every this many.
const childWarnEvery = 10

// shardEnd finishes a closed shard whose records have all been handled:
// first the children's leases and the parent's childShardIds, then the
// SHARD_END checkpoint (reshard/doc.go says why in that order), then the
// children waiting on this worker are woken and the taker looks for them.
func (r *shardRun) shardEnd(children []types.ChildShard) error {
	if len(children) == 0 {
		// Never SHARD_END with the children unknown: they would get no
		// lease, and their data would be lost.
		var err error
		if children, err = r.awaitChildren(r.closedChildren); err != nil {
			return err
		}
	}
	return r.finish(children, nil)
}

// finishExpired finishes a shard whose data expired before it was read to
// its end: Kinesis answers ResourceNotFound for it, and retrying can never
// bring the records back. The KCL ends such a shard without children and
// deletes its lease; its shard sync then creates the children at the
// application's initial position, which with LATEST skips their data too.
// Instead the shard is finished like any other: its children get leases at
// TRIM_HORIZON, then SHARD_END is written (the lease is kept, not deleted,
// so that the children's parent check passes in KCL workers too and the
// cleanup deletes it the usual way), and both carry a mark doctor reports.
//
// A refused position (a checkpoint older than the trim horizon) is not
// that: the shard's records from the trim horizon on are still there
// (trimmedPosition).
func (r *shardRun) finishExpired(cause error) error {
	if seq, ok := refusedSeq(cause); ok {
		if err := r.trimmedPosition(cause, seq); !errors.Is(err, errNotListed) {
			return err
		}
	}
	r.log.Warn("shard data expired before it was read to its end: finishing it at SHARD_END and starting its children from TRIM_HORIZON; records not read in time are lost", "err", cause)
	children, err := r.awaitChildren(r.expiredChildren)
	if err != nil {
		return err
	}
	return r.finish(children, cause)
}

// errReadFromTrimHorizon: the run reads the shard again at once, from
// TRIM_HORIZON (shardRun.run).
var errReadFromTrimHorizon = errors.New("the shard's checkpoint is older than its trim horizon: reading it from TRIM_HORIZON")

// errNotListed: the shard whose position was refused is not listed either.
var errNotListed = errors.New("the shard is no longer listed")

// trimmedPosition handles a position seq of the shard that GetShardIterator
// refused as older than the trim horizon (InvalidArgumentException). The
// records between seq and the trim horizon are lost, but the shard's
// records from the trim horizon on are still readable, and its children
// must not start before they are handled, or each key's order breaks.
//
//   - A closed shard is marked (reshard.AttrTrimmed), the loss is logged at
//     warn, and it is read again from TRIM_HORIZON (records at or below its
//     checkpoint still dropped) to its end, where it is finished the usual
//     way, its children's leases marked (reshard.AttrParentTrimmed).
//   - An open shard is not skipped: the KCL retries it for ever (it ends a
//     shard only on ResourceNotFound), and so does kcltool, logging the fix
//     at error. The same answer comes for a sequence number of another
//     stream (a stream deleted and created again under the table's stream
//     name), where reading on from its oldest record is for its operator
//     to decide (checkpoint reset); a closed parent cannot wait that way
//     without its children waiting too.
//   - A shard no longer listed is finished as an expired one (errNotListed).
func (r *shardRun) trimmedPosition(cause error, seq string) error {
	g, err := r.listing()
	if err != nil {
		return fmt.Errorf("Kinesis refused the position %s as older than the shard's trim horizon, and listing the shards to tell whether it is closed failed: %w", seq, err)
	}
	n, listed := g.Node(r.shardID)
	switch {
	case !listed:
		return errNotListed
	case n.Open:
		return fmt.Errorf("%w: the checkpoint %s is older than the open shard's trim horizon; as the KCL does, the shard is not skipped and its reads are retried: to read it from its oldest record, stop the workers and run kcltool checkpoint reset --table %s --stream %s --shard %s --to trim-horizon --execute", errReadAgain, seq, r.w.table.Name, streamLabel(r.stream), r.key)
	}
	now := r.w.clock.Now().UTC().Format(time.RFC3339)
	ctx := leasecore.WithCapacityOp(r.ctx, leasecore.OpShardSync)
	if err := reshard.MarkExpired(ctx, r.w.ddb, r.w.table, r.key, reshard.AttrTrimmed, now+" "+seq+" "+cause.Error()); err != nil {
		return err
	}
	r.trimmed = true
	r.log.Warn("closed shard's checkpoint is older than its trim horizon (Kinesis refuses the position): the records between the checkpoint and the trim horizon are lost; reading the shard again from TRIM_HORIZON to its end, then its children",
		"checkpoint", seq, "err", cause)
	return errReadFromTrimHorizon
}

// finish writes the children's leases, then SHARD_END. expired, when set,
// is why the shard ended early; it is recorded on the parent and children.
func (r *shardRun) finish(children []types.ChildShard, expired error) error {
	err := backoff.Retry(r.ctx, r.sleepCtx, r.childWait, func(int) (bool, error) {
		err := r.writeChildren(children, expired)
		if err == nil {
			return false, nil
		}
		if r.ctx.Err() != nil {
			return false, context.Cause(r.ctx)
		}
		if errors.Is(err, reshard.ErrMergeDeferred) {
			// The other parent's lease is missing; shard sync creates it.
			r.log.Info("merge child deferred until the other parent has a lease", "err", err)
			r.w.requestSync()
		} else {
			r.log.Warn("could not create the child shards' leases; retrying", "err", err)
		}
		return true, err
	}, backoff.WaitErrorOnCut)
	if err != nil {
		return err
	}
	if err := r.shardEnded(); err != nil {
		return err
	}
	ids := make([]string, len(children))
	for i, c := range children {
		ids[i] = aws.ToString(c.ShardId)
	}
	if expired != nil {
		r.log.Warn("expired shard finished: checkpointed SHARD_END; its children start from TRIM_HORIZON", "children", ids)
	} else {
		r.log.Info("shard finished: checkpointed SHARD_END", "children", ids)
	}
	r.w.finished.notify()
	r.release()
	r.w.coord.Kick()
	return nil
}

// writeChildren creates the missing child leases and writes childShardIds,
// and for an expired shard marks the parent first and the children after.
func (r *shardRun) writeChildren(children []types.ChildShard, expired error) error {
	now := r.w.clock.Now().UTC().Format(time.RFC3339)
	ctx := leasecore.WithCapacityOp(r.ctx, leasecore.OpShardSync)
	if expired != nil {
		if err := reshard.MarkExpired(ctx, r.w.ddb, r.w.table, r.key, reshard.AttrExpired, now+" "+expired.Error()); err != nil {
			return err
		}
	}
	res, err := reshard.OnShardEnd(ctx, r.w.ddb, r.w.table, r.lease, children)
	if err != nil {
		return err
	}
	if len(res.Created) > 0 {
		keys := make([]string, len(res.Created))
		for i, l := range res.Created {
			keys[i] = l.LeaseKey
		}
		r.log.Info("created the child shards' leases", "children", keys)
	}
	attr := reshard.AttrParentExpired
	switch {
	case expired != nil:
	case r.trimmed || r.lease.Extra[reshard.AttrTrimmed] != nil:
		// Read again from its trim horizon, in this holding or an earlier
		// one: the children say so after the parent's lease is cleaned up.
		attr = reshard.AttrParentTrimmed
	default:
		return nil
	}
	for _, l := range res.Created {
		if err := reshard.MarkExpired(ctx, r.w.ddb, r.w.table, l.LeaseKey, attr, r.shardID+" "+now); err != nil {
			return err
		}
	}
	for _, key := range res.Existing {
		if err := reshard.MarkExpired(ctx, r.w.ddb, r.w.table, key, attr, r.shardID+" "+now); err != nil {
			return err
		}
	}
	return nil
}

// errReadAgain: the shard cannot be finished now; the run reads it again.
var errReadAgain = errors.New("the shard is still open")

// childLookup finds a shard's children; known says the answer is final
// (possibly no children at all).
type childLookup func() (children []types.ChildShard, known bool, err error)

// awaitChildren finds the children of a shard that ended, trying until
// they are known. SHARD_END written without them would leave the children
// without leases (finish creates them), and shard sync only creates leases
// for shards whose ancestors it can see, so their data could expire unread.
// The KCL retries a last page without ChildShards the same way
// (DataRetrievalUtil.isValidResult); the listing is a second source.
func (r *shardRun) awaitChildren(lookup childLookup) ([]types.ChildShard, error) {
	var found []types.ChildShard
	err := backoff.Retry(r.ctx, r.sleepCtx, r.childWait, func(attempt int) (bool, error) {
		children, known, err := lookup()
		if errors.Is(err, errReadAgain) {
			return false, err
		}
		if err == nil && known {
			if attempt > 1 {
				r.log.Info("child shards found in the shard listing; finishing the shard", "attempts", attempt)
			}
			found = children
			return false, nil
		}
		if err == nil {
			err = errNoChildrenYet
		}
		if attempt == 1 || attempt%childWarnEvery == 0 {
			r.log.Warn("shard ended, but its child shards are not known; SHARD_END waits until they are", "attempt", attempt, "err", err)
		}
		return true, err
	}, backoff.WaitErrorOnCut)
	if err != nil {
		return nil, err
	}
	return found, nil
}

// childWait spaces the tries to find a shard's children or create their
// leases: the fetch backoff plus a second, at most the parent poll interval.
func (r *shardRun) childWait(attempt int) time.Duration {
	return min(r.w.cfg.ParentPollInterval, retrieval.ReadBackoff(attempt)+time.Second)
}

// closedChildren: a shard read to its end is closed, so it has children;
// until the listing shows one they are unknown.
func (r *shardRun) closedChildren() ([]types.ChildShard, bool, error) {
	g, err := r.listing()
	if err != nil {
		return nil, false, err
	}
	children := childrenOf(g, r.shardID)
	return children, len(children) > 0, nil
}

// expiredChildren: a shard past the retention period is no longer listed,
// and the listed shards that name it as a parent are all its children
// (possibly none: they expired too). A shard still listed must be closed
// with its children listed; one still open is read again, since Kinesis
// does not expire open shards.
func (r *shardRun) expiredChildren() ([]types.ChildShard, bool, error) {
	g, err := r.listing()
	if err != nil {
		return nil, false, err
	}
	children := childrenOf(g, r.shardID)
	n, listed := g.Node(r.shardID)
	switch {
	case !listed:
		return children, true, nil
	case n.Open:
		return nil, false, fmt.Errorf("%w: Kinesis lists it as open although it answered ResourceNotFound", errReadAgain)
	}
	return children, len(children) > 0, nil
}

func (r *shardRun) listing() (*reshard.Graph, error) {
	shards, err := reshard.ListShards(r.ctx, r.w.kin, r.stream, reshard.ListOptions{Retry: r.w.table.Retry})
	if err != nil {
		return nil, err
	}
	g, err := reshard.NewGraph(shards)
	if err != nil {
		return nil, fmt.Errorf("the shard listing is unusable: %w", err)
	}
	return g, nil
}

func childrenOf(g *reshard.Graph, shardID string) []types.ChildShard {
	var out []types.ChildShard
	for _, n := range g.Nodes() {
		parents := n.ParentShardIDs()
		for _, p := range parents {
			if p != shardID {
				continue
			}
			out = append(out, types.ChildShard{
				ShardId: aws.String(n.ShardID), ParentShards: parents,
				HashKeyRange: &types.HashKeyRange{StartingHashKey: aws.String(n.HashRange.Start.String()), EndingHashKey: aws.String(n.HashRange.End.String())},
			})
			break
		}
	}
	return out
}

// expiryWatch passes Kinesis calls through and stops the shard's fetch when
// one answers ResourceNotFound (the shard, or its data, is gone) or when
// GetShardIterator refuses the position it was asked for (a sequence
// number older than the trim horizon). The fetch context's cause then says
// so (expiredCause).
type expiryWatch struct {
	KinesisAPI
	expired context.CancelCauseFunc
}

// expiredError is the cause of a fetch stopped by ResourceNotFound, or by
// a refused position when position is set.
type expiredError struct {
	op       string
	err      error
	position bool
	seq      string // the refused position
}

func (e *expiredError) Error() string { return e.op + ": " + e.err.Error() }
func (e *expiredError) Unwrap() error { return e.err }

func (w expiryWatch) GetShardIterator(ctx context.Context, in *kinesis.GetShardIteratorInput, opts ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error) {
	out, err := w.KinesisAPI.GetShardIterator(ctx, in, opts...)
	if refusedPosition(in, err) {
		w.expired(&expiredError{op: "GetShardIterator", err: err, position: true, seq: aws.ToString(in.StartingSequenceNumber)})
	}
	w.check("GetShardIterator", err)
	return out, err
}

// refusedPosition: Kinesis reports a StartingSequenceNumber older than the
// shard's trim horizon with InvalidArgumentException (it has no error of
// its own for it, unlike DynamoDB Streams' TrimmedDataAccessException). The
// same code answers a sequence number of another stream (a stream deleted
// and created again under its name); either way the position cannot be
// read. Only the code and the request are relied on, not the wording.
func refusedPosition(in *kinesis.GetShardIteratorInput, err error) bool {
	if err == nil || !awserr.BadSequence(err) || in.StartingSequenceNumber == nil {
		return false
	}
	return in.ShardIteratorType == types.ShardIteratorTypeAtSequenceNumber || in.ShardIteratorType == types.ShardIteratorTypeAfterSequenceNumber
}

// refusedSeq returns the position whose refusal stopped a fetch.
func refusedSeq(cause error) (string, bool) {
	var e *expiredError
	if errors.As(cause, &e) && e.position {
		return e.seq, true
	}
	return "", false
}

func (w expiryWatch) GetRecords(ctx context.Context, in *kinesis.GetRecordsInput, opts ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error) {
	out, err := w.KinesisAPI.GetRecords(ctx, in, opts...)
	w.check("GetRecords", err)
	return out, err
}

func (w expiryWatch) check(op string, err error) {
	if err != nil && awserr.NotFound(err) {
		w.expired(&expiredError{op: op, err: err})
	}
}

// expiredCause returns the ResourceNotFound that stopped a fetch, or nil.
func expiredCause(ctx context.Context) error {
	var e *expiredError
	if errors.As(context.Cause(ctx), &e) {
		return e
	}
	return nil
}
