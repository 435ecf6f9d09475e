package reshard

import (
	"fmt"
	"math/big"
	"sort"

	"github.com/kcltool/kcltool/leasecore"
)

// checkTiling reports whether the ranges cover 0..2^128-1 exactly once, the
// check KCL's isHashRangeOfShardsComplete makes before creating the first
// leases: a listing taken mid-reshard can miss or duplicate part of the key
// space, and leases built on it would lose or repeat records.
func checkTiling(ranges map[string]leasecore.HashRange) error {
	if len(ranges) == 0 {
		return fmt.Errorf("no shards")
	}
	ids := make([]string, 0, len(ranges))
	for id := range ranges {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if c := ranges[ids[i]].Start.Cmp(ranges[ids[j]].Start); c != 0 {
			return c < 0
		}
		return ids[i] < ids[j]
	})
	next := new(big.Int)
	for i, id := range ids {
		r := ranges[id]
		switch c := r.Start.Cmp(next); {
		case c > 0:
			return fmt.Errorf("hash keys %s..%s belong to no shard (before %s)", next, new(big.Int).Sub(r.Start, big.NewInt(1)), id)
		case c < 0:
			return fmt.Errorf("shard %s overlaps %s", id, ids[i-1])
		}
		next = new(big.Int).Add(r.End, big.NewInt(1))
	}
	if next.Cmp(leasecore.KeySpace) != 0 {
		return fmt.Errorf("hash keys %s..%s belong to no shard", next, leasecore.MaxHashKey)
	}
	return nil
}
