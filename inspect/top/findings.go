package top

import (
	"slices"

	"github.com/kcltool/kcltool/inspect/doctor"
)

// attach gives every shard the doctor findings that name it, by shard id
// or by lease key, and returns them all, in doctor's order (worst first).
// Every finding `kcltool doctor` would report over the same reads is here:
// the view runs doctor's checks (doctor.Follower), not a copy of them.
func attach(shards []Shard, found []doctor.Finding) []Finding {
	out := make([]Finding, 0, len(found))
	for _, f := range found {
		out = append(out, Finding{ID: f.ID, Severity: f.Severity, Summary: f.Summary,
			Shards: f.Evidence.Shards, Workers: f.Evidence.Workers})
	}
	for i := range shards {
		sh := &shards[i]
		for _, f := range out {
			if slices.Contains(f.Shards, sh.Key) || (sh.id != sh.Key && slices.Contains(f.Shards, sh.id)) {
				sh.Findings = append(sh.Findings, f)
			}
		}
	}
	return out
}
