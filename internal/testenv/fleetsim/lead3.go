package fleetsim

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
)

// Fleets where every worker also contends for leadership (issue 26, point
// 5): each member is a follower of the fleet's Engine and a leader side of
// its Lead, so that the leader is one of the workers, as in a real fleet,
// and killing it kills a worker that holds leases. Unlike Fleet3.Leader
// (a leader apart from the workers, for the handoff figures of issue 25),
// every member's election is counted: its lock reads, the holder's
// heartbeats, scans and audits.

// Lead names the leader side every member runs.
type Lead string

const (
	// LeadJava: kcl3fleet.Leader on the Java schedule (JavaSchedule:
	// DynamoDBLockBasedLeaderDecider.isLeader on lock client 1.4.0, a
	// LeaseAssignmentManager run every 20 s, the 2-minute audit).
	LeadJava Lead = "java"
	// LeadJavaStale: the same, but a contender takes a lock left unchanged
	// for its leaseDuration (120 s), as the issue describes the Java
	// leader; lock client 1.4.0 under the KCL's decider never does.
	LeadJavaStale Lead = "java-stale"
)

// leaderSide is one member's part in the election and assignment.
type leaderSide interface {
	kill()         // kill -9: no release; the lock stays
	moves() int64  // successful assignment writes so far
	leading() bool // holds the lock by its own account
	rounds() int64 // assignment runs done as leader
}

type javaLeader struct {
	l      *kcl3fleet.Leader
	cancel context.CancelFunc
}

func (j *javaLeader) kill() { j.l.Stall(); j.cancel() }
func (j *javaLeader) moves() (n int64) {
	for _, r := range j.l.Rounds() {
		for _, m := range r.Moves {
			if m.Err == nil {
				n++
			}
		}
	}
	return n
}
func (j *javaLeader) leading() bool { return j.l.LockVersion() != "" }
func (j *javaLeader) rounds() (n int64) {
	for _, r := range j.l.Rounds() {
		if r.Leader {
			n++
		}
	}
	return n
}

// StartMember starts a follower (Start) and its leader side.
func (f *Fleet3) StartMember(id string, seed uint64) {
	f.Start(id, seed)
	ctx, cancel := context.WithCancel(f.ctx)
	var side leaderSide
	switch f.Lead {
	case LeadJava, LeadJavaStale:
		cfg := f.JavaLeader
		cfg.WorkerID, cfg.JavaSchedule = id, true
		cfg.StaleTakeover = cfg.StaleTakeover || f.Lead == LeadJavaStale
		l := f.KCL3.NewLeader(cfg)
		go func() { _ = l.RunJava(ctx) }()
		side = &javaLeader{l: l, cancel: cancel}
	default:
		side = f.startLeaderSide(ctx, cancel, id)
	}
	f.mu.Lock()
	f.sides[id] = side
	f.mu.Unlock()
}

// Kill kills a member as kill -9 does: no release of leases, lock or
// metrics item.
func (f *Fleet3) Kill(id string) {
	f.mu.Lock()
	side, cancel, w, c := f.sides[id], f.stops[id], f.java[id], f.ours[id]
	delete(f.sides, id)
	delete(f.stops, id)
	delete(f.java, id)
	delete(f.ours, id)
	delete(f.reporters, id)
	f.mu.Unlock()
	if side != nil {
		f.deadMoves += side.moves()
		side.kill()
	}
	if w != nil {
		w.Kill()
	}
	if cancel != nil {
		cancel()
	}
	if c != nil {
		_ = c.Stop(context.Background(), false)
	}
}

// LeaderMember is the member that holds the lock by its own account ("").
func (f *Fleet3) LeaderMember() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range slices.Sorted(maps.Keys(f.sides)) {
		if f.sides[id].leading() {
			return id
		}
	}
	return ""
}

// LeaderMoves is the successful assignment writes of every leader side so
// far, the killed ones included.
func (f *Fleet3) LeaderMoves() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.deadMoves
	for _, s := range f.sides {
		n += s.moves()
	}
	return n
}

func (f *Fleet3) leaderRounds() (n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.sides {
		n += s.rounds()
	}
	return n
}

// Members are the live members' ids, sorted.
func (f *Fleet3) Members() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.sides))
}

func (f *Fleet3) mustLead() {
	if f.Lead == "" {
		panic(fmt.Sprintf("fleetsim: fleet of %s has no Lead", f.Engine))
	}
}
