package runner

import (
	"context"
	"errors"
	"fmt"
	"github.com/kcltool/kcltool/internal/clock"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
	"github.com/kcltool/kcltool/runner/metrics"
	"github.com/kcltool/kcltool/runner/processor"
)

// Worker is one member of a consumer fleet: it holds leases with the KCL 2.x
// protocol (leasecore.Coordinator), or, on a KCL 3.x table, as a follower of
// the fleet's elected leader (kcl3watch.go, handoff.go), reads the shards of
// the leases it holds, one reader each, and hands their records to the
// handler in batches, checkpointing after each success. Start the same
// worker on more machines and the fleet rebalances.
type Worker struct {
	cfg     Config
	ddb     DynamoDBAPI
	kin     KinesisAPI
	log     *slog.Logger
	clock   clock.Clock
	table   reshard.Table
	metrics *metrics.Metrics
	slots   *processor.Slots
	cw      *metrics.CloudWatch
	coord   *leasecore.Coordinator
	// health watches the loops and the lease-table calls for /livez and
	// /readyz (health.go).
	health *leasecore.Health
	// units are the capacity units of every lease-table call, by
	// operation: the coordinator counts its own (it calls through
	// leaseDDB), ddb those of shard sync, cleanup and the rest.
	units    *leasecore.Capacity
	leaseDDB DynamoDBAPI
	// streams are the streams read, with their KCL identifiers in
	// multi-stream mode (multistream.go); set by Run before anything else.
	streams []reshard.Stream
	multi   bool
	// efo holds the stream consumers when reading with fan-out (efo.go).
	efo *consumers
	// listings are the streams' shard listings, whose hash ranges filter
	// KPL aggregates (shardranges.go).
	listings shardListings

	mu       sync.Mutex
	runs     map[string]*shardRun // by lease key: the latest run of each held lease
	stopping bool
	fatal    error // why the worker stopped by itself (efo.go)
	// mode is the table's KCL 3.x state last read (kcl3watch.go);
	// assignedAt is when this worker last held a lease (leaderwatch.go).
	mode       coordination.State
	assignedAt time.Time
	kcl3       kcl3Side
	// leader is this worker's part in the KCL 3.x leadership (leader.go).
	leader *leaderSide
	runsWG sync.WaitGroup

	// runCtx is the parent of every shard run; cancelling it kills running
	// handlers without another checkpoint (a crash, a lapsed grace).
	runCtx     context.Context
	cancelRuns context.CancelCauseFunc

	shutdownOnce sync.Once
	shutdown     chan struct{} // Shutdown was called
	// stopRuns closes when the graceful stop begins: readers stop, running
	// handlers finish, nothing new starts.
	stopRuns chan struct{}
	syncNow  chan struct{}
	syncs    atomic.Int64 // shard syncs run, for tests
	finished broadcast    // a shard read by this worker reached SHARD_END
}

// Errors that end shard runs, as their context's cause.
var (
	errGraceExpired = errors.New("shutdown grace expired")
	errHardStop     = errors.New("worker stopped at once")
	errLeaseGone    = errors.New("lease lost or released")
)

// NewWorker checks the configuration; it makes no calls.
func NewWorker(cfg Config, ddb DynamoDBAPI, kin KinesisAPI) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	// Every request gets a deadline, whoever makes it: the readers, the
	// lease coordinator, shard sync, shard end, cleanup.
	units := &leasecore.Capacity{}
	leaseDDB := deadlineDynamoDB{api: ddb, d: cfg.DynamoDBTimeout}
	ddb = deadlineDynamoDB{api: ddb, d: cfg.DynamoDBTimeout, units: units}
	kin = deadlineKinesis{api: kin, d: cfg.KinesisTimeout, reads: newReadSlots(cfg.MaxReadsInFlight)}
	w := &Worker{
		cfg: cfg, ddb: ddb, kin: kin, clock: cfg.Clock, units: units, leaseDDB: leaseDDB,
		log:      cfg.Log.With("worker", cfg.WorkerID),
		table:    reshard.Table{Name: cfg.Table, Retry: reshard.Retry{Clock: cfg.Clock}},
		metrics:  cfg.Metrics,
		slots:    processor.NewSlots(cfg.MaxParallel),
		runs:     map[string]*shardRun{},
		shutdown: make(chan struct{}), stopRuns: make(chan struct{}), syncNow: make(chan struct{}, 1),
	}
	if w.metrics == nil {
		w.metrics = metrics.New()
	}
	w.health = leasecore.NewHealth(cfg.Clock, cfg.Lease.WithDefaults().FailoverTime)
	w.metrics.BindHealth(w.health)
	// Made here, not in Run, so that it is never written while the worker
	// runs (the metrics and tests read it).
	w.leader = newLeaderSide(w)
	if cfg.CloudWatch != nil {
		w.cw = metrics.NewCloudWatch(deadlineCloudWatch{api: cfg.CloudWatch, d: cloudWatchTimeout}, cfg.App, cfg.WorkerID, cfg.Clock, w.log)
	}
	return w, nil
}

