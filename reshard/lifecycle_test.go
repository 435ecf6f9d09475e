package reshard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/kcltool/kcltool/leasecore"
)

func cp(s string) leasecore.SequenceNumber { return leasecore.SequenceNumber{SequenceNumber: s} }

// TestParentsDoneGating walks a merge child through its parents' lives:
// blocked while a parent lease checkpoints sequence numbers, done once it is
// at SHARD_END, and done once it is deleted.
func TestParentsDoneGating(t *testing.T) {
	t.Parallel()
	s := newScenario(t)
	ctx := context.Background()
	if _, err := SyncShards(ctx, s.kin, s.ddb, s.tbl(), SyncOptions{Stream: Stream{Name: s.stream}, Initial: Latest()}); err != nil {
		t.Fatal(err)
	}
	child := s.leases(t)[s.merged]
	if !slices.Equal(sorted(child.ParentShardIDs...), sorted(s.right, s.root1)) {
		t.Fatalf("merge child lease parents = %v", child.ParentShardIDs)
	}
	blocked := func(want ...string) {
		t.Helper()
		b, err := ParentsDone(ctx, s.ddb, s.tbl(), child)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, x := range b {
			got = append(got, x.ShardID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("blocked by %v, want %v", b, want)
		}
	}
	// Parent leases never created (LATEST start): nothing to wait for.
	blocked()
	s.putLease(t, leasecore.Lease{LeaseKey: s.right, LeaseOwner: "w1", Checkpoint: cp(seqNum)})
	s.putLease(t, leasecore.Lease{LeaseKey: s.root1, LeaseOwner: "w2", Checkpoint: cp(leasecore.SHARD_END)})
	blocked(s.right)
	b, _ := ParentsDone(ctx, s.ddb, s.tbl(), child)
	if want := fmt.Sprintf("waiting on %s (checkpoint 4959…8898, not SHARD_END)", s.right); len(b) != 1 || b[0].String() != want {
		t.Errorf("message %v, want %q", b, want)
	}
	// A sentinel is not SHARD_END either.
	s.putLease(t, leasecore.Lease{LeaseKey: s.right, Checkpoint: cp(leasecore.TRIM_HORIZON)})
	blocked(s.right)
	s.putLease(t, leasecore.Lease{LeaseKey: s.right, LeaseOwner: "w1", Checkpoint: cp(leasecore.SHARD_END)})
	blocked()
	s.putLease(t, leasecore.Lease{LeaseKey: s.root1, Checkpoint: cp(seqNum)})
	blocked(s.root1)
	s.deleteLease(t, s.root1)
	blocked()

	// The pure variant over a scan agrees.
	s.putLease(t, leasecore.Lease{LeaseKey: s.root1, Checkpoint: cp(seqNum)})
	if b := BlockingParents(child, s.leases(t)); len(b) != 1 || b[0].ShardID != s.root1 {
		t.Errorf("BlockingParents = %v", b)
	}
}

// TestParentsDoneMultiStream rebuilds parent lease keys with the stream
// prefix: a single-stream lease of the same shard id must not count.
func TestParentsDoneMultiStream(t *testing.T) {
	t.Parallel()
	s := newScenario(t)
	st := Stream{ID: "000000000000:" + s.stream + ":1700000000"}
	child := leasecore.Lease{LeaseKey: st.LeaseKey(s.left), StreamName: st.ID, ShardID: s.left,
		ParentShardIDs: []string{s.root0}, Checkpoint: cp(leasecore.TRIM_HORIZON)}
	s.putLease(t, leasecore.Lease{LeaseKey: s.root0, Checkpoint: cp(seqNum)}) // not this stream's
	if b, err := ParentsDone(context.Background(), s.ddb, s.tbl(), child); err != nil || len(b) != 0 {
		t.Errorf("blocked by %v (err %v), want nothing", b, err)
	}
	s.putLease(t, leasecore.Lease{LeaseKey: st.LeaseKey(s.root0), StreamName: st.ID, ShardID: s.root0, Checkpoint: cp(seqNum)})
	if b, err := ParentsDone(context.Background(), s.ddb, s.tbl(), child); err != nil || len(b) != 1 || b[0].LeaseKey != st.LeaseKey(s.root0) {
		t.Errorf("blocked by %v (err %v), want the stream's root0", b, err)
	}
}

// TestOnShardEnd drains the closed shards of the scenario with GetRecords
// and hands the ChildShards Kinesis reports to OnShardEnd, as the holder of
// the parent lease does.
func TestOnShardEnd(t *testing.T) {
	t.Parallel()
	s := newScenario(t)
	ctx := context.Background()
	g := s.graph(t)

	// Split: root0's holder creates both children at TRIM_HORIZON and
	// records them on root0, without bumping its counter.
	root0 := leasecore.Lease{LeaseKey: s.root0, LeaseOwner: "w1", LeaseCounter: 41, Checkpoint: cp(seqNum)}
	s.putLease(t, root0)
	children := s.childShardsAtEnd(t, s.root0)
	if len(children) != 2 {
		t.Fatalf("kinesis-local reported children %+v at the end of %s", children, s.root0)
	}
	res, err := OnShardEnd(ctx, s.ddb, s.tbl(), root0, children)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Created) != 2 || !slices.Equal(sorted(res.ChildShardIDs...), sorted(s.left, s.right)) {
		t.Errorf("result %+v", res)
	}
	got := s.leases(t)
	wantLease(t, g, got, s.left, s.left, leasecore.TRIM_HORIZON, s.root0)
	wantLease(t, g, got, s.right, s.right, leasecore.TRIM_HORIZON, s.root0)
	if p := got[s.root0]; !slices.Equal(sorted(p.ChildShardIDs...), sorted(s.left, s.right)) ||
		p.LeaseCounter != 41 || p.LeaseOwner != "w1" || p.Checkpoint != cp(seqNum) {
		t.Errorf("parent after OnShardEnd = %+v", p)
	}
	// Repeating it (a retry after a crash) creates nothing new.
	if res, err = OnShardEnd(ctx, s.ddb, s.tbl(), root0, children); err != nil || len(res.Created) != 0 || len(res.Existing) != 2 {
		t.Errorf("repeat: %+v, %v", res, err)
	}

	// Merge: right's holder finishes while root1 has no lease. The child
	// would treat root1 as done and start early, so it is deferred and
	// nothing is written.
	right := got[s.right]
	mergeChildren := s.childShardsAtEnd(t, s.right)
	if len(mergeChildren) != 1 || !slices.Equal(sorted(mergeChildren[0].ParentShards...), sorted(s.right, s.root1)) {
		t.Fatalf("children at the end of %s: %+v", s.right, mergeChildren)
	}
	_, err = OnShardEnd(ctx, s.ddb, s.tbl(), right, mergeChildren)
	var deferred *MergeDeferredError
	if !errors.As(err, &deferred) || !errors.Is(err, ErrMergeDeferred) || !slices.Equal(deferred.Absent, []string{s.root1}) {
		t.Fatalf("merge with one parent lease: %v", err)
	}
	if got := s.leases(t); got[s.merged].LeaseKey != "" || len(got[s.right].ChildShardIDs) != 0 {
		t.Errorf("a deferred merge wrote %+v / %+v", got[s.merged], got[s.right])
	}
	// Both parents leased: the child lease names both.
	s.putLease(t, leasecore.Lease{LeaseKey: s.root1, LeaseOwner: "w2", Checkpoint: cp(seqNum)})
	if res, err = OnShardEnd(ctx, s.ddb, s.tbl(), right, mergeChildren); err != nil || len(res.Created) != 1 {
		t.Fatalf("merge with both parents: %+v, %v", res, err)
	}
	got = s.leases(t)
	wantLease(t, g, got, s.merged, s.merged, leasecore.TRIM_HORIZON, s.right, s.root1)
	if !slices.Equal(got[s.right].ChildShardIDs, []string{s.merged}) {
		t.Errorf("childShardIds of right = %v", got[s.right].ChildShardIDs)
	}
	// root1's holder reaches its end too: the child exists already.
	if res, err = OnShardEnd(ctx, s.ddb, s.tbl(), got[s.root1], s.childShardsAtEnd(t, s.root1)); err != nil ||
		len(res.Created) != 0 || !slices.Equal(res.Existing, []string{s.merged}) {
		t.Errorf("second merge parent: %+v, %v", res, err)
	}

	// Both parents absent is not a deferral: the child is created; writing
	// childShardIds on the vanished parent then fails.
	s.deleteLease(t, s.right)
	s.deleteLease(t, s.root1)
	s.deleteLease(t, s.merged)
	res, err = OnShardEnd(ctx, s.ddb, s.tbl(), right, mergeChildren)
	if !errors.Is(err, leasecore.ErrLeaseNotFound) || len(res.Created) != 1 {
		t.Errorf("both parents gone: %+v, %v", res, err)
	}

	// No children (shard or stream gone): nothing written.
	if res, err = OnShardEnd(ctx, s.ddb, s.tbl(), root0, nil); err != nil || len(res.Created)+len(res.ChildShardIDs) != 0 {
		t.Errorf("no children: %+v, %v", res, err)
	}
}

