package checkpoint

import (
	"slices"

	"github.com/kcltool/kcltool/inspect"
)

// filterLag keeps the rows lag's --shard and --state ask for: a shard by
// its id or lease key, a state by the word its STATE column starts with.
// The probes were made for every shard (a state needs them, and a blocked
// child needs its parents'); the summary, --fail-on and --max-behind see
// only the rows kept.
func filterLag(l *inspect.Lag, shards, states []string) {
	if len(shards) == 0 && len(states) == 0 {
		return
	}
	l.Rows = slices.DeleteFunc(l.Rows, func(r inspect.LagRow) bool {
		if len(states) > 0 && !slices.Contains(states, string(r.State)) {
			return true
		}
		if len(shards) > 0 {
			key := ""
			if r.Lease != nil {
				key = r.Lease.LeaseKey
			}
			return !slices.Contains(shards, r.ShardID) && (key == "" || !slices.Contains(shards, key))
		}
		return false
	})
}