// WorkerID is the leaseOwner this worker writes.
func (w *Worker) WorkerID() string { return w.cfg.WorkerID }

// Shutdown asks Run for a graceful stop: readers stop, running handlers may
// finish within the shutdown grace and are checkpointed, then every lease is
// released so that the other workers take the shards at once. It returns at
// once; Run returns when the stop is done. Calling it again does nothing.
func (w *Worker) Shutdown() {
	w.shutdownOnce.Do(func() { close(w.shutdown) })
}

// Run sets up the lease table, runs the worker until Shutdown, and returns
// nil after a graceful stop. Cancelling ctx stops at once, as a crash would
// as far as the table can tell: handlers are killed, nothing more is
// checkpointed and the leases expire after the failover time; Run then
// returns ctx's error. The table's KCL 3.x state, read at start and at
// every shard sync interval, decides how leases are assigned (kcl3watch.go):
// by taking (KCL 2.x) or by the fleet's leader (KCL 3.x). Errors before the
// worker starts (no table, no stream) are returned as they are.
func (w *Worker) Run(ctx context.Context) error {
	cfg := w.cfg
	if err := w.ensureTable(ctx); err != nil {
		return err
	}
	// A 2.x-protocol worker would fight a 3.x leader for every lease: the
	// table's state decides the protocol.
	mode, err := w.detectMode(ctx)
	if err != nil {
		return err
	}
	w.mu.Lock() // tests read it while Run runs
	w.mode = mode
	w.mu.Unlock()
	if err := w.resolveStreams(ctx); err != nil {
		return err
	}
	if cfg.FanOut != nil {
		if err := w.setupFanOut(ctx); err != nil {
			return err
		}
	}
	if err := w.initialSync(ctx, mode); err != nil {
		if ctx.Err() != nil || awserr.NotFound(err) {
			return err
		}
		// Leases may already exist; the periodic sync tries again.
		w.log.Warn("initial shard sync failed; retrying periodically", "err", err)
	}
	lcfg := cfg.Lease
	lcfg.LeaseAssignmentInterval = cfg.KCL3.LeaseAssignmentInterval
	coord, err := leasecore.NewCoordinator(w.leaseDDB, cfg.Table, lcfg, w.clock, leasecore.Options{
		Logger: cfg.Log, OnEvent: w.onEvent, Include: w.include, Capacity: w.units, Assignment: mode.Assignment,
		Health: w.health,
	})
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.coord = coord
	w.mu.Unlock()
	w.metrics.Bind(cfg.App, w.streamsLabel(), cfg.WorkerID, coord.Stats, w.slots.InUse, w.clock)
	w.metrics.BindLeader(w.leader.Stats)
	w.runCtx, w.cancelRuns = context.WithCancelCause(ctx)
	loopsCtx, stopLoops := context.WithCancel(ctx)
	var loops sync.WaitGroup
	loops.Add(5)
	go func() { defer loops.Done(); w.syncLoop(loopsCtx) }()
	go func() { defer loops.Done(); w.cleanupLoop(loopsCtx) }()
	go func() { defer loops.Done(); w.modeLoop(loopsCtx) }()
	go func() { defer loops.Done(); w.leaderWatchLoop(loopsCtx) }()
	go func() { defer loops.Done(); w.migrationMonitorLoop(loopsCtx) }()
	cwCtx, stopCW := context.WithCancel(ctx)
	var cwDone sync.WaitGroup
	if w.cw != nil {
		w.metrics.SetCloudWatch(w.cw)
		cwDone.Add(1)
		go func() { defer cwDone.Done(); w.cw.Run(cwCtx, cfg.CloudWatchInterval, coord.Stats) }()
	}
	defer func() { stopLoops(); stopCW(); loops.Wait(); cwDone.Wait() }()
	w.mu.Lock()
	w.assignedAt = w.clock.Now()
	w.mu.Unlock()
	if err := coord.Start(ctx); err != nil {
		return err
	}
	w.kcl3.start(ctx, w, mode)
	defer w.kcl3.stop(context.WithoutCancel(ctx))
	// Started after the coordinator: a leader's first run then finds this
	// worker's own leases already read. It ends with loopsCtx; a graceful
	// stop releases the lock (stopGracefully).
	w.leader.start(loopsCtx)
	w.log.Info("lease assignment mode", "assignment", mode.Assignment.String(), "layout", mode.Layout.String(), "reportMetrics", mode.ReportMetrics, "reason", mode.Reason)
	w.log.Info("worker started", "app", cfg.App, "table", cfg.Table, "stream", w.streamsLabel(),
		"initialPosition", cfg.Initial.Kind, "failover", coord.Config().FailoverTime, "batchSize", cfg.BatchSize, "maxParallel", cfg.MaxParallel)

	select {
	case <-ctx.Done():
		return w.stopNow(ctx)
	case <-w.shutdown:
	}
	// The leader's run in progress is dropped at once, as the KCL's
	// graceful shutdown stops its LeaseAssignmentManager first; the lock
	// is released after the leases (stopGracefully).
	w.leader.stopAssigning()
	stopLoops()
	if err := w.stopGracefully(ctx, stopCW, &cwDone); err != nil {
		return err
	}
	return w.fatalErr()
}