// TestCleanup runs the cleanup rule over a finished split and merge: a
// parent goes only after its children started and its own parents are gone;
// orphans are reported and kept.
func TestCleanup(t *testing.T) {
	t.Parallel()
	s := newScenario(t)
	ctx := context.Background()
	g := s.graph(t)
	st := Stream{Name: s.stream}
	end := cp(leasecore.SHARD_END)
	s.putLease(t, leasecore.Lease{LeaseKey: s.root0, Checkpoint: end, ChildShardIDs: []string{s.left, s.right}})
	s.putLease(t, leasecore.Lease{LeaseKey: s.root1, Checkpoint: end}) // childShardIds never written: taken from the graph
	s.putLease(t, leasecore.Lease{LeaseKey: s.left, Checkpoint: cp(leasecore.TRIM_HORIZON), ParentShardIDs: []string{s.root0}})
	s.putLease(t, leasecore.Lease{LeaseKey: s.right, Checkpoint: end, ParentShardIDs: []string{s.root0}, ChildShardIDs: []string{s.merged}})
	s.putLease(t, leasecore.Lease{LeaseKey: s.merged, Checkpoint: cp(seqNum), ParentShardIDs: []string{s.right, s.root1}})
	// Orphans: a trimmed shard a child still waits on, and that child.
	s.putLease(t, leasecore.Lease{LeaseKey: "shardId-000000000098", Checkpoint: cp(seqNum)})
	s.putLease(t, leasecore.Lease{LeaseKey: "shardId-000000000099", Checkpoint: cp(leasecore.TRIM_HORIZON),
		ParentShardIDs: []string{"shardId-000000000098"}})

	run := func(want ...string) CleanupReport {
		t.Helper()
		rep, err := Cleanup(ctx, s.ddb, s.tbl(), st, g)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(sorted(rep.Deleted...), sorted(want...)) {
			t.Errorf("deleted %v, want %v; kept %+v", rep.Deleted, want, rep.Kept)
		}
		return rep
	}
	// root1: its child (merged) checkpoints, it has no parents: deleted.
	// root0: child left is still at TRIM_HORIZON. right: parent root0 exists.
	rep := run(s.root1)
	if len(rep.Orphans) != 2 || !rep.Orphans[0].Blocking || rep.Orphans[0].LeaseKey != "shardId-000000000098" {
		t.Errorf("orphans = %+v", rep.Orphans)
	}
	run()
	s.putLease(t, leasecore.Lease{LeaseKey: s.left, Checkpoint: cp(leasecore.LATEST), ParentShardIDs: []string{s.root0}})
	run(s.root0) // right still saw root0 in the same read
	run(s.right)
	run()
	got := s.leases(t)
	if want := sorted(s.left, s.merged, "shardId-000000000098", "shardId-000000000099"); !slices.Equal(keys(got), want) {
		t.Errorf("table has %v, want %v", keys(got), want)
	}
}

// TestDeleteOnlyFinished checks the guard of the delete itself: a lease
// whose checkpoint moved off SHARD_END after it was judged is not deleted.
func TestDeleteOnlyFinished(t *testing.T) {
	t.Parallel()
	s := newScenario(t)
	s.putLease(t, leasecore.Lease{LeaseKey: s.root0, Checkpoint: cp(seqNum)})
	deleted, err := deleteFinishedLease(context.Background(), s.ddb, s.tbl(), s.root0)
	if err != nil || deleted {
		t.Errorf("deleted %v, err %v", deleted, err)
	}
	if _, ok := s.leases(t)[s.root0]; !ok {
		t.Error("lease gone")
	}
}
