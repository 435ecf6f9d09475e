package runner

import (
	"context"
	"errors"

	"github.com/kcltool/kcltool/leasecore"
)

// RecordProcessor is the handler protocol a shardRun talks to, mirroring
// the KCL's ShardRecordProcessor: one per reading of a shard (a read that
// fails restarts from the lease's checkpoint with a new one). The
// per-batch process (batchProcessor: Policy over Handler) implements it
// today; a MultiLang child will.
//
// The one-handler-per-shard rules stay with the shardRun: a stolen lease's
// Initialize and first batch wait until the old owner must have stopped,
// and ProcessRecords' context is cancelled at the lease's handler deadline
// (its cause is then a *leaseDeadlineError) as when the lease is lost.
type RecordProcessor interface {
	// Initialize is called once, before the first batch or the shard end.
	Initialize(ctx context.Context, in InitializeInput) error
	// ProcessRecords delivers one batch of the shard, in order, and returns
	// once every record is done or given up on, having reported through cp,
	// in order, what may be checkpointed. Closing stop is a graceful stop:
	// what runs may finish, nothing new starts, and it returns ErrStopped.
	// Cancelling ctx stops it at once; context.Cause says why.
	ProcessRecords(ctx context.Context, stop <-chan struct{}, b Batch, cp Checkpointer) (ProcessStats, error)
	// LeaseLost: this holding of the lease is over (lost, or the read
	// failed and restarts with a new processor); nothing more may be
	// checkpointed.
	LeaseLost(ctx context.Context)
	// ShardEnded: every record of the closed shard was processed and its
	// children's leases exist. The shard is finished only once the
	// processor has checkpointed SHARD_END through cp.
	ShardEnded(ctx context.Context, cp Checkpointer) error
	// ShutdownRequested: the worker is stopping gracefully; the processor
	// may checkpoint through cp before the lease is released.
	ShutdownRequested(ctx context.Context, cp Checkpointer) error
	// initAtStart: Initialize is called as the reading starts (once the
	// lease is held and its parents are done), not at the first batch.
	initAtStart() bool
}

// InitializeInput is what a processor learns about its shard.
type InitializeInput struct {
	App, Stream, ShardID, WorkerID string
	// Checkpoint is the lease's checkpoint the reading starts at.
	Checkpoint leasecore.SequenceNumber
}

// Checkpointer writes the lease's checkpoint for the processor's holding
// only: once the lease is lost it fails with leasecore.ErrLeaseLost.
type Checkpointer interface {
	Checkpoint(ctx context.Context, at leasecore.SequenceNumber) error
}

// Checkpoint makes a CheckpointFunc a Checkpointer.
func (f CheckpointFunc) Checkpoint(ctx context.Context, at leasecore.SequenceNumber) error {
	return f(ctx, at)
}

// batchProcessor is the RecordProcessor of --exec and --: one process per
// batch, run through the failure policy (retries, bisection, give-up). It
// holds nothing between batches, so the lifecycle calls are no-ops, except
// that a shard end is checkpointed at once.
type batchProcessor struct {
	policy *Policy
}

func (batchProcessor) Initialize(context.Context, InitializeInput) error { return nil }

func (p batchProcessor) ProcessRecords(ctx context.Context, stop <-chan struct{}, b Batch, cp Checkpointer) (ProcessStats, error) {
	return p.policy.Process(ctx, stop, b, cp.Checkpoint)
}

// LeaseLost: a running handler was already killed by the cancelled context.
func (batchProcessor) LeaseLost(context.Context) {}

func (batchProcessor) ShardEnded(ctx context.Context, cp Checkpointer) error {
	return cp.Checkpoint(ctx, leasecore.SequenceNumber{SequenceNumber: leasecore.SHARD_END})
}

func (batchProcessor) ShutdownRequested(context.Context, Checkpointer) error { return nil }

// initAtStart: nothing to start, so a stolen lease's wait stays with the
// first batch, and a shard end without one does not wait.
func (batchProcessor) initAtStart() bool { return false }

// errNoShardEndCheckpoint: the processor did not checkpoint SHARD_END at
// the shard end, so the shard is not finished; the run reads it again, as
// the KCL does.
var errNoShardEndCheckpoint = errors.New("the record processor did not checkpoint SHARD_END at the shard end")

// newProcessor is the processor of one reading of the shard.
func (r *shardRun) newProcessor() RecordProcessor {
	if r.w.cfg.MultiLang {
		return r.newMultiLang()
	}
	return batchProcessor{policy: r.policy()}
}

// initProcessor calls Initialize once per processor: as the reading starts
// (initAtStart), else before the first batch or the shard end. waitSteal
// applies a stolen lease's wait first; the shard end of a holding that
// handled no batch does not wait, as before the processor existed.
func (r *shardRun) initProcessor(waitSteal bool) error {
	if r.procReady {
		return nil
	}
	if waitSteal {
		if err := r.waitStolen(); err != nil {
			return err
		}
	}
	cfg := r.w.cfg
	in := InitializeInput{App: cfg.App, Stream: streamLabel(r.stream), ShardID: r.shardID, WorkerID: cfg.WorkerID, Checkpoint: r.readFrom}
	if err := r.proc.Initialize(r.ctx, in); err != nil {
		return err
	}
	r.procReady = true
	return nil
}

// endProcessor tells the processor how its reading ended: a graceful stop
// of the worker is a shutdown request, anything else but the shard's end
// (lease lost, a failed read that restarts) a lost lease.
func (r *shardRun) endProcessor(err error) {
	if !r.procReady || err == nil {
		return
	}
	if r.ctx.Err() == nil && (errors.Is(err, ErrStopped) || r.stopping()) {
		if err := r.proc.ShutdownRequested(r.ctx, CheckpointFunc(r.checkpoint)); err != nil {
			r.log.Warn("record processor's shutdown failed", "err", err)
		}
		return
	}
	r.proc.LeaseLost(r.ctx)
}

// shardEnded has the processor checkpoint SHARD_END.
func (r *shardRun) shardEnded() error {
	if err := r.initProcessor(false); err != nil {
		return err
	}
	ended := false
	cp := CheckpointFunc(func(ctx context.Context, at leasecore.SequenceNumber) error {
		if err := r.checkpoint(ctx, at); err != nil {
			return err
		}
		ended = ended || at.IsShardEnd()
		return nil
	})
	if err := r.proc.ShardEnded(r.ctx, cp); err != nil {
		return err
	}
	if !ended {
		return errNoShardEndCheckpoint
	}
	return nil
}