// stopNow is the crash-like stop: kill everything, release nothing.
func (w *Worker) stopNow(ctx context.Context) error {
	w.health.Stopping()
	w.mu.Lock()
	w.stopping = true
	w.mu.Unlock()
	w.cancelRuns(errHardStop)
	w.runsWG.Wait()
	_ = w.coord.Stop(context.WithoutCancel(ctx), false)
	w.log.Warn("worker stopped at once: running handlers killed, leases not released (they expire after the failover time)")
	return ctx.Err()
}

// stopGracefully lets running handlers finish within the grace, then
// deletes the worker-metrics item (KCL 3.x mode), releases every lease
// and publishes the last metrics.
func (w *Worker) stopGracefully(ctx context.Context, stopCW context.CancelFunc, cwDone *sync.WaitGroup) error {
	// Nothing new is taken during the grace: it would only be released
	// again, unread.
	w.coord.StopTaking()
	w.health.Stopping()
	w.mu.Lock()
	w.stopping = true
	running := len(w.runs)
	w.mu.Unlock()
	close(w.stopRuns)
	w.log.Info("stopping: shards stop reading, running handlers may finish", "shards", running, "grace", w.cfg.ShutdownGrace)
	done := make(chan struct{})
	go func() { w.runsWG.Wait(); close(done) }()
	grace := w.clock.NewTimer(w.cfg.ShutdownGrace)
	select {
	case <-done:
		grace.Stop()
	case <-grace.C():
		w.log.Warn("shutdown grace expired: killing the handlers still running; their batches are not checkpointed and will be handled again")
		w.cancelRuns(errGraceExpired)
		<-done
	case <-ctx.Done():
		grace.Stop()
		return w.stopNow(ctx)
	}
	// Bounded: a lease table that cannot be reached must not keep the
	// process alive; leases not released expire after the failover time.
	rctx, cancel := context.WithTimeout(ctx, releaseTimeout)
	defer cancel()
	// In KCL 3.x mode, the metrics item goes first: the leader must not
	// count this worker active when it sees the evicted leases.
	w.kcl3.unlist(rctx)
	if err := w.coord.Stop(rctx, true); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w.log.Warn("could not release every lease; the rest expire after the failover time", "err", err)
	}
	// Last of the three, as the KCL's Scheduler.shutdown releases its lock
	// after its leases: the next leader, at its next poll, finds this
	// worker's leases unowned and its metrics item gone, and assigns them
	// in its first run (leader.go, releaseLock).
	w.leader.releaseLock(rctx)
	if w.cw != nil {
		w.cw.Last(rctx, w.coord.Stats)
	}
	stopCW()
	cwDone.Wait()
	w.cancelRuns(errHardStop) // nothing runs any more; frees the context
	w.log.Info("worker stopped: every lease released")
	return nil
}

