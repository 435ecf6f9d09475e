package runner

import (
	"context"
	"errors"
	"time"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/leasecore"
)

// The migration-ready monitor (KCL 3.5.1 MigrationReadyMonitor, started by
// MigrationClientVersionUpgradeFrom2xState): under cv
// CLIENT_VERSION_UPGRADE_FROM_2X every worker runs it, and on the fleet's
// leader it checks every minute that the index is ACTIVE and every lease
// owner reports fresh worker metrics; once that has held for 10 minutes it
// writes cv CLIENT_VERSION_3X_WITH_ROLLBACK. Every worker then follows cv
// (kcl3watch.go modeLoop) into leader-assigned mode, where the lock-based
// leader (leader.go) takes over. Without this, a fleet of kcltool workers
// only would stay in UPGRADE_FROM_2X for good.
//
// The leader here is not the lock's: under UPGRADE_FROM_2X the KCL's
// leader decider is DeterministicShuffleShardSyncLeaderDecider, the first
// of the lease owners shuffled with a fixed seed (coordination.ShuffleLeaders),
// which a Java worker reading the same owners elects too. It re-elects on
// the decider's schedule: at the first check, a minute later, then every
// five minutes (ELECTION_INITIAL_DELAY_MILLIS, ELECTION_SCHEDULING_INTERVAL_MILLIS;
// scaled with MigrationMonitorInterval in tests). Two workers that both
// think they lead (a Java and a kcltool worker between elections) cannot
// both flip: the write is conditional on the cv and mts read.
//
// Reads: a non-leader reads nothing (it elects from the lease taker's last
// scan); the leader reads the table's state (Detect: the index status and
// Migration3.0), the lease table once and the metrics side table when
// there is one, once a minute, as the KCL's leader does.

// migrationMonitor is one worker's monitor; only its loop touches it.
type migrationMonitor struct {
	w        *Worker
	interval time.Duration
	expiry   time.Duration
	stab     coordination.MigrationStabilizer

	leaders      []string
	elections    int
	nextElection time.Time
	leading      bool
	lastFailed   string
	running      bool
}

func newMigrationMonitor(w *Worker) *migrationMonitor {
	k := w.cfg.KCL3
	interval := k.MigrationMonitorInterval
	if interval <= 0 {
		interval = coordination.MigrationMonitorInterval
	}
	window := k.MigrationFlipStabilization
	if window <= 0 {
		window = coordination.MigrationFlipStabilization
	}
	return &migrationMonitor{w: w, interval: interval, expiry: coordination.MigrationMetricsExpiry(k.WorkerMetricsInterval),
		stab: coordination.MigrationStabilizer{Window: window}}
}

// migrationMonitorLoop checks every interval while the table's cv is
// UPGRADE_FROM_2X. A worker kept out of the leadership (NoLeader) never
// writes cv either.
func (w *Worker) migrationMonitorLoop(ctx context.Context) {
	if w.cfg.KCL3.NoLeader {
		return
	}
	m := newMigrationMonitor(w)
	for {
		if clock.Sleep(ctx, w.clock, m.interval) != nil {
			return
		}
		if w.currentMode().ClientVersion != coordination.ClientVersionUpgradeFrom2X {
			m.stop()
			continue
		}
		if !m.running {
			m.running = true
			w.log.Info("migration ready monitor started: under "+coordination.ClientVersionUpgradeFrom2X+" the fleet's leader flips cv to "+
				coordination.ClientVersion3XWithRollback+" once the index is ACTIVE and every lease owner reports worker metrics",
				"every", m.interval, "stable", m.stab.Window)
			// The first check an interval after the start, as
			// startMonitor schedules it.
			continue
		}
		if err := m.check(ctx); err != nil && ctx.Err() == nil {
			// As the KCL's monitor: logged, tried again at the next check.
			w.log.Warn("migration ready check failed; trying again at the next check", "err", err)
		}
	}
}

// stop forgets the monitor's state when the table leaves UPGRADE_FROM_2X.
func (m *migrationMonitor) stop() {
	if m.running {
		m.w.log.Info("migration ready monitor stopped: cv is no longer "+coordination.ClientVersionUpgradeFrom2X, "cv", m.w.currentMode().ClientVersion)
	}
	m.running, m.leading, m.leaders, m.elections, m.lastFailed = false, false, nil, 0, ""
	m.stab.Reset()
}

