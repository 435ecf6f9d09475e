package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/kinesisrec"
	"github.com/kcltool/kcltool/leasecore"
)

// UnlimitedRetries as Policy.MaxRetries retries a failing batch until it
// succeeds or its records are older than MaxRecordAge: KCL's behaviour,
// the default of --max-retries.
const UnlimitedRetries = -1

// ErrStopped is returned by Process when its stop channel closed before
// the batch was done.
var ErrStopped = errors.New("stopped before the batch was done")

// BatchHandler runs one batch; *Handler is the real one.
type BatchHandler interface {
	Run(ctx context.Context, b Batch) Result
}

// CheckpointFunc records that every record up to and including at is done.
// The caller owns the lease and writes the checkpoint; an error (such as a
// lost lease) stops Process.
type CheckpointFunc func(ctx context.Context, at leasecore.SequenceNumber) error

// Policy hands the batches of one shard to a handler, in order, one at a
// time, and decides what happens when the handler fails: retry with
// backoff, isolate poison records by bisecting, give up on records and write
// them to a directory. It never writes a lease: it reports the positions
// that may be checkpointed.
type Policy struct {
	Handler BatchHandler
	// Clock times backoff and record age; nil means the real clock.
	Clock   clock.Clock
	Backoff Backoff
	// MaxRetries is how many times a failing batch is retried before the
	// worker gives up on it; UnlimitedRetries never gives up.
	MaxRetries int
	// MaxRecordAge gives up on a failing batch once its oldest record is
	// older than this; zero means no limit.
	MaxRecordAge time.Duration
	// BisectOnError splits a failing batch of several records in halves and
	// runs them in order, recursively, until the record that fails is
	// alone; halves that succeed are checkpointed on the way. Retries and
	// giving up then apply to the smallest failing part.
	BisectOnError bool
	// OnFailureDir receives a JSON file for every set of records given up
	// on, after which the shard is checkpointed past them. Without it the
	// worker cannot skip records: the shard keeps retrying them (every
	// Backoff.Max at most) and logs why.
	OnFailureDir string
	// Log receives one record per failure, bisection and give-up, the
	// handlers' stdout text and their stderr line by line; nil discards.
	// The caller puts the shard on it. Record data is never logged.
	Log *slog.Logger
	// Rand returns numbers in [0, 1) for jitter; nil means math/rand/v2.
	Rand func() float64
	// Slots, if set, is taken for each handler run, so that shards share a
	// bound on concurrent handlers; nil means no bound.
	Slots *Slots
	// Retrying, if set, is called as each run of records already handed
	// to a handler starts (KCLTOOL_ATTEMPT above 1: after a failure, a
	// bisection, or a stop at the lease deadline), so that a batch that
	// keeps failing is counted while it does, not once it is finally done.
	Retrying func()
}

// ProcessStats counts what one Process call did, for metrics.
type ProcessStats struct {
	Runs        int           // handler runs
	Failures    int           // runs that did not fully succeed
	Bisections  int           // batches split in two
	Skipped     int           // records given up on and written to OnFailureDir
	Checkpoints int           // checkpoint calls
	HandlerTime time.Duration // time spent in handlers
}

// Plus adds up the stats of two passes over a batch.
func (s ProcessStats) Plus(o ProcessStats) ProcessStats {
	return ProcessStats{
		Runs: s.Runs + o.Runs, Failures: s.Failures + o.Failures, Bisections: s.Bisections + o.Bisections,
		Skipped: s.Skipped + o.Skipped, Checkpoints: s.Checkpoints + o.Checkpoints, HandlerTime: s.HandlerTime + o.HandlerTime,
	}
}

// span is a run of consecutive records still to be handled, and how many
// times they have been handed to a handler already (all records of a span
// share that history: spans only ever shrink or split).
type span struct {
	records []kinesisrec.Record
	handed  int
}

