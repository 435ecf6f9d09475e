package runner

import (
	"errors"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

// errHandoffTimeout ends a shard run whose handler did not finish within
// the graceful handoff timeout.
var errHandoffTimeout = errors.New("graceful handoff timed out: handler stopped before the lease is transferred")

// requestHandoff makes the run stop reading its shard: no new read, no new
// batch; the batch in flight finishes and is checkpointed, and a MultiLang
// child gets shutdownRequested (endProcessor), as the KCL 3.x daemon's
// ShutdownNotificationTask does when LeaseGracefulShutdownHandler asks the
// shard consumer to shut down gracefully.
func (r *shardRun) requestHandoff() {
	r.handoffOnce.Do(func() { close(r.handoff) })
}

// handOff completes a graceful handoff away from this worker: once the
// shard's run has ended (r nil: nothing runs), it writes the transfer
// (Coordinator.CompleteHandoff, the KCL's assignLease to the next owner).
//
// The timeout is the KCL's gracefulLeaseHandoffTimeoutMillis, counted from
// the moment the handoff was seen, as LeaseGracefulShutdownHandler counts
// it from enqueueShutdown. At the timeout the Java KCL writes the transfer
// while the old record processor may still run (monitorGracefulShutdownLeases
// calls transferLeaseIfOwner without stopping the consumer), so for a while
// two workers may process the shard. kcltool stops the handler first (kills
// the batch's process or the MultiLang child; that batch is not
// checkpointed) and writes after: the new owner never runs beside it.
//
// The worker's isGracefulLeaseHandoffEnabled (Config.KCL3.GracefulHandoff)
// does not change this: in the KCL only the leader reads it
// (LeaseAssignmentManager chooses between a handoff and a plain
// assignLease), while every worker's DynamoDBLeaseCoordinator creates its
// LeaseGracefulShutdownHandler and honours the handoffs it is asked for.
func (w *Worker) handOff(r *shardRun, key string, to string) {
	defer w.runsWG.Done()
	started := w.clock.Now()
	timedOut := false
	if r != nil {
		t := w.clock.NewTimer(w.cfg.KCL3.HandoffTimeout)
		select {
		case <-r.done:
			t.Stop()
		case <-t.C():
			timedOut = true
			r.log.Warn("graceful handoff timed out: stopping the shard's handler before transferring the lease; its batch is not checkpointed and the new owner handles it again",
				"timeout", w.cfg.KCL3.HandoffTimeout, "to", to)
			r.cancel(errHandoffTimeout)
			<-r.done
		}
	}
	// The run's context may have ended with the worker (a crash-like
	// stop): then nothing more is written, and the lease expires or is
	// evicted at the graceful stop.
	if err := w.coord.CompleteHandoff(w.runCtx, key); err != nil {
		if w.runCtx.Err() != nil {
			return
		}
		if errors.Is(err, leasecore.ErrLeaseLost) {
			w.log.Info("could not transfer the lease to its next owner: this worker no longer holds it", "lease", key, "to", to, "err", err)
			return
		}
		// Still held, and nothing reads the shard any more: renewed on, the
		// lease would stay in handoff and its next owner would wait for
		// ever. Give it up instead. In leader mode that is the KCL's evict,
		// which on a lease in handoff keeps leaseOwner (the next owner) and
		// removes checkpointOwner: the transfer by another write.
		if rerr := w.coord.Release(w.runCtx, key); rerr != nil && w.runCtx.Err() == nil {
			w.log.Warn("could not transfer nor release the lease: it stays in handoff, unread, and its next owner waits; restarting this worker ends it (the lease then expires)",
				"lease", key, "to", to, "err", err, "releaseErr", rerr)
			return
		}
		w.log.Warn("could not transfer the lease to its next owner; released it instead", "lease", key, "to", to, "err", err)
		return
	}
	took := w.clock.Now().Sub(started)
	w.metrics.HandedOver(took, timedOut)
	w.log.Info("lease handed over to its next owner", "lease", key, "to", to, "after", took.Round(time.Millisecond))
}

// startHandoff handles a LeaseHandoff event; the caller holds w.mu. The
// shard stops reading at once; handOff waits for its run and transfers.
func (w *Worker) startHandoff(e leasecore.LeaseEvent) {
	key := e.Lease.LeaseKey
	r := w.runs[key]
	if r != nil && r.tenure != e.Tenure {
		r = nil
	}
	if w.stopping && (r == nil || isClosed(r.done)) {
		// Nothing runs and the stop evicts the lease, which completes
		// the handoff all the same (the evict keeps leaseOwner when
		// checkpointOwner is set).
		return
	}
	if r != nil {
		r.log.Info("graceful handoff asked by the leader: the shard stops reading; the batch in flight finishes and is checkpointed", "to", e.Lease.LeaseOwner)
		r.requestHandoff()
	}
	w.runsWG.Add(1)
	go w.handOff(r, key, e.Lease.LeaseOwner)
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
