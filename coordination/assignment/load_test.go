package assignment

import (
	"sync"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
)

// jumpClock is a clock whose timers fire at once, moving its time by
// their duration: a paced scan runs at full speed while the clock shows
// how long it would have taken.
type jumpClock struct {
	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

func (c *jumpClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *jumpClock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.slept = append(c.slept, d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return firedTimer(ch)
}

type firedTimer chan time.Time

func (t firedTimer) C() <-chan time.Time { return t }
func (t firedTimer) Stop() bool          { return false }

// The leader's scan is paced at ScanRate read units per second: in pages
// of about a quarter of a second's units, each followed by a wait that
// pays for it, so that the scan of the whole table takes about its units
// / ScanRate and no second sees much more than ScanRate.
func TestScanIsPaced(t *testing.T) {
	r := newRig(t, kcl3fleet.NewApp, Config{}, 300)
	clk := &jumpClock{now: time.Unix(1_790_000_000, 0)}
	const rate = 2.0
	m := NewManager(r.m.api, r.f.Tables, Config{ScanRate: rate}, clk, nil)
	res, err := m.RunOnce(r.ctx, r.st)
	if err != nil {
		t.Fatal(err)
	}
	if res.Leases != 300 || res.ScanReadUnits <= 2*rate {
		t.Fatalf("run %+v: want 300 leases and a scan of more than two seconds' units", res)
	}
	var waited time.Duration
	for _, d := range clk.slept {
		waited += d
	}
	// Every page but the last is paid for before the next is read.
	pages := len(clk.slept) + 1
	lastPage := res.ScanReadUnits / float64(pages) * 2
	want := time.Duration((res.ScanReadUnits - lastPage) / rate * float64(time.Second))
	if pages < 4 || waited < want || waited > time.Duration(res.ScanReadUnits/rate*float64(time.Second))+time.Second {
		t.Fatalf("%d pages, %.1f units, waited %v: want about %v", pages, res.ScanReadUnits, waited, time.Duration(res.ScanReadUnits/rate*float64(time.Second)))
	}
	t.Logf("%d pages, %.1f read units, paced over %v at %v units/s", pages, res.ScanReadUnits, waited, rate)

	// Unpaced (negative rate, as the KCL): no wait.
	clk.slept = nil
	m = NewManager(r.m.api, r.f.Tables, Config{ScanRate: -1}, clk, nil)
	if _, err := m.RunOnce(r.ctx, r.st); err != nil {
		t.Fatal(err)
	}
	if len(clk.slept) != 0 {
		t.Fatalf("unpaced scan waited %v", clk.slept)
	}
}
