package coordination

import (
	"slices"
	"unicode/utf16"
)

// The leader of a fleet under CLIENT_VERSION_UPGRADE_FROM_2X (and 2X) is
// not the lock holder but the KCL 2.x shard-sync leader,
// DeterministicShuffleShardSyncLeaderDecider: every worker lists the
// leases, takes their distinct owners sorted, shuffles them with
// java.util.Random(1947) and counts the first N as leaders (the Scheduler
// of KCL 3.5.1 gives N = 1). Each worker computes it alone; a Java worker
// and a kcltool worker reading the same owners agree only if the sort and
// the shuffle are Java's bit for bit, which this file ports.

// ShuffleLeaderSeed is DeterministicShuffleShardSyncLeaderDecider.DETERMINISTIC_SHUFFLE_SEED.
const ShuffleLeaderSeed = 1947

// ShuffleLeaderCount is numPeriodicShardSyncWorkers as the KCL 3.5.1
// Scheduler builds the decider (deterministicLeaderDeciderCreator: 1).
const ShuffleLeaderCount = 1

// ShuffleLeaders are the leaders DeterministicShuffleShardSyncLeaderDecider.electLeaders
// elects among the lease owners (duplicates and "" ignored): the distinct
// owners in Java's String order, shuffled by Collections.shuffle with
// new Random(ShuffleLeaderSeed), the first n of them.
func ShuffleLeaders(owners []string, n int) []string {
	seen := map[string]bool{}
	var hosts []string
	for _, o := range owners {
		if o != "" && !seen[o] {
			seen[o] = true
			hosts = append(hosts, o)
		}
	}
	slices.SortFunc(hosts, javaStringCompare)
	javaShuffle(hosts, newJavaRandom(ShuffleLeaderSeed))
	return hosts[:min(n, len(hosts))]
}

// IsShuffleLeader is isWorkerLeaderForShardSync: with no leader elected
// (no lease has an owner) every worker counts as a leader.
func IsShuffleLeader(leaders []string, worker string) bool {
	return len(leaders) == 0 || slices.Contains(leaders, worker)
}

// javaStringCompare is String.compareTo: UTF-16 code units compared in
// order, then the lengths. It differs from Go's byte order for characters
// above U+FFFF against U+E000–U+FFFF.
func javaStringCompare(a, b string) int {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := range min(len(ua), len(ub)) {
		if ua[i] != ub[i] {
			return int(ua[i]) - int(ub[i])
		}
	}
	return len(ua) - len(ub)
}

// javaRandom is java.util.Random's 48-bit linear congruential generator.
type javaRandom struct{ seed int64 }

const (
	javaRandMultiplier = 0x5DEECE66D
	javaRandAddend     = 0xB
	javaRandMask       = 1<<48 - 1
)

// newJavaRandom is new Random(seed): the seed scrambled (initialScramble).
func newJavaRandom(seed int64) *javaRandom {
	return &javaRandom{seed: (seed ^ javaRandMultiplier) & javaRandMask}
}

// next is Random.next(bits); int64 overflow wraps as Java's long does.
func (r *javaRandom) next(bits uint) int32 {
	r.seed = (r.seed*javaRandMultiplier + javaRandAddend) & javaRandMask
	return int32(r.seed >> (48 - bits))
}

// nextInt is Random.nextInt(): 32 random bits.
func (r *javaRandom) nextInt() int32 { return r.next(32) }

// nextIntn is Random.nextInt(bound): a power of two takes the high bits;
// otherwise draws that would bias the remainder are rejected, the test
// overflowing in 32 bits as Java's int does.
func (r *javaRandom) nextIntn(bound int32) int32 {
	x := r.next(31)
	m := bound - 1
	if bound&m == 0 {
		return int32((int64(bound) * int64(x)) >> 31)
	}
	for u := x; ; u = r.next(31) {
		x = u % bound
		if u-x+m >= 0 {
			return x
		}
	}
}

// javaShuffle is Collections.shuffle(list, rnd): from the end, each
// position swapped with one drawn below it.
func javaShuffle(s []string, r *javaRandom) {
	for i := len(s); i > 1; i-- {
		j := r.nextIntn(int32(i))
		s[i-1], s[j] = s[j], s[i-1]
	}
}