// Process runs b.Records through the handler and returns once every record
// has either succeeded or been given up on, each step reported through
// checkpoint in order. Records of b must come from one shard, in order.
//
// Closing stop is a graceful stop: a running handler finishes and its
// success is checkpointed, but nothing new starts, and Process returns
// ErrStopped. Cancelling ctx kills a running handler and returns at once
// without another checkpoint, as for a lost lease.
//
// Its steps: attempt (run the handler once), settled (what may be
// checkpointed), decide (bisect, give up or retry), giveUp.
func (p *Policy) Process(ctx context.Context, stop <-chan struct{}, b Batch, checkpoint CheckpointFunc) (ProcessStats, error) {
	var st ProcessStats
	log := p.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Spans still to do; the last one is next, so a bisection pushes the
	// right half before the left.
	work := []span{{records: b.Records, handed: max(b.Attempt-1, 0)}}
	for len(work) > 0 {
		s := work[len(work)-1]
		work = work[:len(work)-1]
		failures := 0 // consecutive failed runs of s
		for len(s.records) > 0 {
			run := b
			run.Records, run.Attempt = s.records, s.handed+1
			res, batchAttrs, err := p.attempt(ctx, stop, run, log)
			if err != nil {
				return st, err
			}
			s.handed++
			st.Runs++
			st.HandlerTime += res.Duration
			if err := context.Cause(ctx); err != nil {
				// The handler was killed, whatever it printed; nothing it did
				// may be checkpointed.
				return st, err
			}
			if done := settled(res, len(s.records)); done > 0 {
				st.Checkpoints++
				if err := checkpoint(ctx, s.records[done-1].Position()); err != nil {
					return st, fmt.Errorf("checkpoint: %w", err)
				}
				s.records = s.records[done:]
				// What is left is a new, smaller batch whose first record has
				// failed once.
				failures = 0
			}
			if res.Outcome == Succeeded {
				break
			}
			st.Failures++
			failures++
			// Its stderr is logged by attempt, line by line.
			log.Warn("handler failed", append(batchAttrs[:len(batchAttrs):len(batchAttrs)],
				"records", len(run.Records), "outcome", res.Outcome.String(), "exit_code", res.ExitCode,
				"timed_out", res.TimedOut, "error", errString(res.Err))...)
			next, reason := p.decide(failures, s.records)
			if next == stepBisect {
				mid := len(s.records) / 2
				work = append(work, span{s.records[mid:], s.handed}, span{s.records[:mid], s.handed})
				st.Bisections++
				log.Info("bisecting failed batch", "left", mid, "right", len(s.records)-mid)
				break
			}
			if next == stepGiveUp {
				gave := run
				gave.Records, gave.Attempt = s.records, s.handed
				skipped, err := p.giveUp(ctx, gave, res, reason, checkpoint, log, &st)
				if err != nil {
					return st, err
				}
				if skipped {
					break
				}
			}
			if err := p.sleep(ctx, stop, p.Backoff.Delay(failures, p.rand())); err != nil {
				return st, err
			}
		}
	}
	return st, nil
}

// attempt runs the handler once on run, within a slot, and logs what it
// printed. An error means it did not start: the run was stopped or the
// lease lost. The attributes returned name the run in further logs.
func (p *Policy) attempt(ctx context.Context, stop <-chan struct{}, run Batch, log *slog.Logger) (Result, []any, error) {
	if err := p.stopped(ctx, stop); err != nil {
		return Result{}, nil, err
	}
	release, err := p.Slots.acquire(ctx, stop)
	if err != nil {
		return Result{}, nil, err
	}
	if run.Attempt > 1 && p.Retrying != nil {
		p.Retrying()
	}
	res := p.Handler.Run(ctx, run)
	release()
	// The shard is already on the log (the shard runner's With).
	batchAttrs := []any{"attempt", run.Attempt,
		"first_sequence", run.Records[0].SequenceNumber, "last_sequence", run.Records[len(run.Records)-1].SequenceNumber}
	if res.Output != "" {
		log.Info("handler output", append(batchAttrs[:len(batchAttrs):len(batchAttrs)], "output", res.Output)...)
	}
	res.Stderr.Log(log, batchAttrs...)
	return res, batchAttrs, nil
}

