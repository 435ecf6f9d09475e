package processor

import (
	"context"

	"github.com/kcltool/kcltool/leasecore"
)

// RecordProcessor is the handler protocol runner's shard run talks to,
// mirroring the KCL's ShardRecordProcessor: one per reading of a shard (a
// read that fails restarts from the lease's checkpoint with a new one). The
// per-batch process (NewBatchProcessor: Policy over Handler) and a
// MultiLang child (NewMultiLang) implement it.
//
// The one-handler-per-shard rules stay with runner's shard run: a stolen
// lease's Initialize and first batch wait until the old owner must have stopped,
// and ProcessRecords' context is cancelled at the lease's handler deadline
// (its cause then has a TermGrace method) as when the lease is lost.
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
	// InitAtStart: Initialize is called as the reading starts (once the
	// lease is held and its parents are done), not at the first batch.
	InitAtStart() bool
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

// InitAtStart: nothing to start, so a stolen lease's wait stays with the
// first batch, and a shard end without one does not wait.
func (batchProcessor) InitAtStart() bool { return false }

// NewBatchProcessor is the processor of one reading of a shard for --exec
// and --: policy runs each batch.
func NewBatchProcessor(policy *Policy) RecordProcessor { return batchProcessor{policy: policy} }
