package backoff

import (
	"context"
	"errors"
	"time"
)

// Retry calls op with attempt 1, 2, … until op says not to go again, and
// returns op's last error. Between attempts it waits wait(attempt) through
// sleep (the caller's clock: clock.Sleep), so that tests step through
// the waits without sleeping. A wait cut short (ctx done) ends the retries
// with op's last error joined to the wait's.
//
// What is retried, how often, and what is counted or logged on a retry stay
// in op: the loops that use Retry differ in exactly that, and share the
// attempt counting and the interruptible wait.
func Retry(ctx context.Context, sleep func(context.Context, time.Duration) error, wait func(attempt int) time.Duration,
	op func(attempt int) (again bool, err error)) error {
	for attempt := 1; ; attempt++ {
		again, err := op(attempt)
		if !again {
			return err
		}
		if serr := sleep(ctx, wait(attempt)); serr != nil {
			return errors.Join(err, serr)
		}
	}
}
