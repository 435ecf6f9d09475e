package inspect

import "testing"

// The automatic probe concurrency grows with the shards to read, one lane
// per ShardsPerProbeLane, between the floor and the cap, and never exceeds
// the shards themselves.
func TestProbeConcurrencyFollowsShardCount(t *testing.T) {
	for _, c := range []struct{ shards, want int }{
		{0, 1}, {1, 1}, {3, 3}, {8, 8}, {9, 8}, {200, 8}, {201, 9}, {500, 20},
		{1000, 40}, {1600, 64}, {2000, 64}, {100000, 64},
	} {
		if got := ProbeConcurrency(c.shards); got != c.want {
			t.Errorf("ProbeConcurrency(%d) = %d, want %d", c.shards, got, c.want)
		}
	}
}
