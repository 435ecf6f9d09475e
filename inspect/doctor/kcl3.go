package doctor

import (
	"context"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/coordination"
)

// kcl3State is what the window shows of KCL 3.x's coordination entities
// (docs/kcl-compat.md, KCL 3.x items): the leader lock, worker metrics and
// the migration state, read in both layouts as the KCL reads them
// (coordination.Detect, ReadLock, ListWorkerMetrics): the side tables of
// KCL 3.0–3.4 and of tm INIT/DEPLOYED, the lease table of tm COMPLETE and
// of new 3.5 applications, and both merged during tm PENDING, when the
// lock is still in <app>-CoordinatorState.
type kcl3State struct {
	present bool
	// coord is what coordination.Detect found: cv, tm, the index, the layout.
	coord coordination.State
	// lockTable is where the lock was read ("" without one).
	lockTable string
	leader    string
	// leaderLease is the lock's leaseDuration: the DynamoDB lock client
	// takes over a lock whose version did not change for that long.
	leaderLease time.Duration
	// leaderUnchanged is how long the lock's recordVersionNumber has been
	// the same, watched across the reads (a watch keeps watching it across
	// windows); zero when seen once.
	leaderUnchanged time.Duration
	leaderVersion   string
	metrics         []coordination.WorkerMetrics
	// legacyCoordKeys are the keys in <app>-CoordinatorState other than
	// the lock and TableMigration3.5, read only during tm PENDING (the
	// leader's isLegacyCoordinatorStateEmpty).
	legacyCoordKeys []string
	// tmAt is TableMigration3.5's mts: when tm was last written.
	tmAt time.Time
}

// coordTables names the application's tables as the KCL does.
func (d *Doctor) coordTables() coordination.Tables {
	return coordination.DefaultTables(d.opt.Table, d.opt.App)
}

// detect reads the application's KCL 3.x state once per window of reads:
// cv and tm move in minutes, and a watch need not ask at every read.
// Counted in reads, not time, so that what a run costs does not depend on
// how long its scans took.
func (d *Doctor) detect(ctx context.Context, read bool) (coordination.State, error) {
	if read {
		d.readsSinceDetect++
	}
	if d.coord != nil && d.readsSinceDetect <= d.samplesPerWindow() {
		return *d.coord, nil
	}
	st, err := coordination.Detect(ctx, d.coordAPI, d.coordTables())
	if err != nil {
		return st, err
	}
	d.coord, d.readsSinceDetect = &st, 1
	return st, nil
}

// readLock reads the leader lock for one sample, wherever the layout keeps
// it, and follows its version: the lock item has no timestamp, so the only
// sign of a live leader is a version that changes (lock client heartbeats).
func (d *Doctor) readLock(ctx context.Context, s *sample) {
	st, err := d.detect(ctx, true)
	if err != nil {
		s.kcl3Err = err
		return
	}
	st, present := st.ForReading(len(s.nonLeases))
	if !present {
		return
	}
	lock, err := coordination.ReadLock(ctx, d.coordAPI, d.coordTables(), st)
	if err != nil {
		s.kcl3Err = err
		return
	}
	s.lock = &lock
	if !lock.Found {
		d.lockVersion, d.lockSince = "", time.Time{}
		return
	}
	if lock.Version != d.lockVersion || d.lockOwner != lock.Owner {
		d.lockVersion, d.lockOwner, d.lockSince = lock.Version, lock.Owner, s.at
	}
	s.lockSince = d.lockSince
}

// readKCL3 gathers the 3.x entities for a report: the lock of the last
// read, with how long its version has not moved, the worker metrics merged
// over both layouts, and the migration state.
func (d *Doctor) readKCL3(ctx context.Context, samples []sample) (kcl3State, error) {
	var st kcl3State
	last := samples[len(samples)-1]
	if last.kcl3Err != nil {
		return st, last.kcl3Err
	}
	coord, err := d.detect(ctx, false)
	if err != nil {
		return st, err
	}
	read, present := coord.ForReading(len(last.nonLeases))
	if !present {
		return st, nil
	}
	st.present, st.coord = true, coord
	if l := last.lock; l != nil && l.Found {
		st.leader, st.leaderLease, st.lockTable, st.leaderVersion = l.Owner, l.LeaseDuration, l.Table, l.Version
		if !last.lockSince.IsZero() {
			st.leaderUnchanged = last.at.Sub(last.lockSince)
		}
	}
	if d.following {
		// The lease table's metrics items come with the caller's scan: a
		// second, filtered Scan would cost the table as much again at every
		// refresh. The side table, while the KCL reads it, is read at each
		// report, since a cached item would look older than it is.
		st.metrics, err = coordination.WorkerMetricsFromScan(ctx, d.coordAPI, d.coordTables(), read, last.nonLeases)
	} else {
		st.metrics, err = coordination.ListWorkerMetrics(ctx, d.coordAPI, d.coordTables(), read)
	}
	if err != nil {
		return st, err
	}
	if coord.TableMigration != "" {
		st.tmAt, err = d.tableMigrationAt(ctx)
		if err != nil {
			return st, err
		}
	}
	if tmIs(coord.TableMigration, tmPending) && coord.SideTables {
		st.legacyCoordKeys, err = d.legacyCoordinatorKeys(ctx)
		if err != nil {
			return st, err
		}
	}
	return st, nil
}

// legacyCoordinatorKeys lists <app>-CoordinatorState's keys other than the
// ones TableMigrationStateMachineImpl.isLegacyCoordinatorStateEmpty
// ignores (the lock and TableMigration3.5): while any is left, the leader
// does not move tm from PENDING to COMPLETE.
func (d *Doctor) legacyCoordinatorKeys(ctx context.Context) ([]string, error) {
	items, err := d.scanLegacy(ctx, d.coordTables().CoordinatorState, "key")
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, it := range items {
		if it.Key != "Leader" && it.Key != "TableMigration3.5" {
			keys = append(keys, it.Key)
		}
	}
	return keys, nil
}

func attrS(item map[string]ddbtypes.AttributeValue, name string) string {
	if v, ok := item[name].(*ddbtypes.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}
