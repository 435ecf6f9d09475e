package metrics

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
)

// The failing spell's length is read from the clock that stamped its start
// (the worker's), not from the system clock: with a fake clock two years in
// the past, the system clock would report the spell as two years long.
func TestReadFailingSecondsUsesWorkerClock(t *testing.T) {
	clock := clocktest.New(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))
	m := New()
	m.Bind("orders", "orders-stream", "worker-1", nil, nil, clock)
	s := m.Shard("shardId-000000000000")
	s.ReadFailed(errors.New("refused"), clock.Now())
	clock.Advance(7 * time.Second)
	var b strings.Builder
	if err := m.WritePrometheus(&b); err != nil {
		t.Fatal(err)
	}
	want := `kcltool_shard_read_failing_seconds{app="orders",stream="orders-stream",shard="shardId-000000000000"} 7` + "\n"
	if !strings.Contains(b.String(), want) {
		t.Fatalf("want %q in\n%s", want, b.String())
	}
}
