package runner

import (
	"context"
	"errors"

	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/runner/processor"
)

// errNoShardEndCheckpoint: the processor did not checkpoint SHARD_END at
// the shard end, so the shard is not finished; the run reads it again, as
// the KCL does.
var errNoShardEndCheckpoint = errors.New("the record processor did not checkpoint SHARD_END at the shard end")

// newProcessor is the processor of one reading of the shard.
func (r *shardRun) newProcessor() processor.RecordProcessor {
	if r.w.cfg.MultiLang {
		return r.newMultiLang()
	}
	return processor.NewBatchProcessor(r.policy())
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
	in := processor.InitializeInput{App: cfg.App, Stream: streamLabel(r.stream), ShardID: r.shardID, WorkerID: cfg.WorkerID, Checkpoint: r.readFrom}
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
	if r.ctx.Err() == nil && (errors.Is(err, processor.ErrStopped) || r.stopping()) {
		if err := r.proc.ShutdownRequested(r.ctx, processor.CheckpointFunc(r.checkpoint)); err != nil {
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
	cp := processor.CheckpointFunc(func(ctx context.Context, at leasecore.SequenceNumber) error {
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

// newMultiLang is the --multilang processor of one reading of the shard.
func (r *shardRun) newMultiLang() processor.RecordProcessor {
	cfg := r.w.cfg
	return processor.NewMultiLang(processor.MultiLang{
		Handler:   r.w.cfg.Handler,
		Timeout:   cfg.MultiLangTimeout,
		KillGrace: killGrace(r.w.coord.Config()),
		Clock:     r.w.clock,
		Log:       r.log,
		Restarted: r.stats.ChildRestart,
		Running:   r.stats.ChildRunning,
		Reaped:    r.stats.ChildReaped,
	})
}
