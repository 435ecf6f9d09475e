package runner

import (
	"context"
	"errors"
	"fmt"
	"github.com/kcltool/kcltool/internal/backoff"
	"github.com/kcltool/kcltool/internal/clock"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/kcltool/kcltool/kinesisrec"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
	"github.com/kcltool/kcltool/runner/metrics"
	"github.com/kcltool/kcltool/runner/processor"
	"github.com/kcltool/kcltool/runner/retrieval"
)

// shardRun processes one shard for one holding (tenure) of its lease: wait
// for the parents, read, batch, hand to the handler, checkpoint, and at the
// end of a closed shard create the children's leases and checkpoint
// SHARD_END. Its context ends when the lease is lost; then nothing more is
// checkpointed.
type shardRun struct {
	w       *Worker
	lease   leasecore.Lease // as gained
	stream  reshard.Stream  // the stream the lease belongs to
	key     string
	shardID string
	tenure  uint64
	ctx     context.Context
	cancel  context.CancelCauseFunc
	// prev is the previous run of the same lease, which must be gone before
	// this one reads: two handlers of one shard at once would break its
	// order.
	prev <-chan struct{}
	done chan struct{}
	// halt closes when the shard must stop reading while its batch in
	// flight finishes and is checkpointed: the worker's graceful stop
	// (stopRuns) or a KCL 3.x handoff away from this worker (handoff,
	// closed by requestHandoff; handoff.go).
	halt        chan struct{}
	handoff     chan struct{}
	handoffOnce sync.Once
	stats       *metrics.ShardStats
	// backlog is this holding's records read and not checkpointed, for
	// the gauges of a stuck shard (shardrun_backlog.go).
	backlog *metrics.Backlog
	log     *slog.Logger

	// endErr is what ended the reading, readable once done is closed.
	endErr error
	// A stolen lease's first batch waits until notBefore (processHeld).
	stolenFrom string
	notBefore  time.Time

	// proc handles the batches of the current reading (read), from
	// readFrom; procReady once it is initialized.
	proc      processor.RecordProcessor
	procReady bool
	readFrom  leasecore.SequenceNumber

	// fromTrimHorizon: the next reading starts at TRIM_HORIZON, because
	// Kinesis refused the checkpoint of this closed shard as older than
	// its trim horizon; trimmed: that happened during this holding, so the
	// children are marked at SHARD_END (shardend.go, trimmedPosition).
	fromTrimHorizon, trimmed bool
}

func newShardRun(w *Worker, l leasecore.Lease, tenure uint64, prev <-chan struct{}) *shardRun {
	r := &shardRun{
		w: w, lease: l, key: l.LeaseKey, shardID: l.ShardIDOrKey(), tenure: tenure, prev: prev,
		done: make(chan struct{}), halt: make(chan struct{}), handoff: make(chan struct{}),
	}
	r.ctx, r.cancel = context.WithCancelCause(w.runCtx)
	r.stream, _ = w.streamOfLease(l)
	// Shard ids repeat across streams: in multi-stream mode the lease key
	// names the shard in metrics and logs.
	name := r.shardID
	if w.multi {
		name = r.key
	}
	r.stats = w.metrics.Shard(name)
	r.backlog = r.stats.StartTenure(w.clock.Now())
	r.log = w.log.With("shard", name)
	return r
}

func (r *shardRun) run() {
	defer close(r.done)
	defer r.cancel(nil)
	go r.watchHalt()
	if r.prev != nil {
		select {
		case <-r.prev:
		case <-r.ctx.Done():
			return
		case <-r.halt:
			return
		}
	}
	start := r.lease.Checkpoint
	if start.IsShardEnd() {
		// A finished lease held from an earlier run: nothing to read, so give
		// it up; takers leave finished leases alone until the cleanup.
		r.release()
		return
	}
	if !r.waitForParents() {
		return
	}
	// failures counts the failed readings since the last one that ended
	// for the trim horizon, which starts the backoff over.
	failures, delay := 0, time.Duration(0)
	// A wait cut short (the run ends, the worker stops) ends the run
	// without an endErr, so Retry's error is not needed.
	_ = backoff.Retry(r.ctx, r.sleepCtx, func(int) time.Duration { return delay }, func(attempt int) (bool, error) {
		if attempt > 1 {
			// Each later reading starts at the lease's checkpoint as it
			// is now: the handler may have checkpointed before failing.
			l, found, err := leasecore.GetLease(r.ctx, r.w.ddb, r.w.cfg.Table, r.key, true)
			switch {
			case err != nil:
				r.log.Warn("could not read the lease back; restarting from the last known checkpoint", "err", err)
			case !found:
				r.log.Warn("lease deleted; stopping the shard")
				return false, nil
			default:
				start = l.Checkpoint
			}
			if start.IsShardEnd() {
				return false, nil
			}
		}
		if r.fromTrimHorizon {
			r.log.Info("reading shard from TRIM_HORIZON", "checkpoint", start.SequenceNumber, "subSequence", start.SubSequenceNumber)
		} else {
			r.log.Info("reading shard", "checkpoint", start.SequenceNumber, "subSequence", start.SubSequenceNumber)
		}
		err := r.read(start)
		if err == nil || r.over(err) {
			r.endErr = err
			return false, nil
		}
		if errors.Is(err, errReadFromTrimHorizon) {
			// Not a failure: read again at once, from the lease's
			// checkpoint as it is now (it may have moved during this
			// reading), starting at TRIM_HORIZON.
			r.fromTrimHorizon, failures, delay = true, 0, 0
			return true, nil
		}
		// A checkpoint written since is readable again at itself.
		r.fromTrimHorizon = false
		failures++
		delay = processor.Backoff{}.Delay(failures, rand.Float64)
		r.log.Error("shard processing failed; restarting from the lease's checkpoint", "err", err, "in", delay)
		return true, err
	})
}

