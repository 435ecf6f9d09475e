package coordination_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/internal/testenv/ddbmodel"
)

// TestLeaderLockOnModel: the election runs on fleetsim's in-process table
// model as on dynalite (acquire, takeover, loss, release), and costs what
// the model counts: one consistent GetItem (1 read unit) per contender
// Poll, one UpdateItem (1 write unit) per heartbeat.
func TestLeaderLockOnModel(t *testing.T) {
	ctx := context.Background()
	clk := clocktest.New(time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC))
	m := ddbmodel.New(ddbmodel.Config{Table: "app"}, clk)
	tables := coordination.DefaultTables("app", "app")
	st := coordination.State{Layout: coordination.LayoutLeaseTable}
	a := coordination.NewLeaderLock(m, tables, coordination.LeaderLockConfig{Owner: "a"}, clk, nil)
	b := coordination.NewLeaderLock(m, tables, coordination.LeaderLockConfig{Owner: "b"}, clk, nil)
	poll := func(l *coordination.LeaderLock) bool {
		t.Helper()
		ok, err := l.Poll(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !poll(a) || poll(b) {
		t.Fatal("want a leader, b not")
	}
	m.ResetStats()
	for range 4 {
		clk.Advance(5 * time.Second)
		if !poll(a) || poll(b) {
			t.Fatal("want a leader, b not")
		}
	}
	s := m.Stats()
	if s.ReadUnitsByOp["GetItem"] != 4 || s.WriteUnitsByOp["UpdateItem"] != 4 || s.ReadUnits != 4 || s.WriteUnits != 4 {
		t.Errorf("four rounds cost %v read and %v write units (%v, %v); want 4 GetItem, 4 UpdateItem", s.ReadUnits, s.WriteUnits, s.ReadUnitsByOp, s.WriteUnitsByOp)
	}
	// a dies; b saw its last version just now.
	clk.Advance(20 * time.Second)
	if poll(b) {
		t.Fatal("takeover at exactly the leaseDuration")
	}
	clk.Advance(b.NextPoll())
	if !poll(b) {
		t.Fatal("no takeover")
	}
	if _, err := a.Poll(ctx, st); !errors.Is(err, coordination.ErrLockLost) {
		t.Fatalf("a after the takeover: %v", err)
	}
	if err := b.Release(ctx, st); err != nil {
		t.Fatal(err)
	}
	if !poll(a) {
		t.Fatal("a did not take the released lock")
	}
}
