package top

import (
	"sort"
	"strings"

	"github.com/kcltool/kcltool/inspect/top"
)

// sortColumns are the columns the s key cycles through, in order.
var sortColumns = []string{"shard", "state", "owner", "rec/s", "lag", "checkpoint"}

// viewState is what the keys change: how rows are sorted and filtered,
// whether refreshes are paused and whether help is shown.
type viewState struct {
	sortBy int  // index into sortColumns
	desc   bool // reversed
	filter string
	paused bool
	help   bool
	// typing: the / prompt is open and input holds what was typed so far.
	typing bool
	input  string
}

// visible returns the snapshot's shards filtered and sorted for the view.
// The filter matches a shard id, a worker or a state, as a substring.
func (v viewState) visible(shards []top.Shard) []top.Shard {
	var out []top.Shard
	f := strings.ToLower(v.filter)
	for _, sh := range shards {
		if f == "" || strings.Contains(strings.ToLower(sh.Key), f) || strings.Contains(strings.ToLower(sh.Owner), f) || strings.Contains(sh.State, f) {
			out = append(out, sh)
		}
	}
	less := func(a, b *top.Shard) int {
		switch sortColumns[v.sortBy] {
		case "state":
			return strings.Compare(a.State, b.State)
		case "owner":
			return strings.Compare(a.Owner, b.Owner)
		case "rec/s":
			return cmpFloat(rate(a), rate(b))
		case "lag":
			return cmpFloat(behind(a), behind(b))
		case "checkpoint":
			return cmpFloat(a.SinceCheckpoint.Seconds(), b.SinceCheckpoint.Seconds())
		}
		return 0
	}
	sort.SliceStable(out, func(i, j int) bool {
		c := less(&out[i], &out[j])
		if c == 0 {
			// Ties keep shard order, whichever way the column runs.
			return out[i].Stream+out[i].Key < out[j].Stream+out[j].Key
		}
		if v.desc {
			return c > 0
		}
		return c < 0
	})
	return out
}

func rate(s *top.Shard) float64 {
	if s.RecordsPerSec == nil {
		return -1
	}
	return *s.RecordsPerSec
}

func behind(s *top.Shard) float64 {
	if s.Behind == nil {
		return -1
	}
	return s.Behind.Seconds()
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
