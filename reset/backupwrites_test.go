package reset

import (
	"slices"
	"testing"

	"github.com/kcltool/kcltool/leasecore"
)

// The keys Execute hands to Backup, which the printed undo restores, are
// the leases it is about to write: not an unchanged one, nor one that
// changed between the plan and the second read (skipped, not written).
// Written says the same after the writes.
func TestBackupHearsExactlyTheLeasesToWrite(t *testing.T) {
	w := newTable(t)
	for i := range 3 {
		w.lease(shardID(i), "", "100")
	}
	p, err := PlanReset(w.ctx, w.ddb, nil, ResetOptions{Table: w.table, Target: Target{File: "f.csv", Positions: []Position{
		{LeaseKey: shardID(0), Checkpoint: seq(leasecore.TRIM_HORIZON)},
		{LeaseKey: shardID(1), Checkpoint: seq("100")},
		{LeaseKey: shardID(2), Checkpoint: seq(leasecore.TRIM_HORIZON)},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	// Shard 2 changes after the plan without its counter moving, so the
	// liveness sample passes and only the comparison with the plan sees it.
	l := w.leases()[shardID(2)]
	l.Checkpoint = seq("150")
	w.seed(leasecore.EncodeLease(l))
	var heard []string
	x := w.execute(p, ExecOptions{Backup: func(_ *Export, writes []string) error { heard = writes; return nil }})
	if want := []string{shardID(0)}; !slices.Equal(heard, want) || !slices.Equal(x.Written(p), want) {
		t.Fatalf("backup heard %v, written %v; want %v (results %+v)", heard, x.Written(p), want, x.Results)
	}
}
