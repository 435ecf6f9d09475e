package leasecore

import (
	"fmt"
	"math/big"
)

// KeySpace is the number of hash keys Kinesis routes: 2^128 (keys run from
// 0 to 2^128-1).
var KeySpace = new(big.Int).Lsh(big.NewInt(1), 128)

// MaxHashKey is the last hash key, 2^128-1.
var MaxHashKey = new(big.Int).Sub(KeySpace, big.NewInt(1))

// HashRange is the inclusive range of hash keys a shard (and so its lease)
// covers. The keys exceed 64 bits, hence big.Int; KCL stores them as decimal
// strings. A nil Start is 0 and a nil End is 2^128-1, so the zero value is
// the whole key space, which is what KCL falls back to when it does not know
// the shard's range. It lives here, beside the lease's startingHashKey and
// endingHashKey, because both the consumer (de-aggregation) and reshard
// (lineage, lease creation) use it.
type HashRange struct {
	Start, End *big.Int
}

// NewHashRange parses a lease's startingHashKey and endingHashKey (decimal
// strings) for the consumer. Both empty means the range is unknown, which
// gives the whole key space, as KCL's AggregatorUtil.deaggregate(records)
// does. Unlike ParseHashRange it does not bound the keys to the key space:
// a lease's range only filters records, and KCL does not check it either.
func NewHashRange(start, end string) (HashRange, error) {
	if start == "" && end == "" {
		return HashRange{}, nil
	}
	s, ok := new(big.Int).SetString(start, 10)
	if !ok {
		return HashRange{}, fmt.Errorf("startingHashKey %q is not a decimal integer", start)
	}
	e, ok := new(big.Int).SetString(end, 10)
	if !ok {
		return HashRange{}, fmt.Errorf("endingHashKey %q is not a decimal integer", end)
	}
	if s.Cmp(e) > 0 {
		return HashRange{}, fmt.Errorf("startingHashKey %s is above endingHashKey %s", start, end)
	}
	return HashRange{Start: s, End: e}, nil
}

// ParseHashRange parses decimal hash keys as Kinesis and the lease table
// spell them, requiring 0 <= start <= end <= 2^128-1: a shard listing with
// anything else cannot be trusted to build leases from.
func ParseHashRange(start, end string) (HashRange, error) {
	s, ok1 := new(big.Int).SetString(start, 10)
	e, ok2 := new(big.Int).SetString(end, 10)
	if !ok1 || !ok2 {
		return HashRange{}, fmt.Errorf("hash range %q..%q is not decimal", start, end)
	}
	if s.Sign() < 0 || e.Cmp(MaxHashKey) > 0 || s.Cmp(e) > 0 {
		return HashRange{}, fmt.Errorf("hash range %s..%s is outside 0..2^128-1 or reversed", start, end)
	}
	return HashRange{Start: s, End: e}, nil
}

// bounds are Start and End with nil read as the ends of the key space.
func (h HashRange) bounds() (start, end *big.Int) {
	start, end = h.Start, h.End
	if start == nil {
		start = new(big.Int)
	}
	if end == nil {
		end = MaxHashKey
	}
	return start, end
}

// Contains reports whether k lies in the range, bounds included.
func (h HashRange) Contains(k *big.Int) bool {
	if h.Start == nil {
		if k.Sign() < 0 {
			return false
		}
	} else if k.Cmp(h.Start) < 0 {
		return false
	}
	end := h.End
	if end == nil {
		end = MaxHashKey
	}
	return k.Cmp(end) <= 0
}

// Size is the number of hash keys in the range.
func (h HashRange) Size() *big.Int {
	start, end := h.bounds()
	n := new(big.Int).Sub(end, start)
	return n.Add(n, big.NewInt(1))
}

// Share is the fraction of the whole key space the range covers, 0..1. A
// shard's share is the fraction of uniformly spread partition keys it gets.
func (h HashRange) Share() float64 {
	f, _ := new(big.Rat).SetFrac(h.Size(), KeySpace).Float64()
	return f
}

// String renders the range as "start..end".
func (h HashRange) String() string {
	start, end := h.bounds()
	return start.String() + ".." + end.String()
}
