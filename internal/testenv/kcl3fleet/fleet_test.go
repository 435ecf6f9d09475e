package kcl3fleet

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// TestRunFleet runs the leader's rounds with two followers and a worker
// whose metrics are stale: the leases go to the active workers only, two
// each; a forced handoff moves one lease gracefully from w1 to w2 with no
// overlap; when w2 dies (and its metrics age), the leader gives its
// expired leases to w1, again without overlap.
func TestRunFleet(t *testing.T) {
	for _, kind := range []Kind{NewApp, SideTables} {
		t.Run(kind.String(), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f := Setup(t, emulator.DynamoDB(t), Layout{Kind: kind})
			keys := []string{"shardId-0", "shardId-1", "shardId-2", "shardId-3"}
			if err := f.CreateLeases(ctx, keys...); err != nil {
				t.Fatal(err)
			}
			// A worker that reported ten minutes ago: not active (lut older
			// than 2 x 30 s).
			if err := f.PutWorkerMetrics(ctx, "w-stale", Metrics{}, time.Now().Add(-10*time.Minute)); err != nil {
				t.Fatal(err)
			}
			cfg := func(id string) WorkerConfig {
				return WorkerConfig{ID: id, RenewInterval: 40 * time.Millisecond, DiscoveryInterval: 40 * time.Millisecond}
			}
			w1, w2 := f.NewWorker(cfg("w1")), f.NewWorker(cfg("w2"))
			var wg sync.WaitGroup
			for _, w := range []*OtherWorker{w1, w2} {
				wg.Add(1)
				go func(w *OtherWorker) { defer wg.Done(); _ = w.Run(ctx) }(w)
			}
			defer wg.Wait()
			defer cancel()
			waitFor(t, "both workers' metrics", func() bool { return w1.MetricWrites() > 0 && w2.MetricWrites() > 0 })

			leader := f.NewLeader(LeaderConfig{WorkerID: "leader", AssignmentInterval: 50 * time.Millisecond, FailoverTime: time.Second})
			wg.Add(1)
			go func() { defer wg.Done(); _ = leader.Run(ctx) }()
			defer leader.Stall()

			waitFor(t, "every lease processed", func() bool { return len(w1.Processing())+len(w2.Processing()) == len(keys) })
			mustEqual(t, "w1's share", len(w1.Processing()), 2)
			mustEqual(t, "w2's share", len(w2.Processing()), 2)
			for _, k := range keys {
				l, err := f.Lease(ctx, k)
				if err != nil {
					t.Fatal(err)
				}
				if l.LeaseOwner == "w-stale" {
					t.Errorf("%s given to the worker with stale metrics", k)
				}
			}

			moved := w1.Processing()[0]
			leader.RequestHandoff(moved, "w2")
			waitFor(t, "the handoff to w2", func() bool {
				return contains(w2.Processing(), moved) && !contains(w1.Held(), moved)
			})
			l, err := f.Lease(ctx, moved)
			if err != nil {
				t.Fatal(err)
			}
			if l.LeaseOwner != "w2" || l.CheckpointOwner != "" {
				t.Errorf("after the handoff: owner %q checkpointOwner %q", l.LeaseOwner, l.CheckpointOwner)
			}
			if !hasGracefulMove(leader.Rounds(), moved) {
				t.Errorf("no graceful move of %s in the leader's rounds", moved)
			}
			if o := Overlaps(time.Now(), w1.Intervals(), w2.Intervals()); len(o) > 0 {
				t.Errorf("overlapping processing: %+v", o)
			}

			w2.Kill()
			if err := f.PutWorkerMetrics(ctx, "w2", Metrics{}, time.Now().Add(-10*time.Minute)); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "w1 processing every lease", func() bool { return len(w1.Processing()) == len(keys) })
			if o := Overlaps(time.Now(), w1.Intervals(), w2.Intervals()); len(o) > 0 {
				t.Errorf("overlapping processing after w2 died: %+v", o)
			}
			for _, w := range []*OtherWorker{w1, w2} {
				if errs := w.Errors(); len(errs) > 0 {
					t.Errorf("%s: %v", w.ID(), errs)
				}
			}
			if err := leader.LastErr(); err != nil {
				t.Errorf("leader: %v", err)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func hasGracefulMove(rounds []Round, key string) bool {
	for _, r := range rounds {
		for _, m := range r.Moves {
			if m.Key == key && m.Graceful && m.Err == nil {
				return true
			}
		}
	}
	return false
}

// TestOverlaps checks the overlap finder itself.
func TestOverlaps(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	a := []Interval{{Worker: "a", Key: "k", From: at(0), To: at(10)}}
	b := []Interval{{Worker: "b", Key: "k", From: at(10)}}
	if o := Overlaps(at(20), a, b); len(o) != 0 {
		t.Errorf("back-to-back intervals reported: %v", o)
	}
	c := []Interval{{Worker: "c", Key: "k", From: at(9)}}
	if o := Overlaps(at(20), a, c); len(o) != 1 {
		t.Errorf("overlap missed: %v", fmt.Sprint(o))
	}
}