// releaseTimeout bounds deleting the worker-metrics item, releasing the
// leases and the last metrics at stop.
const releaseTimeout = 10 * time.Second

// onEvent starts a shard run for each lease gained and ends it when the
// lease is lost or released. The coordinator calls it from one goroutine,
// in order.
func (w *Worker) onEvent(e leasecore.LeaseEvent) {
	key := e.Lease.LeaseKey
	w.mu.Lock()
	defer w.mu.Unlock()
	switch e.Kind {
	case leasecore.LeaseGained:
		if w.stopping {
			return // released with the others when the stop completes
		}
		var prev <-chan struct{}
		if old := w.runs[key]; old != nil {
			old.cancel(errLeaseGone)
			prev = old.done
		}
		r := newShardRun(w, e.Lease, e.Tenure, prev)
		r.stolenFrom, r.notBefore = e.StolenFrom, e.NotBefore
		w.runs[key] = r
		w.assignedAt = w.clock.Now()
		w.runsWG.Add(1)
		go func() {
			defer w.runsWG.Done()
			r.run()
		}()
	case leasecore.LeaseHandoff:
		w.startHandoff(e)
	case leasecore.LeaseLost, leasecore.LeaseReleased, leasecore.LeaseHandedOff:
		r := w.runs[key]
		if r == nil || r.tenure != e.Tenure {
			return
		}
		delete(w.runs, key)
		w.assignedAt = w.clock.Now()
		// At once: a handler still running for a lost lease is killed, and
		// its batch is never checkpointed (the new holder handles it again).
		r.cancel(fmt.Errorf("%w: %s", errLeaseGone, e.Kind))
		r.stats.Release()
		if e.Kind != leasecore.LeaseLost {
			return
		}
		select {
		case <-r.done:
			if errors.Is(r.endErr, leasecore.ErrLeaseLost) {
				// The reader found the loss first, when its checkpoint
				// failed, and stopped; the event comes after.
				r.log.Warn("lease lost: stopped the shard", "err", e.Err)
				return
			}
			// The reader had ended on its own before: it finished the
			// shard (the cleanup then deletes the lease), or it found the
			// lease deleted.
			r.log.Info("lease gone; the shard's reader had already stopped", "err", e.Err)
		default:
			r.log.Warn("lease lost: stopped the shard", "err", e.Err)
		}
	}
}

// syncLoop runs KCL's periodic shard sync, so that shards nobody holds a
// lease for (new streams' shards, a reshard the fleet missed) get leases.
//
// In KCL 3.x mode it is the leader's audit instead (leader_audit.go):
// followers sync only when asked (a merge child waiting for its other
// parent's lease), never on the timer.
func (w *Worker) syncLoop(ctx context.Context) {
	loop := w.health.Loop("shard-sync", w.loopBound(max(w.cfg.ShardSyncInterval, w.cfg.KCL3.ShardAuditInterval, DefaultShardAuditInterval)))
	defer loop.Close()
	ctx = leasecore.WithLoop(ctx, loop)
	var audit shardAudit
	for {
		loop.Beat()
		t := w.clock.NewTimer(w.syncInterval())
		asked := false
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		case <-w.syncNow:
			t.Stop()
			asked = true
		}
		var err error
		switch {
		case w.currentMode().Assignment != leasecore.AssignByLeader || asked:
			audit = shardAudit{}
			err = w.syncShards(ctx)
		case w.isLeader():
			err = w.auditShards(ctx, &audit)
		default:
			audit = shardAudit{} // a new leadership audits afresh
		}
		if err != nil && ctx.Err() == nil {
			w.log.Info("shard sync failed; trying again later", "err", err)
		}
	}
}

