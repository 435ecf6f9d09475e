package reshard

import (
	"fmt"
	"math/big"
	"sort"
)

// keySpace is the number of hash keys Kinesis routes: 2^128 (keys run from
// 0 to 2^128-1).
var keySpace = new(big.Int).Lsh(big.NewInt(1), 128)

// maxHashKey is the last hash key, 2^128-1.
var maxHashKey = new(big.Int).Sub(keySpace, big.NewInt(1))

// HashRange is a shard's inclusive range of hash keys. The keys exceed 64
// bits, hence big.Int; KCL stores them as decimal strings.
type HashRange struct {
	Start, End *big.Int
}

// ParseHashRange parses decimal hash keys as Kinesis and the lease table
// spell them, requiring 0 <= start <= end <= 2^128-1.
func ParseHashRange(start, end string) (HashRange, error) {
	s, ok1 := new(big.Int).SetString(start, 10)
	e, ok2 := new(big.Int).SetString(end, 10)
	if !ok1 || !ok2 {
		return HashRange{}, fmt.Errorf("hash range %q..%q is not decimal", start, end)
	}
	if s.Sign() < 0 || e.Cmp(maxHashKey) > 0 || s.Cmp(e) > 0 {
		return HashRange{}, fmt.Errorf("hash range %s..%s is outside 0..2^128-1 or reversed", start, end)
	}
	return HashRange{Start: s, End: e}, nil
}

// Size is the number of hash keys in the range.
func (r HashRange) Size() *big.Int {
	n := new(big.Int).Sub(r.End, r.Start)
	return n.Add(n, big.NewInt(1))
}

// Share is the fraction of the whole key space the range covers, 0..1. A
// shard's share is the fraction of uniformly spread partition keys it gets.
func (r HashRange) Share() float64 {
	f, _ := new(big.Rat).SetFrac(r.Size(), keySpace).Float64()
	return f
}

// String renders the range as "start..end".
func (r HashRange) String() string {
	return r.Start.String() + ".." + r.End.String()
}

// checkTiling reports whether the ranges cover 0..2^128-1 exactly once, the
// check KCL's isHashRangeOfShardsComplete makes before creating the first
// leases: a listing taken mid-reshard can miss or duplicate part of the key
// space, and leases built on it would lose or repeat records.
func checkTiling(ranges map[string]HashRange) error {
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
	if next.Cmp(keySpace) != 0 {
		return fmt.Errorf("hash keys %s..%s belong to no shard", next, maxHashKey)
	}
	return nil
}
