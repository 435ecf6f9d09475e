package clocktest_test

import (
	"context"
	"github.com/kcltool/kcltool/internal/clock"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
)

// The fake clock must stay a clock.Clock.
var _ clock.Clock = (*clocktest.Clock)(nil)

func TestTimers(t *testing.T) {
	c := clocktest.New(time.Unix(0, 0))
	t1, t2 := c.NewTimer(2*time.Second), c.NewTimer(time.Second)
	c.Advance(1500 * time.Millisecond)
	select {
	case <-t1.C():
		t.Fatal("2s timer fired at 1.5s")
	case <-t2.C():
	}
	if !t1.Stop() || t1.Stop() {
		t.Fatal("Stop must report an active timer once")
	}
	c.Advance(time.Hour)
	select {
	case <-t1.C():
		t.Fatal("stopped timer fired")
	default:
	}
	done := make(chan error)
	go func() { done <- clock.Sleep(context.Background(), c, time.Minute) }()
	if err := c.WaitTimers(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Minute)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
