package doctor

import (
	"context"
	"testing"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

// follow feeds a Follower the rig's table read as another view reads it
// (one full Scan, no lag join), every step apart, and returns its reports.
func (r *rig) follow(reads int, step time.Duration, before func(i int)) []*Report {
	r.t.Helper()
	ctx := context.Background()
	d, err := New(ctx, r.apis(), r.options())
	if err != nil {
		r.t.Fatal(err)
	}
	f := d.Follow()
	var reps []*Report
	for i := range reads {
		if i > 0 {
			r.clock.Advance(step)
		}
		before(i)
		scan, err := leasecore.ScanTable(ctx, r.ddb, r.table, leasecore.ScanOptions{KeepItems: true})
		if err != nil {
			r.t.Fatal(err)
		}
		rep, err := f.Observe(ctx, r.clock.Now(), scan, nil)
		if err != nil {
			r.t.Fatal(err)
		}
		reps = append(reps, rep)
	}
	return reps
}

// TestFollowerJudgesTheViewsReads: fed a view's reads 20 s apart, the
// Follower reports what Run reports over its own reads, here a dead worker
// (which only reads a failover time apart can tell) and, on a KCL 3.5
// table, a leader lock whose version never moves (issue #1803). It marks
// its reports partial until the reads span the window. And it reads the
// lease table only through the view's scan: Migration3.0 and the lock are
// in that scan, so a steady read asks DynamoDB for nothing more.
func TestFollowerJudgesTheViewsReads(t *testing.T) {
	r := newKCL3Rig(t, 10*time.Second, time.Minute)
	r.kcl35DeadLeader()
	r.create(leasecore.Lease{LeaseKey: shard(0), LeaseOwner: "w1", LeaseCounter: 3})
	r.create(leasecore.Lease{LeaseKey: shard(1), LeaseOwner: "w2", LeaseCounter: 3})
	reps := r.follow(5, 20*time.Second, func(i int) {
		r.tableMetrics("w1", r.clock.Now(), true)
		if i > 0 {
			r.renewAll(shard(1)) // w2 renews nothing: dead
		}
	})
	for i, rep := range reps {
		if want := i < 3; rep.Partial != want {
			t.Errorf("read %d: partial %v over %s, want %v", i, rep.Partial, rep.Window, want)
		}
		if i > 0 && (rep.Cost.Coordination != 0 || rep.Cost.Pages != 0 || rep.Cost.DescribeTable != 0) {
			t.Errorf("read %d asked DynamoDB beyond the view's scan: %+v", i, rep.Cost)
		}
	}
	last := reps[len(reps)-1]
	if last.Window != time.Minute || last.Reads != 4 {
		t.Errorf("last report: %d reads over %s, want 4 over the 1m0s window", last.Reads, last.Window)
	}
	dead := want(t, last, FindDeadWorker, SeverityCritical)
	if !contains(dead.Evidence.Workers, "w2") || !contains(dead.Evidence.Shards, shard(1)) {
		t.Errorf("dead-worker names %v on %v, want w2 on %s", dead.Evidence.Workers, dead.Evidence.Shards, shard(1))
	}
	want(t, last, FindLeaderStale, SeverityCritical, "issue #1803")
	if c := last.Coordination; c == nil || c.Lock.Owner != "w1" || len(c.Metrics) != 1 {
		t.Errorf("coordination %+v, want w1's lock and its metrics from the scan", c)
	}
}