// over reports an error that ends the run for good: the lease is lost, the
// worker stops.
func (r *shardRun) over(err error) bool {
	return r.ctx.Err() != nil || errors.Is(err, processor.ErrStopped) || errors.Is(err, leasecore.ErrLeaseLost) || r.stopping()
}

func (r *shardRun) stopping() bool {
	select {
	case <-r.w.stopRuns:
		return true
	case <-r.handoff:
		return true
	default:
		return false
	}
}

// watchHalt closes halt on the worker's graceful stop or a handoff, so
// that every wait of the run has one channel to watch; it ends with the
// run.
func (r *shardRun) watchHalt() {
	select {
	case <-r.w.stopRuns:
	case <-r.handoff:
	case <-r.done:
		return
	}
	close(r.halt)
}

// sleep waits d, or fails when the run ends or the worker stops.
func (r *shardRun) sleep(d time.Duration) error {
	t := r.w.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-r.halt:
		return processor.ErrStopped
	case <-r.ctx.Done():
		return context.Cause(r.ctx)
	}
}

// sleepCtx is sleep in the form backoff.Retry takes; the context is r.ctx.
func (r *shardRun) sleepCtx(_ context.Context, d time.Duration) error { return r.sleep(d) }

// waitForParents is KCL's BlockOnParentShardTask: a child is read only once
// every parent lease is at SHARD_END or gone, so that each key's records
// stay in order across a split or merge. The worker holds the child lease
// meanwhile. A parent this worker finishes wakes the wait at once; others
// are polled.
func (r *shardRun) waitForParents() bool {
	if len(r.lease.ParentShardIDs) == 0 {
		return true
	}
	waited := false
	for {
		wake := r.w.finished.wait()
		blocking, err := reshard.ParentsDone(leasecore.WithCapacityOp(r.ctx, leasecore.OpShardSync), r.w.ddb, r.w.table, r.lease)
		switch {
		case r.ctx.Err() != nil:
			return false
		case err != nil:
			r.log.Warn("could not read the parent leases; trying again", "err", err)
		case len(blocking) == 0:
			if waited {
				r.log.Info("parent shards finished")
			}
			return true
		case !waited:
			waited = true
			r.log.Info("waiting for parent shards to reach SHARD_END", "parents", blocking)
		}
		t := r.w.clock.NewTimer(r.w.cfg.ParentPollInterval)
		select {
		case <-t.C():
		case <-wake:
			t.Stop()
		case <-r.halt:
			t.Stop()
			return false
		case <-r.ctx.Done():
			t.Stop()
			return false
		}
	}
}

// read runs the shard from start until it ends, the run is stopped, or a
// checkpoint fails. The reader (reader.go) reads ahead while the handler
// runs.
func (r *shardRun) read(start leasecore.SequenceNumber) (err error) {
	cfg := r.w.cfg
	r.proc, r.procReady, r.readFrom = r.newProcessor(), false, start
	defer func() { r.endProcessor(err) }()
	hr, found, err := r.shardRange(r.w.clock.Now())
	if err != nil {
		return fmt.Errorf("find the shard's hash range, which filters KPL aggregates: %w", err)
	}
	if !found {
		r.log.Warn("Kinesis does not list the shard, so its hash range is unknown: KPL aggregates are not filtered by range, and after a reshard sub-records routed to the wrong shard may be handled twice")
	}
	rd := r.newReader(start, hr)
	defer rd.Close()
	pages := rd.Pages()
	if r.proc.InitAtStart() {
		// While the reader reads ahead.
		if err := r.initProcessor(true); err != nil {
			return err
		}
	}

	b := &batcher{size: cfg.BatchSize, window: cfg.BatchWindow, perPage: cfg.MultiLang, emptyPages: cfg.MultiLang && cfg.MultiLangEmptyPages}
	fetching := true
	for {
		now := r.w.clock.Now()
		fetching = r.drain(pages, b, now, fetching)
		if batch, ok := b.next(now, !fetching); ok {
			// Records read ahead are not started once the shard is told
			// to stop (a graceful stop, a handoff away): only the batch in
			// flight finishes. A MultiLang child is not asked whether to
			// stop, so the run checks it here for both processors.
			if r.stopping() {
				return processor.ErrStopped
			}
			r.stats.Delivered(b.taken, r.w.clock.Now())
			if err := r.handle(batch, b.millisBehind); err != nil {
				return err
			}
			continue
		}
		if b.done() {
			return r.shardEnd(b.children)
		}
		if !fetching {
			// The fetcher only stops early when the run stops.
			if err := context.Cause(r.ctx); err != nil {
				return err
			}
			if expired := rd.Gone(); expired != nil {
				return r.finishExpired(expired)
			}
			return processor.ErrStopped
		}
		var due <-chan time.Time
		var t clock.Timer
		if d, ok := b.wait(now); ok {
			t = r.w.clock.NewTimer(d)
			due = t.C()
		}
		select {
		case p, ok := <-pages:
			if ok {
				r.received(b, p, r.w.clock.Now())
			} else {
				fetching = false
			}
		case <-due:
		case <-r.halt:
			return processor.ErrStopped
		case <-r.ctx.Done():
			return context.Cause(r.ctx)
		}
		if t != nil {
			t.Stop()
		}
	}
}

