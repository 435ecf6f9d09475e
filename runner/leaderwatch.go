package runner

import (
	"context"
	"time"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/leasecore"
)

// leaderWatch notices a KCL 3.x fleet with no live leader: nothing assigns
// leases then, and 3.x workers sit idle without a word. The lock item has
// no timestamp, so a dead leader shows only as a recordVersionNumber that
// stops changing (the lock client replaces it at every heartbeat).
type leaderWatch struct {
	version      string    // the lock's version last seen
	versionSince time.Time // when it was first seen
	found        bool      // a lock item was seen at the last look
	warned       bool      // this episode was reported
}

// leaderWatchLoop looks at the lock once per lease assignment interval, in
// leader mode only (the 2.x protocol needs no leader).
//
// Only for a worker that does not contend (KCL3Config.NoLeader): one that
// does takes a dead leader's lock over itself after the lock's
// leaseDuration (leader.go), so the warning would only mislead.
func (w *Worker) leaderWatchLoop(ctx context.Context) {
	if !w.cfg.KCL3.NoLeader {
		return
	}
	interval := w.coord.Config().LeaseAssignmentInterval
	var lw leaderWatch
	for {
		if clock.Sleep(ctx, w.clock, interval) != nil {
			return
		}
		w.mu.Lock()
		st := w.mode
		w.mu.Unlock()
		if st.Assignment != leasecore.AssignByLeader {
			lw = leaderWatch{}
			continue
		}
		lock, err := coordination.ReadLock(ctx, w.ddb, w.kcl3Tables(), st)
		if err != nil {
			if ctx.Err() == nil {
				w.log.Debug("could not read the leader lock; trying again later", "err", err)
			}
			continue
		}
		w.checkLeader(&lw, lock, interval)
	}
}

// checkLeader warns, once per episode, when no lease was assigned to this
// worker for two assignment intervals and the lock's version has not moved
// for the lock's own leaseDuration (or there is no lock at all). A lease
// assigned, or the version moving, ends the episode.
func (w *Worker) checkLeader(lw *leaderWatch, lock coordination.Lock, interval time.Duration) {
	now := w.clock.Now()
	if !lock.Found || lock.Version != lw.version || !lw.found {
		moved := lw.found && lock.Found && lock.Version != lw.version
		lw.version, lw.versionSince, lw.found = lock.Version, now, lock.Found
		if moved {
			lw.warned = false
		}
	}
	idleFor := now.Sub(w.lastAssigned())
	if idleFor < 2*interval {
		lw.warned = false
		return
	}
	if lw.warned {
		return
	}
	if !lock.Found {
		lw.warned = true
		w.log.Warn("no KCL 3.x leader: no lease was assigned to this worker and there is no leader lock item, so nothing assigns leases and every 3.x worker of the fleet sits idle; "+
			"start a Java KCL 3.x worker of the application (one elects itself leader), or run the fleet under CLIENT_VERSION_2X",
			"notAssignedFor", idleFor.Round(time.Second), "lockTable", lock.Table)
		return
	}
	stale := now.Sub(lw.versionSince)
	if lock.LeaseDuration <= 0 || stale < lock.LeaseDuration {
		return
	}
	lw.warned = true
	w.log.Warn("no live KCL 3.x leader: no lease was assigned to this worker and the leader lock's version has not changed for longer than the lock's leaseDuration, so its owner stopped heartbeating; "+
		"a leader that died holding the lock is never replaced when the fleet uses DynamoDB lock client 1.4.0 (amazon-kinesis-client issue #1803: a present, unexpired-looking lock is never taken over), and nothing processes new shards; "+
		"fix: delete the lock item \"Leader\" from the lock table (a live worker takes the lock within seconds); restarting workers does not help",
		"notAssignedFor", idleFor.Round(time.Second), "lockOwner", lock.Owner, "lockVersion", lock.Version,
		"unchangedFor", stale.Round(time.Second), "lockLeaseDuration", lock.LeaseDuration, "lockTable", lock.Table)
}

// lastAssigned is when this worker last held or was given a lease; the
// start of the coordinator before any.
func (w *Worker) lastAssigned() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.runs) > 0 {
		return w.clock.Now()
	}
	return w.assignedAt
}
