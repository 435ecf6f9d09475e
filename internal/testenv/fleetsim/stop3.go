package fleetsim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
)

// A graceful stop in a KCL 3.x fleet (issue 25, item 8). The Java KCL 3.x
// leaves a stopping worker's leases to expire: the leader
// (LeaseAssignmentManager) counts a lease expired once its counter has not
// grown for failoverTimeMillis, judged between its runs, so the leases wait
// for the round after the one that last saw the counter move. kcltool's
// coordinator evicts them with the 3.x evict write (EvictLease3: no
// leaseOwner, counter + 1), and the leader reassigns an unowned lease at
// its next round, but to any worker it counts as active, the stopped one
// included until its metrics item is two reporter periods old: hence the
// modes that also delete that item. MeasureStop3 times them on one fleet.

// KCL3AssignmentInterval is the leader's round interval at the KCL
// defaults (leaseAssignmentIntervalMillis = 2 x failoverTimeMillis), which
// kcl3fleet.LeaderConfig{} gets.
const KCL3AssignmentInterval = 20 * time.Second

// StopMode is how the stopping worker leaves.
type StopMode string

const (
	// StopExpire is Stop(ctx, false): the leases are left to expire, as a
	// Java 3.x worker leaves them.
	StopExpire StopMode = "expire"
	// StopEvict is Stop(ctx, true) alone: the evict writes (EvictLease3)
	// without the deletion, kcltool's stop before the deletion was added.
	StopEvict StopMode = "evict"
	// StopEvictUnlist is kcltool's graceful stop (runner.stopGracefully):
	// the worker's metrics item is deleted (Reporter.Remove), then the
	// leases evicted, so that the leader stops counting the worker as
	// active at its next round instead of two reporter periods after its
	// last report, and never gives the evicted leases back to it.
	StopEvictUnlist StopMode = "evict+unlist"
	// StopExpireUnlist deletes the metrics item without evicting: the
	// control that shows what the evict adds on its own.
	StopExpireUnlist StopMode = "expire+unlist"
)

// StopWorker stops one kcltool worker of the fleet as the runner does at a
// graceful stop: with unlist, its metrics reporter ends and the item is
// deleted first (coordination.Reporter.Remove, kcltool's own code), then
// Stop(release) (the evict writes when release is true); without, the
// reporter ends after Stop and its item stays for the leader to expire.
// The worker leaves the fleet's books.
func (f *Fleet3) StopWorker(id string, release, unlist bool) error {
	f.mu.Lock()
	c, cancel, rep := f.ours[id], f.stops[id], f.reporters[id]
	delete(f.ours, id)
	delete(f.stops, id)
	delete(f.reporters, id)
	f.mu.Unlock()
	if c == nil {
		return fmt.Errorf("fleetsim: no kcltool worker %s", id)
	}
	ctx := context.Background()
	if unlist {
		if err := rep.Remove(ctx); err != nil {
			return err
		}
	}
	err := c.Stop(ctx, release)
	cancel()
	return err
}

// heldBy is the worker holding key by its own account, or "".
func (f *Fleet3) heldBy(key string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, c := range f.ours {
		for _, l := range c.Held() {
			if l.LeaseKey == key {
				return id
			}
		}
	}
	return ""
}

// StopResult is one graceful stop: the simulated time from the stop until
// every lease the worker held is held by another worker.
type StopResult struct {
	Point  Point
	Mode   StopMode
	Leases int // the leases the stopped worker held
	Regain time.Duration
}

// MeasureStop3 runs a fleet of kcltool coordinators under the leader at the
// KCL defaults (failover 10 s, assignment every 20 s), waits until every
// lease is held and a minute more, stops one worker at a random moment of
// the leader's cycle (drawn from seed) as mode says, and times until
// each of its leases is held by another worker. It must run inside a
// synctest bubble.
func MeasureStop3(p Point, mode StopMode, seed uint64) StopResult {
	f := NewFleet3(KCLTool3, p.Leases, time.Second, kcl3fleet.LeaderConfig{})
	defer f.Stop()
	ids := WorkerIDs("w", p.Workers)
	rng := rand.New(rand.NewPCG(seed, 5))
	for i, id := range ids {
		f.Start(id, seed+uint64(i))
		f.Run(time.Duration(rng.Int64N(int64(StartSpread)/int64(p.Workers))), nil)
	}
	f.StartLeader()
	if _, ok := f.Run(10*time.Minute, func() bool { return f.HeldTotal() == p.Leases }); !ok {
		panic(fmt.Sprintf("%s: not every lease held in 10 minutes", p))
	}
	// A minute of steady state, then a random point of the leader's
	// 20 s cycle.
	f.Run(time.Minute+time.Duration(rng.Int64N(int64(KCL3AssignmentInterval))), nil)

	victim := ids[rng.IntN(len(ids))]
	f.mu.Lock()
	held := f.ours[victim].Held()
	f.mu.Unlock()
	keys := make([]string, len(held))
	for i, l := range held {
		keys[i] = l.LeaseKey
	}
	if len(keys) == 0 {
		panic(fmt.Sprintf("%s: worker %s holds nothing", p, victim))
	}
	release := mode == StopEvict || mode == StopEvictUnlist
	if err := f.StopWorker(victim, release, mode == StopEvictUnlist || mode == StopExpireUnlist); err != nil {
		panic(fmt.Sprintf("stop of %s: %v", victim, err))
	}
	// The deletion and the evict writes take no simulated time on the
	// model, so the clock starts after Stop returns.
	d, ok := f.Run(5*time.Minute, func() bool {
		for _, k := range keys {
			if f.heldBy(k) == "" {
				return false
			}
		}
		return true
	})
	if !ok {
		panic(fmt.Sprintf("%s: leases of %s not held again in 5 minutes", p, victim))
	}
	return StopResult{Point: p, Mode: mode, Leases: len(keys), Regain: d}
}
