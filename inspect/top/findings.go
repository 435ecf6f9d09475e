package top

import (
	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/inspect/doctor"
)

// FindingsOf are the doctor findings (docs/doctor.md, same ids) that this
// view's own reads decide for one shard, without doctor's window of reads
// and CloudWatch: shard-lag (further behind than MaxBehind), stuck-shard
// (behind with a checkpoint unmoved for StuckAfter), blocked-child,
// missing-lease, orphan-lease, unassigned-leases and handoff (an expired
// lease shows in its state; which worker is dead or struggling is doctor's). `kcltool doctor` runs the
// rest.
func FindingsOf(sh *Shard, opt Options) []Finding {
	var out []Finding
	add := func(id string, sev doctor.Severity) { out = append(out, Finding{ID: id, Severity: sev}) }
	switch sh.State {
	case string(inspect.LagBlocked):
		add(doctor.FindBlockedChild, doctor.SeverityWarn)
	case string(inspect.LagMissingLease):
		add(doctor.FindMissingLease, doctor.SeverityWarn)
	case string(inspect.LagOrphanLease):
		add(doctor.FindOrphanLease, doctor.SeverityInfo)
	case string(inspect.StateUnassigned):
		add(doctor.FindUnassigned, doctor.SeverityWarn)
	case string(inspect.StateHandoff):
		add(doctor.FindHandoff, doctor.SeverityInfo)
	}
	if sh.Behind != nil && *sh.Behind > 0 && sh.Owner != "" && sh.SinceCheckpoint >= opt.StuckAfter {
		add(doctor.FindStuckShard, doctor.SeverityCritical)
	} else if sh.Behind != nil && *sh.Behind > opt.MaxBehind {
		add(doctor.FindShardLag, doctor.SeverityWarn)
	}
	return out
}
