package backoff

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// Retry numbers attempts from 1, waits wait(attempt) between them, stops
// when op says so with op's error, and joins an interrupted wait's error.
func TestRetry(t *testing.T) {
	var waits []time.Duration
	sleep := func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	wait := func(attempt int) time.Duration { return time.Duration(attempt) * time.Millisecond }
	var seen []int
	err := Retry(context.Background(), sleep, wait, func(attempt int) (bool, error) {
		seen = append(seen, attempt)
		return attempt < 3, fmt.Errorf("attempt %d", attempt)
	})
	if fmt.Sprint(seen) != "[1 2 3]" || fmt.Sprint(waits) != "[1ms 2ms]" || err == nil || err.Error() != "attempt 3" {
		t.Errorf("attempts %v, waits %v, err %v; want [1 2 3], [1ms 2ms], attempt 3", seen, waits, err)
	}

	cut := errors.New("cut")
	failed := errors.New("failed")
	err = Retry(context.Background(), func(context.Context, time.Duration) error { return cut }, wait,
		func(int) (bool, error) { return true, failed })
	if !errors.Is(err, cut) || !errors.Is(err, failed) {
		t.Errorf("interrupted wait: %v, want both errors", err)
	}
}

// A wait of zero or less starts the next attempt at once without asking
// sleep; the options pick which error a cut wait returns.
func TestRetryNoWaitAndCutOptions(t *testing.T) {
	slept := 0
	sleep := func(context.Context, time.Duration) error { slept++; return nil }
	n := 0
	_ = Retry(context.Background(), sleep, func(int) time.Duration { return 0 }, func(attempt int) (bool, error) {
		n = attempt
		return attempt < 3, nil
	})
	if n != 3 || slept != 0 {
		t.Errorf("zero waits: %d attempts, %d sleeps; want 3, 0", n, slept)
	}

	cut, failed := errors.New("cut"), errors.New("failed")
	cutSleep := func(context.Context, time.Duration) error { return cut }
	always := func(int) (bool, error) { return true, failed }
	wait := func(int) time.Duration { return time.Millisecond }
	if err := Retry(context.Background(), cutSleep, wait, always, OpErrorOnCut); err != failed {
		t.Errorf("OpErrorOnCut: %v, want %v", err, failed)
	}
	if err := Retry(context.Background(), cutSleep, wait, always, WaitErrorOnCut); err != cut {
		t.Errorf("WaitErrorOnCut: %v, want %v", err, cut)
	}
}
