package reset

import (
	"sort"

	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// Liveness is what two reads of a lease table some time apart say about the
// application: a lease counter that moved was renewed, taken or
// checkpointed in between, so some worker is running (KCL's own expiry rule,
// docs/kcl-compat.md, Expiry, seen from the other side).
type Liveness struct {
	// Moved are the keys of the leases whose counter moved, sorted.
	Moved []string
	// Workers are their owners as of the second read, sorted.
	Workers []string
}

// Live reports whether any counter moved.
func (l Liveness) Live() bool { return len(l.Moved) > 0 }

func compareReads(before, after leasecore.ScanResult) Liveness {
	prev := reshard.ByKey(before.Leases)
	workers := map[string]bool{}
	var live Liveness
	for _, l := range after.Leases {
		p, ok := prev[l.LeaseKey]
		if !ok || p.LeaseCounter == l.LeaseCounter {
			continue
		}
		live.Moved = append(live.Moved, l.LeaseKey)
		for _, w := range []string{l.LeaseOwner, l.CheckpointOwner} {
			if w != "" {
				workers[w] = true
			}
		}
	}
	for w := range workers {
		live.Workers = append(live.Workers, w)
	}
	sort.Strings(live.Moved)
	sort.Strings(live.Workers)
	return live
}