// readBytes counts a page's bytes for the lease's throughputKBps, which
// the KCL 3.x renewal writes and the leader balances on (the KCL records
// them as its data fetchers receive them, LeaseStatsRecorder); pages of
// both readers, polling and fan-out, pass here.
func (r *shardRun) readBytes(p retrieval.Page) {
	r.w.coord.RecordBytes(r.key, p.Bytes)
}

// drain adds the pages that are ready without waiting, so that a batch
// takes everything already read, up to a full batch: past that the reader
// is left blocked on the page it holds, so a handler that falls behind
// holds the reading back (a fan-out subscription, the polling reads)
// instead of pages piling up in memory.
func (r *shardRun) drain(pages <-chan retrieval.Page, b *batcher, now time.Time, fetching bool) bool {
	for fetching && !b.full() {
		select {
		case p, ok := <-pages:
			if !ok {
				return false
			}
			r.received(b, p, now)
		default:
			return true
		}
	}
	return fetching
}

func (r *shardRun) policy() *processor.Policy {
	cfg := r.w.cfg
	return &processor.Policy{
		Handler: meteredHandler{h: cfg.Handler, stats: r.stats}, Clock: r.w.clock,
		Backoff: cfg.Backoff, MaxRetries: cfg.MaxRetries, MaxRecordAge: cfg.MaxRecordAge,
		BisectOnError: cfg.BisectOnError, OnFailureDir: cfg.OnFailureDir,
		Log: r.log, Slots: r.w.slots, Retrying: r.stats.Retried,
	}
}

// handle runs one batch to completion through the record processor.
func (r *shardRun) handle(records []kinesisrec.Record, millisBehind int64) error {
	cfg := r.w.cfg
	b := processor.Batch{
		App: cfg.App, Stream: streamLabel(r.stream), ShardID: r.shardID, WorkerID: cfg.WorkerID,
		MillisBehindLatest: millisBehind, Records: records,
	}
	st, err := r.processHeld(b)
	if err != nil {
		return err
	}
	r.stats.BatchDone(records, st.Skipped)
	return nil
}

// checkpoint writes the lease's checkpoint for this holding only: once the
// lease is lost, or lost and taken again, it fails with ErrLeaseLost.
func (r *shardRun) checkpoint(ctx context.Context, at leasecore.SequenceNumber) error {
	if err := r.w.coord.CheckpointTenure(ctx, r.key, r.tenure, at); err != nil {
		return err
	}
	r.stats.Checkpointed()
	r.backlog.Checkpointed(at, r.w.clock.Now())
	return nil
}

// release gives up the lease of a finished shard, so that it holds no
// worker's share: takers skip leases at SHARD_END, and the cleanup deletes
// it once the children have started. The release outlives the shard's
// context, which the release itself ends.
func (r *shardRun) release() {
	if err := r.w.coord.Release(context.WithoutCancel(r.ctx), r.key); err != nil {
		r.log.Warn("could not release the finished lease; it expires instead", "err", err)
		return
	}
	r.log.Info("released the finished lease")
}

// meteredHandler counts every handler run, its duration and its CPU time.
type meteredHandler struct {
	h     processor.BatchHandler
	stats *metrics.ShardStats
}

func (m meteredHandler) Run(ctx context.Context, b processor.Batch) processor.Result {
	res := m.h.Run(ctx, b)
	// A handler killed on a lost lease or at shutdown still spent its CPU.
	m.stats.AddHandlerCPU(res.CPU)
	if ctx.Err() == nil {
		m.stats.HandlerRun(res.Duration, res.Outcome == processor.Succeeded)
	}
	return res
}
