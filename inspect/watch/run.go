package watch

import (
	"context"
	"errors"
	"time"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/internal/clock"
)

// Event is what one read found: the changes since the last good read, at
// the time the read ended. Initial marks the first read, every row ADDED.
type Event struct {
	At      time.Time
	Initial bool
	Changes []Change
}

// Options drive Run.
type Options struct {
	// Interval is the time from the start of one read to the start of the
	// next; a read that takes longer is followed by the next at once.
	Interval time.Duration
	// Clock times the reads; the real clock when nil.
	Clock clock.Clock
	// First is the first read when the caller has made it already (to
	// print it its own way), and FirstAt when it started; with FirstAt
	// zero, Run makes the first read itself.
	First   []Row
	FirstAt time.Time
	// Read reads the listing once.
	Read func(ctx context.Context) ([]Row, error)
	// Emit hears of every read with changes (and of the first, unless
	// SkipInitial); an error from it ends Run.
	Emit func(Event) error
	// SkipInitial does not emit the first read (the caller printed it).
	SkipInitial bool
	// Transient tells an error worth waiting out from one that ends the
	// watch; awserr.RetryableRead (throttles, server faults, broken
	// connections, timeouts) when nil. A missing table or a denied read
	// will not mend by itself.
	Transient func(error) bool
	// Warn hears of each transient error; the watch goes on with the last
	// good read as the base of the next comparison.
	Warn func(error)
}

// Run reads every Interval and emits what changed until ctx ends (it then
// returns ctx's error), a read fails with an error that is not transient,
// or Emit fails. A read with no change emits nothing.
func Run(ctx context.Context, o Options) error {
	if o.Interval <= 0 {
		return errors.New("watch: interval must be positive")
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock()
	}
	if o.Transient == nil {
		o.Transient = awserr.RetryableRead
	}
	prev, started := o.First, o.FirstAt
	if started.IsZero() {
		started = o.Clock.Now()
		rows, err := o.Read(ctx)
		if err != nil {
			return err
		}
		prev = rows
	}
	if !o.SkipInitial {
		if err := o.Emit(Event{At: o.Clock.Now(), Initial: true, Changes: Initial(prev)}); err != nil {
			return err
		}
	}
	for {
		if err := clock.Sleep(ctx, o.Clock, started.Add(o.Interval).Sub(o.Clock.Now())); err != nil {
			return err
		}
		started = o.Clock.Now()
		rows, err := o.Read(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if !o.Transient(err) {
				return err
			}
			if o.Warn != nil {
				o.Warn(err)
			}
			continue
		}
		if changes := Diff(prev, rows); len(changes) > 0 {
			if err := o.Emit(Event{At: o.Clock.Now(), Changes: changes}); err != nil {
				return err
			}
		}
		prev = rows
	}
}