// requestSync makes the sync loop run now.
func (w *Worker) requestSync() {
	select {
	case w.syncNow <- struct{}{}:
	default:
	}
}

// syncShards runs the shard sync of each stream; one failing does not
// keep the others from theirs.
//
// Once the coordinator runs, the sync reads the taker's latest scan instead
// of the table when that scan is no older than the sync interval (the taker
// scans every 20 s or sooner): a consistent scan per worker per minute was a
// third of the fleet's read units at 1,000 leases, and made kcltool's
// capacity exceed KCL 2.x's, whose shard sync runs on a leader only. The
// list is trusted only to show that nothing is missing; reshard.SyncShards
// reads the table again before it creates anything, so a stale list creates
// nothing a fresh one would not (docs/scale.md).
func (w *Worker) syncShards(ctx context.Context) error {
	w.syncs.Add(1)
	var listed *leasecore.ScanResult
	if w.coord != nil {
		if res, ok := w.coord.LatestScan(w.cfg.ShardSyncInterval); ok {
			listed = &res
		}
	}
	var errs []error
	for _, s := range w.streams {
		if err := w.syncStream(ctx, s, listed); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (w *Worker) syncStream(ctx context.Context, s reshard.Stream, listed *leasecore.ScanResult) error {
	ctx = leasecore.WithCapacityOp(ctx, leasecore.OpShardSync)
	at := w.clock.Now()
	rep, err := reshard.SyncShards(ctx, w.kin, w.ddb, w.table, reshard.SyncOptions{
		Stream: s, Initial: w.cfg.Initial, Retry: w.table.Retry, Listed: listed,
	})
	w.listings.store(s, at, rep.Graph)
	// At every sync, not once: such an item blocks its shard for good, and
	// a warning given only at start is long gone when someone looks.
	for _, m := range rep.Malformed {
		w.log.Warn("malformed lease item: no worker reads its shard until it is repaired (kcltool doctor prints the command that repairs it)", "err", m)
	}
	if err != nil {
		return err
	}
	if len(rep.Created) > 0 {
		keys := make([]string, len(rep.Created))
		for i, l := range rep.Created {
			keys[i] = l.LeaseKey
		}
		w.log.Info("shard sync created leases", "leases", keys, "checkpoint", rep.Created[0].Checkpoint.SequenceNumber)
		if w.coord != nil {
			w.coord.Kick()
		}
	}
	for _, o := range rep.Orphans {
		w.log.Debug("lease of a shard the stream no longer lists", "orphan", o)
	}
	return nil
}

// cleanupLoop deletes finished parent leases once their children have
// started (KCL's LeaseCleanupManager), so that the table does not grow with
// every reshard.
func (w *Worker) cleanupLoop(ctx context.Context) {
	loop := w.health.Loop("lease-cleanup", w.loopBound(w.cfg.CleanupInterval))
	defer loop.Close()
	ctx = leasecore.WithLoop(ctx, loop)
	for {
		loop.Beat()
		if clock.Sleep(ctx, w.clock, w.cfg.CleanupInterval) != nil {
			return
		}
		for _, s := range w.streams {
			rep, err := reshard.Cleanup(leasecore.WithCapacityOp(ctx, leasecore.OpCleanup), w.ddb, w.table, s, nil)
			switch {
			case err != nil && ctx.Err() == nil:
				w.log.Info("lease cleanup failed; trying again later", "err", err)
			case len(rep.Deleted) > 0:
				w.log.Info("deleted the leases of finished parent shards", "leases", rep.Deleted)
			}
		}
	}
}

// broadcast wakes every waiter once per notify.
type broadcast struct {
	mu sync.Mutex
	ch chan struct{}
}

// wait returns a channel that closes at the next notify. Take it before
// checking the condition, so that a notify in between is not missed.
func (b *broadcast) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

func (b *broadcast) notify() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
}

func streamLabel(s reshard.Stream) string {
	if s.Name != "" {
		return s.Name
	}
	return s.ARN
}
