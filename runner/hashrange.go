package runner

import (
	"crypto/md5"
	"fmt"
	"math/big"
)

// maxHashKey is 2^128-1, the top of the Kinesis hash key space.
var maxHashKey = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(1))

// HashRange is the inclusive range of hash keys a shard (and so its lease)
// covers. The zero value is the whole key space [0, 2^128-1], which is what
// KCL falls back to when it does not know the shard's range.
type HashRange struct {
	start, end *big.Int // nil: 0 and 2^128-1
}

// NewHashRange parses a lease's or shard's startingHashKey and endingHashKey
// (decimal strings). Both empty means the range is unknown, which gives the
// whole key space, as KCL's AggregatorUtil.deaggregate(records) does.
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
	return HashRange{start: s, end: e}, nil
}

// Contains reports whether k lies in the range, bounds included.
func (h HashRange) Contains(k *big.Int) bool {
	start, end := h.start, h.end
	if start == nil {
		if k.Sign() < 0 {
			return false
		}
	} else if k.Cmp(start) < 0 {
		return false
	}
	if end == nil {
		end = maxHashKey
	}
	return k.Cmp(end) <= 0
}

// String shows the range as start..end.
func (h HashRange) String() string {
	start, end := h.start, h.end
	if start == nil {
		start, end = new(big.Int), maxHashKey
	}
	return start.String() + ".." + end.String()
}

// partitionKeyHash is the hash key Kinesis derives from a partition key:
// the MD5 of its UTF-8 bytes read as an unsigned 128-bit integer.
func partitionKeyHash(pk string) *big.Int {
	sum := md5.Sum([]byte(pk))
	return new(big.Int).SetBytes(sum[:])
}

// parseExplicitHashKey reads an explicit hash key the way Java's
// new BigInteger(String) does: optional sign, decimal digits. A negative or
// oversized key is valid here and simply falls outside every shard.
// (Java also accepts non-ASCII Unicode digits; no producer writes those.)
func parseExplicitHashKey(s string) (*big.Int, error) {
	k, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return nil, fmt.Errorf("explicit hash key %q is not a decimal integer", s)
	}
	return k, nil
}
