package runner

import (
	"context"
	"errors"
	"time"

	"github.com/kcltool/kcltool/kinesisrec"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/runner/processor"
)

// One handler per shard at a time (leasecore/deadline.go has the
// arithmetic): a shard's handler runs only while this worker's holding of
// the lease is inside its handler deadline, and a stolen lease's first
// batch waits until its old owner must have stopped.

// leaseDeadlineError is the cause a batch is stopped with when the lease's
// handler deadline passes without a renewal known to be applied.
type leaseDeadlineError struct {
	deadline time.Time
	grace    time.Duration
}

func (e *leaseDeadlineError) Error() string {
	return "lease not renewed in time: stopped at the lease's handler deadline"
}

// TermGrace asks processor.Handler.Run for SIGTERM first and SIGKILL after this
// long, instead of SIGKILL at once.
func (e *leaseDeadlineError) TermGrace() time.Duration { return e.grace }

// killGrace is how long a handler stopped at the lease deadline may take to
// exit after SIGTERM: half the stop margin, at most a second (1s at the
// defaults), so that it is gone well before any other worker can take the
// lease.
func killGrace(cfg leasecore.Config) time.Duration {
	return min(cfg.StopMargin()/2, time.Second)
}

// processHeld runs one batch through the record processor within this
// worker's holding of the lease:
//
//   - a stolen lease's first batch waits until the event's NotBefore;
//   - no handler starts past the handler deadline, and one running when it
//     passes is stopped (SIGTERM, SIGKILL after killGrace) by a timer;
//   - such a stop is no failure: nothing it did is checkpointed, it is
//     logged at warn, and once a renewal moves the deadline the records not
//     yet checkpointed run again. If the lease is lost instead, its event
//     ends the run.
func (r *shardRun) processHeld(b processor.Batch) (processor.ProcessStats, error) {
	var total processor.ProcessStats
	if err := r.initProcessor(true); err != nil {
		return total, err
	}
	var last *leasecore.SequenceNumber
	// A checkpoint of a handler run that finished in time is written even if
	// the deadline passes meanwhile: a write applied is a renewal too.
	checkpoint := processor.CheckpointFunc(func(_ context.Context, at leasecore.SequenceNumber) error {
		if err := r.checkpoint(r.ctx, at); err != nil {
			return err
		}
		last = &at
		return nil
	})
	for {
		if err := r.waitHeld(); err != nil {
			return total, err
		}
		ctx, stop := context.WithCancelCause(r.ctx)
		watched := make(chan struct{})
		go func() { defer close(watched); r.watchDeadline(ctx, stop) }()
		st, err := r.proc.ProcessRecords(ctx, r.halt, b, checkpoint)
		var stopped *leaseDeadlineError
		deadline := err != nil && r.ctx.Err() == nil && errors.As(context.Cause(ctx), &stopped)
		stop(nil)
		<-watched
		total = total.Plus(st)
		if !deadline {
			return total, err
		}
		if last != nil {
			b.Records = recordsAfter(b.Records, *last)
		}
		// The records left were handed to every run of the stopped call
		// (KCLTOOL_ATTEMPT tells the next run they may have been seen).
		b.Attempt = max(b.Attempt, 1) + st.Runs
		lease := r.w.coord.Config()
		r.log.Warn("lease deadline passed without a renewal known to be applied: stopped the handler; its batch is not checkpointed and runs again if the lease is renewed",
			"notRenewedFor", r.w.clock.Now().Sub(stopped.deadline.Add(lease.StopMargin()-lease.FailoverTime)).Round(time.Millisecond),
			"failover", lease.FailoverTime, "records", len(b.Records))
		if len(b.Records) == 0 {
			return total, nil
		}
	}
}

// watchDeadline stops the batch (ctx) when the lease's handler deadline
// passes. It is a timer, re-armed when a renewal has moved the deadline:
// the stop does not wait for the renewal loop.
func (r *shardRun) watchDeadline(ctx context.Context, stop context.CancelCauseFunc) {
	for {
		at, ok := r.w.coord.HandlerDeadline(r.key, r.tenure)
		if !ok {
			return // lost or released: its event ends the run at once
		}
		d := at.Sub(r.w.clock.Now())
		if d <= 0 {
			stop(&leaseDeadlineError{deadline: at, grace: killGrace(r.w.coord.Config())})
			return
		}
		t := r.w.clock.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// waitHeld returns once the lease's handler deadline is ahead: at once,
// unless a batch was just stopped at it, then when a renewal has been
// applied. A holding that ends meanwhile ends the run through its event.
func (r *shardRun) waitHeld() error {
	for waited := false; ; waited = true {
		at, ok := r.w.coord.HandlerDeadline(r.key, r.tenure)
		switch {
		case ok && at.After(r.w.clock.Now()):
			if waited {
				r.log.Info("lease renewed: the shard's handler runs again")
			}
			return nil
		case !ok:
			select {
			case <-r.ctx.Done():
				return context.Cause(r.ctx)
			case <-r.halt:
				return processor.ErrStopped
			}
		}
		if err := r.sleep(r.w.coord.Config().RenewInterval / 10); err != nil {
			return err
		}
	}
}

// waitStolen delays a stolen lease's first batch until its NotBefore.
func (r *shardRun) waitStolen() error {
	if r.notBefore.IsZero() {
		return nil
	}
	d := r.notBefore.Sub(r.w.clock.Now())
	r.notBefore = time.Time{}
	if d <= 0 {
		return nil
	}
	r.log.Info("stolen lease: the first batch waits until the old owner has stopped its handler",
		"from", r.stolenFrom, "wait", d.Round(time.Millisecond))
	return r.sleep(d)
}

// recordsAfter drops the records at or before a checkpoint.
func recordsAfter(records []kinesisrec.Record, cp leasecore.SequenceNumber) []kinesisrec.Record {
	for i, rec := range records {
		if leasecore.Compare(rec.Position(), cp) > 0 {
			return records[i:]
		}
	}
	return nil
}