// check is MigrationReadyMonitor.run: on a non-leader it resets the
// stabilizer; on the leader it judges readiness and flips when due.
func (m *migrationMonitor) check(ctx context.Context) error {
	w := m.w
	leading := m.isLeader(ctx)
	if leading != m.leading {
		m.leading = leading
		if leading {
			w.log.Info("this worker leads the 2.x fleet (DeterministicShuffleShardSyncLeaderDecider): it runs the migration ready checks", "leaders", m.leaders)
		} else {
			w.log.Info("this worker no longer leads the 2.x fleet: migration ready checks stop here", "leaders", m.leaders)
		}
	}
	if !leading {
		m.stab.Reset()
		return nil
	}
	ctx = leasecore.WithCapacityOp(ctx, leasecore.OpOther)
	st, err := w.detectMode(ctx)
	if err != nil {
		return err
	}
	if st.ClientVersion != coordination.ClientVersionUpgradeFrom2X {
		m.stab.Reset()
		return nil // modeLoop follows it at its next read
	}
	ready, err := m.readiness(ctx, st)
	if err != nil {
		return err
	}
	now := w.clock.Now()
	due, held := m.stab.Observe(ready.Ready(), now)
	if failed := ready.Failed(); failed != m.lastFailed {
		m.lastFailed = failed
		if failed != "" {
			w.log.Info("migration ready check failed: the "+m.stab.Window.String()+" wait starts again once it passes", "failed", failed)
		} else {
			w.log.Info("migration ready checks pass: the index is ACTIVE and every lease owner reports worker metrics", "owners", len(ready.Owners), "flipAfter", m.stab.Window)
		}
	}
	if !due {
		return nil
	}
	w.log.Info("migration ready checks passed for the whole wait: flipping cv", "to", coordination.ClientVersion3XWithRollback, "held", held.Round(time.Second))
	err = coordination.FlipTo3XWithRollback(ctx, w.leaseDDB, w.kcl3Tables(), st, w.cfg.WorkerID, now)
	switch {
	case errors.Is(err, coordination.ErrMigrationStateChanged):
		// A rollback, an operator or another leader wrote first: nothing
		// was overwritten; the next read follows what it wrote.
		w.log.Info("cv changed before the flip was written; following it at the next mode check", "err", err)
		m.stab.Reset()
		return nil
	case err != nil:
		return err
	}
	w.log.Info("cv flipped: the fleet moves to leader-assigned leases (KCL 3.x) at its next mode check",
		"from", coordination.ClientVersionUpgradeFrom2X, "to", coordination.ClientVersion3XWithRollback, "table", st.ClientVersionIn)
	m.stab.Reset()
	return nil
}

// readiness reads what isReadyForUpgradeTo3x reads: the index status (in
// st, from Detect), and only when it is ACTIVE every lease and every
// worker's metrics, fresh.
func (m *migrationMonitor) readiness(ctx context.Context, st coordination.State) (coordination.MigrationReadiness, error) {
	w := m.w
	if st.Index != "ACTIVE" {
		return coordination.CheckMigrationReady(st.Index, nil, nil, w.clock.Now(), m.expiry), nil
	}
	res, err := leasecore.ScanTable(ctx, w.ddb, w.cfg.Table, leasecore.ScanOptions{ConsistentRead: true,
		Sleep: func(ctx context.Context, d time.Duration) error { return clock.Sleep(ctx, w.clock, d) }})
	if err != nil {
		return coordination.MigrationReadiness{}, err
	}
	read, _ := st.ForReading(len(res.NonLeases))
	metrics, err := coordination.WorkerMetricsFromScan(ctx, w.ddb, w.kcl3Tables(), read, res.NonLeases)
	if err != nil {
		return coordination.MigrationReadiness{}, err
	}
	return coordination.CheckMigrationReady(st.Index, res.Leases, metrics, w.clock.Now(), m.expiry), nil
}

// isLeader is DeterministicShuffleShardSyncLeaderDecider.isLeader: the
// leaders elected from the lease owners, again when none were (every
// worker leads then), and on the decider's schedule.
func (m *migrationMonitor) isLeader(ctx context.Context) bool {
	now := m.w.clock.Now()
	if len(m.leaders) == 0 || !now.Before(m.nextElection) {
		if owners, ok := m.owners(ctx); ok {
			m.leaders = coordination.ShuffleLeaders(owners, coordination.ShuffleLeaderCount)
			// The decider's first scheduled election is a minute after the
			// first, then every five minutes.
			next := m.interval
			if m.elections > 0 {
				next = 5 * m.interval
			}
			m.elections++
			m.nextElection = now.Add(next)
		}
	}
	return coordination.IsShuffleLeader(m.leaders, m.w.cfg.WorkerID)
}

// owners lists the lease owners from the taker's last scan, read anew
// only when there is none recent (listLeases in the KCL's decider).
func (m *migrationMonitor) owners(ctx context.Context) ([]string, bool) {
	w := m.w
	res, ok := leasecore.ScanResult{}, false
	if w.coord != nil { // set before the loop starts
		res, ok = w.coord.LatestScan(m.interval)
	}
	if !ok {
		var err error
		res, err = leasecore.ScanTable(leasecore.WithCapacityOp(ctx, leasecore.OpOther), w.ddb, w.cfg.Table, leasecore.ScanOptions{
			Sleep: func(ctx context.Context, d time.Duration) error { return clock.Sleep(ctx, w.clock, d) }})
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("migration ready monitor: could not list the leases to elect the 2.x fleet's leader", "err", err)
			}
			return nil, false
		}
	}
	owners := make([]string, 0, len(res.Leases))
	for _, l := range res.Leases {
		owners = append(owners, l.LeaseOwner) // ShuffleLeaders drops "" and duplicates
	}
	return owners, true
}
