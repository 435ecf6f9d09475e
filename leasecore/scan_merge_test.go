package leasecore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMergeRunsSortsAcrossRuns merges runs in scan (hash) order, one run
// (sorted in place) and several, into one slice sorted by key with every
// item once.
func TestMergeRunsSortsAcrossRuns(t *testing.T) {
	for _, nruns := range []int{1, 2, 16} {
		var all []string
		runs := make([]sortedRun[string], nruns)
		for r := range runs {
			var items []string
			for range rand.IntN(50) {
				k := fmt.Sprintf("shardId-%012d", rand.IntN(1_000_000))
				if !slices.Contains(all, k) {
					items, all = append(items, k), append(all, k)
				}
			}
			runs[r] = sortRun(items, func(s *string) string { return *s })
		}
		got := mergeRuns(runs)
		slices.Sort(all)
		if len(all) == 0 {
			all = nil
		}
		if !slices.Equal(got, all) {
			t.Fatalf("%d runs: merged %v, want %v", nruns, got, all)
		}
	}
}
