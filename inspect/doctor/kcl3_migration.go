package doctor

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/inspect"
)

// tmPending and tmIs name TableMigration3.5's states for readKCL3.
const tmPending = coordination.TableMigrationPending

func tmIs(tm, status string) bool { return inspect.TMIs(tm, status) }

// checkMigration reports the client-version and table migrations: the cv
// and tm states and who blocks the leader's next step, by the rules of
// MigrationReadyMonitor (cv) and TableMigrationStateMachineImpl (tm).
func checkMigration(fc *facts) []Finding {
	st := fc.kcl3
	c := st.coord
	lines := []string{fmt.Sprintf("Migration3.0 cv: %s", orNone(c.ClientVersion))}
	if c.ClientVersion != "" && !c.ClientVersionAt.IsZero() {
		lines[0] += fmt.Sprintf(" (set by %s %s ago)", orNone(c.ClientVersionBy), roundDur(fc.now.Sub(c.ClientVersionAt)))
	}
	tmLine := "TableMigration3.5 tm: " + orNone(c.TableMigration)
	if !st.tmAt.IsZero() {
		tmLine += fmt.Sprintf(" (written %s ago)", roundDur(fc.now.Sub(st.tmAt)))
	}
	lines = append(lines, tmLine, "LeaseOwnerToLeaseKeyIndex: "+orNone(c.Index), fmt.Sprintf("side tables: %v", c.SideTables))
	steps := inspect.MigrationSteps(migrationFacts(fc))
	if len(steps) == 0 && c.ClientVersion != coordination.ClientVersion2X {
		return nil // a 3.x fleet with nothing to migrate: nothing to say
	}
	f := Finding{ID: FindKCL3Migration, Severity: SeverityInfo,
		Cause: "KCL 3.x moves a fleet in steps the leader takes when every worker is ready: the client version (cv, 2.x → 3.x) and, from KCL 3.5, the table migration (tm, side tables → lease table)",
		Fix:   "nothing",
	}
	blocked, overdue := 0, false
	var workers, next []string
	for _, s := range steps {
		line := "next: " + s.Name
		if s.Note != "" {
			line += "; " + s.Note
		}
		lines = append(lines, line)
		for _, b := range s.Blockers {
			lines = append(lines, "  blocked by "+b)
		}
		blocked += len(s.Blockers)
		overdue = overdue || s.Overdue
		workers = append(workers, s.Workers...)
		next = append(next, s.Name)
	}
	slices.Sort(workers)
	workers = slices.Compact(workers)
	f.Evidence = Evidence{Lines: lines, Workers: workers, Values: map[string]float64{"blockers": float64(blocked)}}
	switch {
	case len(steps) == 0:
		f.Summary = fmt.Sprintf("KCL 3.x migration: cv %s, rolled back to the 2.x protocol; no step pending", c.ClientVersion)
	case blocked == 0:
		f.Summary = fmt.Sprintf("KCL 3.x migration: next %s; nothing blocks it", strings.Join(next, "; "))
	default:
		f.Summary = fmt.Sprintf("KCL 3.x migration: next %s; %s blocks it", strings.Join(next, "; "), plural(blocked, "condition"))
		f.Fix = "make every lease owner report fresh worker metrics (a worker without them is dead, or not a 3.x worker: restart or upgrade it), wait for the index to become ACTIVE, and deploy the migration's configuration to every worker; docs/doctor.md, kcl3-migration"
		if overdue {
			f.Severity = SeverityWarn
			f.Cause = "the leader has been waiting longer than the KCL's own wait for this step; the blockers below are what holds it: " + f.Cause
		}
	}
	return []Finding{f}
}

// migrationFacts hands inspect.MigrationSteps what doctor read.
func migrationFacts(fc *facts) inspect.MigrationFacts {
	return inspect.MigrationFacts{
		Coord: fc.kcl3.coord, TMAt: fc.kcl3.tmAt, Metrics: fc.kcl3.metrics,
		Leases: fc.last.leases, UnexpiredOwners: unexpiredOwners(fc),
		LegacyCoordKeys: fc.kcl3.legacyCoordKeys,
		Tables:          coordination.DefaultTables(fc.opt.Table, fc.opt.App),
		Now:             fc.now,
	}
}

// unexpiredOwners are the owners of leases neither expired nor unassigned
// (Lease.isExpiredOrUnassigned), as the last read shows them.
func unexpiredOwners(fc *facts) []string {
	set := map[string]bool{}
	for _, r := range fc.rows {
		if r.LeaseOwner != "" && r.State != inspect.StateExpired {
			set[r.LeaseOwner] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
