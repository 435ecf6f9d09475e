package runner

import (
	"math/big"
	"testing"

	"github.com/kcltool/kcltool/leasecore"
)

// half is 2^127: the first of two even halves of the key space ends at
// half-1.
var half = new(big.Int).Lsh(big.NewInt(1), 127)

func rangeLease(key, start, end string, shardEnd bool) leasecore.Lease {
	l := leasecore.Lease{LeaseKey: key, StartingHashKey: start, EndingHashKey: end}
	l.Checkpoint.SequenceNumber = "TRIM_HORIZON"
	if shardEnd {
		l.Checkpoint.SequenceNumber = "SHARD_END"
	}
	return l
}

// checkForHoleInHashKeyRanges' rules, one case each.
func TestHashRangeHole(t *testing.T) {
	max := leasecore.MaxHashKey.String()
	h := half.String()
	h1 := new(big.Int).Sub(half, big.NewInt(1)).String()
	h2 := new(big.Int).Sub(half, big.NewInt(2)).String()
	cases := []struct {
		name   string
		leases []leasecore.Lease
		hole   bool
	}{
		{"whole key space, one lease", []leasecore.Lease{rangeLease("a", "0", max, false)}, false},
		{"two halves meeting", []leasecore.Lease{rangeLease("b", h, max, false), rangeLease("a", "0", h1, false)}, false},
		{"overlap merges", []leasecore.Lease{rangeLease("a", "0", h, false), rangeLease("b", h1, max, false)}, false},
		{"a gap of one key", []leasecore.Lease{rangeLease("a", "0", h2, false), rangeLease("b", h, max, false)}, true},
		{"the start missing", []leasecore.Lease{rangeLease("b", h, max, false)}, true},
		{"the end missing", []leasecore.Lease{rangeLease("a", "0", h1, false)}, true},
		{"a SHARD_END lease does not cover", []leasecore.Lease{rangeLease("a", "0", h1, true), rangeLease("b", h, max, false)}, true},
		{"no lease with a range", []leasecore.Lease{rangeLease("a", "", "", false)}, true},
	}
	for _, c := range cases {
		if got := hashRangeHole(c.leases); (got != "") != c.hole {
			t.Errorf("%s: hole %q, want hole %v", c.name, got, c.hole)
		}
	}
}

// HashRangeHoleTracker: the same hole 3 audits in a row syncs; another
// hole starts the count again; no hole clears it.
func TestShardAuditConfidence(t *testing.T) {
	var a shardAudit
	steps := []struct {
		hole string
		sync bool
	}{{"x", false}, {"x", false}, {"y", false}, {"y", false}, {"y", true}, {"y", true}, {"", false}, {"y", false}}
	for i, s := range steps {
		if got, _ := a.seeHole("s", s.hole); got != s.sync {
			t.Errorf("audit %d (hole %q): sync %v, want %v", i+1, s.hole, got, s.sync)
		}
	}
}
