package watch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
)

// script is a Read that returns one answer per call, then blocks.
type script struct {
	mu      sync.Mutex
	answers []func() ([]Row, error)
	calls   int
}

func (s *script) read(ctx context.Context) ([]Row, error) {
	s.mu.Lock()
	if s.calls < len(s.answers) {
		f := s.answers[s.calls]
		s.calls++
		s.mu.Unlock()
		return f()
	}
	s.mu.Unlock()
	<-ctx.Done()
	return nil, ctx.Err()
}

func rows(r ...Row) func() ([]Row, error)   { return func() ([]Row, error) { return r, nil } }
func fails(err error) func() ([]Row, error) { return func() ([]Row, error) { return nil, err } }

var errThrottled = errors.New("throttled")

// run starts Run on a fake clock and returns its events as they come and
// its result; step advances the clock one interval once Run waits on it.
func run(t *testing.T, s *script, o Options) (events chan Event, done chan error, step func()) {
	t.Helper()
	clk := clocktest.New(time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	events, done = make(chan Event, 16), make(chan error, 1)
	o.Clock, o.Read = clk, s.read
	if o.Interval == 0 {
		o.Interval = 10 * time.Second
	}
	o.Emit = func(e Event) error { events <- e; return nil }
	go func() { done <- Run(ctx, o) }()
	step = func() {
		t.Helper()
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		defer wcancel()
		if err := clk.WaitTimers(wctx, 1); err != nil {
			t.Fatalf("Run never waited for the next read: %v", err)
		}
		clk.Advance(o.Interval)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("Run: %v", err)
		}
	})
	return events, done, step
}

func next(t *testing.T, events chan Event) Event {
	t.Helper()
	select {
	case e := <-events:
		return e
	case <-time.After(30 * time.Second):
		t.Fatal("no event")
		return Event{}
	}
}

func TestRunEmitsOnlyChanges(t *testing.T) {
	a1, a2 := row("a", "owner", "w1"), row("a", "owner", "w2")
	s := &script{answers: []func() ([]Row, error){rows(a1), rows(a1), rows(a2)}}
	events, _, step := run(t, s, Options{})
	first := next(t, events)
	if !first.Initial || len(first.Changes) != 1 || first.Changes[0].Type != Added {
		t.Fatalf("first event = %+v, want the initial ADDED", first)
	}
	step() // the same read: nothing
	step()
	e := next(t, events)
	if e.Initial || len(e.Changes) != 1 || e.Changes[0].Type != Modified || e.Changes[0].Changed[0].To != "w2" {
		t.Fatalf("event = %+v, want one MODIFIED owner w1 -> w2", e)
	}
	if want := first.At.Add(20 * time.Second); !e.At.Equal(want) {
		t.Fatalf("event at %v, want %v (two intervals after the first)", e.At, want)
	}
}

func TestRunSkipsInitialAndWaitsOutTransientErrors(t *testing.T) {
	a1, a2 := row("a", "owner", "w1"), row("a", "owner", "w2")
	s := &script{answers: []func() ([]Row, error){fails(errThrottled), rows(a2)}}
	var warned []error
	var mu sync.Mutex
	events, _, step := run(t, s, Options{
		First: []Row{a1}, FirstAt: time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC), SkipInitial: true,
		Transient: func(err error) bool { return errors.Is(err, errThrottled) },
		Warn:      func(err error) { mu.Lock(); warned = append(warned, err); mu.Unlock() },
	})
	step() // throttled: warned, the base stays a1
	step()
	e := next(t, events)
	if e.Initial || len(e.Changes) != 1 || e.Changes[0].Changed[0].From != "w1" {
		t.Fatalf("event = %+v, want MODIFIED from w1 (the last good read)", e)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warned) != 1 {
		t.Fatalf("warned %v, want the one throttle", warned)
	}
}

func TestRunEndsOnFatalError(t *testing.T) {
	gone := fmt.Errorf("table gone")
	s := &script{answers: []func() ([]Row, error){rows(row("a")), fails(gone)}}
	events, done, step := run(t, s, Options{Transient: func(error) bool { return false }})
	next(t, events)
	step()
	select {
	case err := <-done:
		if !errors.Is(err, gone) {
			t.Fatalf("Run = %v, want %v", err, gone)
		}
		done <- nil // for the cleanup
	case <-time.After(30 * time.Second):
		t.Fatal("Run went on after a fatal error")
	}
}

func TestRunFirstReadErrorEndsIt(t *testing.T) {
	s := &script{answers: []func() ([]Row, error){fails(errThrottled)}}
	_, done, _ := run(t, s, Options{Transient: func(error) bool { return true }})
	select {
	case err := <-done:
		if !errors.Is(err, errThrottled) {
			t.Fatalf("Run = %v, want the first read's error", err)
		}
		done <- nil
	case <-time.After(30 * time.Second):
		t.Fatal("Run went on after its first read failed")
	}
}

func TestRunStopsWithContext(t *testing.T) {
	clk := clocktest.New(time.Now())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Interval: time.Second, Clock: clk,
			Read: func(context.Context) ([]Row, error) { return nil, nil },
			Emit: func(Event) error { return nil }})
	}()
	if err := clk.WaitTimers(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
}
