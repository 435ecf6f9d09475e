package runner

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/leasecore"
)

// A fleet of kcltool workers only, migrated from KCL 2.x with no Java
// worker: the operator's `migration start` writes cv UPGRADE_FROM_2X and
// adds the index; the workers report metrics; the 2.x fleet's leader
// (the deterministic shuffle's pick) checks readiness and, once it has
// held for the (shortened) stabilization, flips cv to 3X_WITH_ROLLBACK;
// the workers follow into leader-assigned mode, one of them takes the
// lock and assigns, every lease stays held and no record is lost.
// Generous bounds; the only timing asserted is a lower one (no flip
// before the stabilization), which load cannot break.
func TestKCL3MigrationMonitorFlipsKcltoolFleet(t *testing.T) {
	const stabilize = 3 * time.Second
	s := newStack(t, 4)
	ids := []string{"kcltool-1", "kcltool-2"}
	outs := map[string]string{}
	rs := map[string]*running{}
	for _, id := range ids {
		outs[id] = outFile(t)
		cfg := s.config(t, id, outs[id])
		cfg.KCL3.WorkerMetricsInterval = time.Second
		cfg.KCL3.MigrationMonitorInterval = 500 * time.Millisecond
		cfg.KCL3.MigrationFlipStabilization = stabilize
		rs[id] = start(t, s, cfg)
	}
	owned := func() map[string]int {
		// Not leases(): the workers create the table, and the index's
		// items are not leases either.
		n := map[string]int{}
		res, err := leasecore.ScanTable(context.Background(), s.ddb, s.table, leasecore.ScanOptions{ConsistentRead: true})
		if err != nil {
			return n
		}
		for _, l := range res.Leases {
			n[l.LeaseOwner]++
		}
		return n
	}
	eventually(t, 30*time.Second, "both 2.x workers holding leases", func() bool {
		n := owned()
		return n[ids[0]] > 0 && n[ids[1]] > 0 && n[ids[0]]+n[ids[1]] == 4
	})
	keysA := keys("a-", 20)
	s.put(t, func(k string) string { return "rec " + k }, keysA...)

	// migration start --execute, as inspect plans it for a 2.x table:
	// Migration3.0 created in the lease table, then the index.
	tables := coordination.DefaultTables(s.table, s.table)
	started := time.Now()
	err := coordination.MigrationApply(context.Background(), s.ddb, []coordination.MigrationWrite{
		{Action: coordination.ActionCreateCV, Table: s.table, KeyAttr: leasecore.AttrLeaseKey, To: coordination.ClientVersionUpgradeFrom2X, By: coordination.MigrationBy("start")},
		{Action: coordination.ActionAddIndex, Table: s.table},
	}, coordination.MigrationApplyOptions{Poll: 100 * time.Millisecond, IndexTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "both workers reporting worker metrics (UPGRADE_FROM_2X)", func() bool {
		st, err := coordination.Detect(context.Background(), s.ddb, tables)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := coordination.ListWorkerMetrics(context.Background(), s.ddb, tables, st)
		return err == nil && len(ms) == 2
	})
	var flipped coordination.State
	eventually(t, 40*time.Second, "cv flipped to "+coordination.ClientVersion3XWithRollback, func() bool {
		st, err := coordination.Detect(context.Background(), s.ddb, tables)
		if err != nil {
			t.Fatal(err)
		}
		flipped = st
		return st.ClientVersion == coordination.ClientVersion3XWithRollback
	})
	if rs[flipped.ClientVersionBy] == nil {
		t.Errorf("cv flipped by %q, want one of the workers", flipped.ClientVersionBy)
	}
	if len(flipped.ClientVersionHistory) == 0 || flipped.ClientVersionHistory[0].ClientVersion != coordination.ClientVersionUpgradeFrom2X {
		t.Errorf("history %+v: want the replaced UPGRADE_FROM_2X first", flipped.ClientVersionHistory)
	}
	if d := flipped.ClientVersionAt.Sub(started); d < stabilize {
		t.Errorf("flipped %s after migration start, before the %s the checks must pass", d, stabilize)
	}
	t.Logf("MEASURED: migration start -> cv %s after %s (monitor every 500ms, stabilization %s)", coordination.ClientVersion3XWithRollback, time.Since(started).Round(100*time.Millisecond), stabilize)

	eventually(t, 30*time.Second, "both workers following the leader", func() bool {
		return rs[ids[0]].w.assignmentIs(leasecore.AssignByLeader) && rs[ids[1]].w.assignmentIs(leasecore.AssignByLeader)
	})
	eventually(t, 30*time.Second, "one kcltool worker leading", func() bool {
		leaders := 0
		for _, id := range ids {
			if rs[id].w.leader.Stats().Leader {
				leaders++
			}
		}
		return leaders == 1
	})
	keysB := keys("b-", 20)
	s.put(t, func(k string) string { return "rec " + k }, keysB...)
	eventually(t, 30*time.Second, "every lease held and every record handled", func() bool {
		n := owned()
		if n[ids[0]]+n[ids[1]] != 4 {
			return false
		}
		seen := map[string]bool{}
		for _, id := range ids {
			for _, h := range readHandled(t, outs[id]) {
				seen[h.text()] = true
			}
		}
		for _, k := range append(append([]string{}, keysA...), keysB...) {
			if !seen["rec "+k] {
				return false
			}
		}
		return true
	})
	for _, id := range ids {
		if err := rs[id].stop(t); err != nil {
			t.Fatal(err)
		}
	}
	var missing []string
	for _, id := range ids {
		for _, h := range readHandled(t, outs[id]) {
			if !strings.HasPrefix(h.text(), "rec ") {
				missing = append(missing, fmt.Sprintf("%s: %q", id, h.text()))
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("unexpected records: %v", missing)
	}
}
