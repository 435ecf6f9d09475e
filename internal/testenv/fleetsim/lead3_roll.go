package fleetsim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
)

// A rolling deploy (issue 26, point 5): every worker of a led fleet is
// stopped gracefully in turn and replaced by a new process, and the
// longest time any shard goes unread is measured.

// stopper is a leader side that can stop gracefully.
type stopper interface{ release(ctx context.Context) }

func (j *javaLeader) release(ctx context.Context) {
	// DynamoDBLockBasedLeaderDecider.shutdown (releaseLeadershipIfHeld:
	// the lock deleted when held), from Scheduler's shutdown.
	_ = j.l.Release(ctx)
	j.cancel()
}

// StopMember stops a member gracefully, as each engine's process does at
// SIGTERM: the leader side first gives up the lock (Java: the decider's
// shutdown deletes it; kcltool: LeaderLock.Release, dropping the run in
// flight); then a Java follower leaves its leases to expire and its
// metrics item to go stale (kcl3fleet.OtherWorker has no graceful stop of
// its own: a Java 3.x worker writes nothing for its leases at shutdown,
// stop3.go), while a kcltool follower deletes its metrics item and evicts
// its leases (runner.stopGracefully: evict+unlist, stop3.go).
func (f *Fleet3) StopMember(id string) error {
	f.mu.Lock()
	side, w := f.sides[id], f.java[id]
	delete(f.sides, id)
	f.mu.Unlock()
	ctx := context.Background()
	if side != nil {
		f.mu.Lock()
		f.deadMoves += side.moves()
		f.mu.Unlock()
		side.(stopper).release(ctx)
	}
	if w != nil {
		f.mu.Lock()
		cancel := f.stops[id]
		delete(f.java, id)
		delete(f.stops, id)
		f.mu.Unlock()
		w.Kill()
		cancel()
		return nil
	}
	return f.StopWorker(id, true, true)
}

// unreadTracker follows, at every instant of the simulation, which leases
// some worker is reading (Java: OtherWorker.Processing, which stops at a
// handoff seen; kcltool: the coordinator's held leases), and the longest
// time any lease went unread.
type unreadTracker struct {
	f       *Fleet3
	since   map[string]time.Time // unread since
	longest time.Duration
	key     string
}

func (u *unreadTracker) read() map[string]bool {
	u.f.mu.Lock()
	defer u.f.mu.Unlock()
	out := map[string]bool{}
	for _, w := range u.f.java {
		for _, k := range w.Processing() {
			out[k] = true
		}
	}
	for _, c := range u.f.ours {
		for _, l := range c.Held() {
			out[l.LeaseKey] = true
		}
	}
	return out
}

// observe is called at every instant (a Run's until).
func (u *unreadTracker) observe(keys []string) {
	now := u.f.Now()
	read := u.read()
	for _, k := range keys {
		s, unread := u.since[k]
		switch {
		case read[k] && unread:
			if d := now.Sub(s); d > u.longest {
				u.longest, u.key = d, k
			}
			delete(u.since, k)
		case !read[k] && !unread:
			u.since[k] = now
		}
	}
}

// RollResult is one rolling deploy.
type RollResult struct {
	Lead    Lead
	Engine  Engine
	Point   Point
	Longest time.Duration // the longest time any lease went unread
	Key     string
	Deploy  time.Duration // first stop to the last replacement settled
}

// MeasureRolling starts a led fleet (as MeasureLed), waits for a steady
// state, then replaces every worker in turn: a graceful stop, the new
// process 5 s later, and the next stop once every lease is read and the
// new worker reads at least one (at most 5 minutes), plus a random part
// of the assignment interval. It must run inside a synctest bubble.
func MeasureRolling(lead Lead, engine Engine, p Point, o LedOptions) RollResult {
	o = o.withDefaults()
	f := NewFleet3(engine, p.Leases, o.Batch, kcl3fleet.LeaderConfig{})
	f.Lead, f.AssignConfig, f.JavaLeader, f.ContendPeriod = lead, o.Assign, o.Java, o.ContendPeriod
	defer f.Stop()
	ids := WorkerIDs("w", p.Workers)
	rng := rand.New(rand.NewPCG(o.Seed, 13))
	for i, id := range ids {
		f.StartMember(id, o.Seed+uint64(i))
		f.Run(time.Duration(rng.Int64N(int64(StartSpread)/int64(p.Workers))), nil)
	}
	if _, ok := f.Run(15*time.Minute, func() bool { return f.HeldTotal() == p.Leases }); !ok {
		panic(fmt.Sprintf("%s led by %s: not every lease held", p, lead))
	}
	f.Run(o.Warmup, nil)
	var keys []string
	for _, k := range f.Model.Keys() {
		if len(k) > 8 && k[:8] == "shardId-" {
			keys = append(keys, k)
		}
	}
	u := &unreadTracker{f: f, since: map[string]time.Time{}}
	watch := func(more func() bool) func() bool {
		return func() bool {
			u.observe(keys)
			return more != nil && more()
		}
	}
	start := f.Now()
	for i, id := range ids {
		f.Run(time.Duration(rng.Int64N(int64(KCL3AssignmentInterval))), watch(nil))
		if err := f.StopMember(id); err != nil {
			panic(fmt.Sprintf("stop of %s: %v", id, err))
		}
		f.Run(5*time.Second, watch(nil))
		next := fmt.Sprintf("%s-r", id)
		f.StartMember(next, o.Seed+100+uint64(i))
		if _, ok := f.Run(5*time.Minute, watch(func() bool { return len(u.since) == 0 && f.Held(next) > 0 })); !ok {
			panic(fmt.Sprintf("%s led by %s: after replacing %s, %d leases unread or the new worker idle for 5 minutes", p, lead, id, len(u.since)))
		}
	}
	res := RollResult{Lead: lead, Engine: engine, Point: p, Longest: u.longest, Key: u.key, Deploy: f.Now().Sub(start)}
	return res
}
