package backoff

import (
	"context"
	"errors"
	"time"
)

// Retry calls op with attempt 1, 2, … until op says not to go again, and
// returns op's last error. Between attempts it waits wait(attempt) through
// sleep (the caller's clock: clock.Sleep), so that tests step through
// the waits without sleeping. A wait of zero or less is no wait: the next
// attempt starts at once, without asking sleep (or ctx). A wait cut short
// (ctx done, a stop) ends the retries with op's last error joined to the
// wait's, unless an Option says otherwise.
//
// What is retried, how often, and what is counted or logged on a retry stay
// in op: the loops that use Retry differ in exactly that, and share the
// attempt counting and the interruptible wait. op may also stop before
// trying (a lease dropped meanwhile, the attempts spent) by returning
// again=false; work to do after a wait goes at the start of op's next call.
func Retry(ctx context.Context, sleep func(context.Context, time.Duration) error, wait func(attempt int) time.Duration,
	op func(attempt int) (again bool, err error), opts ...Option) error {
	cut := func(err, serr error) error { return errors.Join(err, serr) }
	for _, o := range opts {
		cut = o.cut
	}
	for attempt := 1; ; attempt++ {
		again, err := op(attempt)
		if !again {
			return err
		}
		d := wait(attempt)
		if d <= 0 {
			continue
		}
		if serr := sleep(ctx, d); serr != nil {
			return cut(err, serr)
		}
	}
}

// Option changes what Retry returns when a wait is cut short.
type Option struct{ cut func(err, serr error) error }

var (
	// OpErrorOnCut returns op's last error alone: the caller tells a
	// cancellation by its context.
	OpErrorOnCut = Option{cut: func(err, _ error) error { return err }}
	// WaitErrorOnCut returns the wait's error alone (the context's error, or
	// the caller's stop), as a loop does that stops for the cut, not for op.
	WaitErrorOnCut = Option{cut: func(_, serr error) error { return serr }}
)