// settled is how many of the n records handed to a run may be
// checkpointed after its result: all on success, those before the first
// failed item on a partial failure, none otherwise.
func settled(res Result, n int) int {
	switch res.Outcome {
	case Succeeded:
		return n
	case PartiallyFailed:
		return min(res.FailedFrom, n)
	}
	return 0
}

// step is what follows a failed run.
type step int

const (
	stepRetry step = iota
	stepBisect
	stepGiveUp
)

// decide picks the step after the failures-th consecutive failed run of
// records: bisect a span of several when BisectOnError, give up once
// giveUpReason says so (the reason is returned), retry otherwise.
func (p *Policy) decide(failures int, records []kinesisrec.Record) (step, string) {
	if p.BisectOnError && len(records) > 1 {
		return stepBisect, ""
	}
	if reason := p.giveUpReason(failures, records); reason != "" {
		return stepGiveUp, reason
	}
	return stepRetry, ""
}

// giveUp writes the records of gave to the failure directory and
// checkpoints past them; skipped says it did. Without a directory, or when
// the file cannot be written, the records are retried, and the log says
// why.
func (p *Policy) giveUp(ctx context.Context, gave Batch, res Result, reason string, checkpoint CheckpointFunc, log *slog.Logger, st *ProcessStats) (bool, error) {
	records := gave.Records
	if p.OnFailureDir == "" {
		log.Error("cannot skip failing records without --on-failure; the shard retries them until they succeed",
			"reason", reason, "first_sequence", records[0].SequenceNumber, "records", len(records))
		return false, nil
	}
	f := newFailureFile(gave, res, reason, p.clock().Now())
	path, err := writeFailureFile(p.OnFailureDir, f)
	if err != nil {
		log.Error("cannot write the failure file; retrying the records instead of skipping them", "error", err.Error())
		return false, nil
	}
	st.Checkpoints++
	if err := checkpoint(ctx, records[len(records)-1].Position()); err != nil {
		return false, fmt.Errorf("checkpoint: %w", err)
	}
	st.Skipped += len(records)
	log.Error("gave up on records; wrote them to the failure directory and checkpointed past them",
		"reason", reason, "file", path, "records", len(records),
		"first_sequence", records[0].SequenceNumber, "last_sequence", records[len(records)-1].SequenceNumber)
	return true, nil
}

// giveUpReason says why the failing records may be given up on, or "".
func (p *Policy) giveUpReason(failures int, records []kinesisrec.Record) string {
	if p.MaxRetries >= 0 && failures > p.MaxRetries {
		return fmt.Sprintf("failed %d times (max retries %d)", failures, p.MaxRetries)
	}
	if p.MaxRecordAge > 0 {
		var oldest time.Time
		for _, r := range records {
			if t := r.ApproximateArrivalTimestamp; !t.IsZero() && (oldest.IsZero() || t.Before(oldest)) {
				oldest = t
			}
		}
		if age := p.clock().Now().Sub(oldest); !oldest.IsZero() && age > p.MaxRecordAge {
			return fmt.Sprintf("oldest record is %s old (max record age %s)", age.Round(time.Millisecond), p.MaxRecordAge)
		}
	}
	return ""
}

func (p *Policy) stopped(ctx context.Context, stop <-chan struct{}) error {
	if err := context.Cause(ctx); err != nil {
		return err
	}
	select {
	case <-stop:
		return ErrStopped
	default:
		return nil
	}
}

func (p *Policy) sleep(ctx context.Context, stop <-chan struct{}, d time.Duration) error {
	t := p.clock().NewTimer(d)
	defer t.Stop()
	// A stop that came while the timer was set wins over the timer.
	if err := p.stopped(ctx, stop); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-stop:
		return ErrStopped
	case <-t.C():
		return nil
	}
}

func (p *Policy) clock() clock.Clock {
	if p.Clock == nil {
		return clock.RealClock()
	}
	return p.Clock
}

func (p *Policy) rand() func() float64 {
	if p.Rand == nil {
		return rand.Float64
	}
	return p.Rand
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
