package coordination

import (
	"slices"
	"testing"
)

// The expected values below were printed by OpenJDK 17.0.15 running the
// KCL's own calls (new Random(seed).nextInt(), nextInt(bound),
// Collections.sort then Collections.shuffle(list, new Random(1947))), from
// a throwaway Java file:
//
//	Random r = new Random(1947);
//	for (int i = 0; i < 8; i++) print(r.nextInt(7 - (i % 5)));
//	r = new Random(1947); for (int i = 0; i < 6; i++) print(r.nextInt(16));
//	List<String> l = new ArrayList<>(owners); Collections.sort(l);
//	Collections.shuffle(l, new Random(1947)); print(l);
//
// new Random(42).nextInt() = -1170105035 and new Random(0).nextInt() =
// -1155484576 are also the values Java's documentation examples and
// countless answers quote, a check independent of that run.

func TestJavaRandomMatchesJava(t *testing.T) {
	if got := newJavaRandom(42).nextInt(); got != -1170105035 {
		t.Errorf("new Random(42).nextInt() = %d, want -1170105035", got)
	}
	if got := newJavaRandom(0).nextInt(); got != -1155484576 {
		t.Errorf("new Random(0).nextInt() = %d, want -1155484576", got)
	}
	// Bounds 7, 6, 5, 4 (a power of two: the other branch), 3, 7, 6, 5.
	r := newJavaRandom(ShuffleLeaderSeed)
	var got []int32
	for i := range 8 {
		got = append(got, r.nextIntn(int32(7-i%5)))
	}
	if want := []int32{1, 1, 0, 1, 1, 6, 3, 0}; !slices.Equal(got, want) {
		t.Errorf("new Random(1947).nextInt(bound) = %v, want %v", got, want)
	}
	r, got = newJavaRandom(ShuffleLeaderSeed), nil
	for range 6 {
		got = append(got, r.nextIntn(16))
	}
	if want := []int32{10, 5, 0, 4, 7, 7}; !slices.Equal(got, want) {
		t.Errorf("new Random(1947).nextInt(16) = %v, want %v", got, want)
	}
}

func TestShuffleLeadersMatchesJava(t *testing.T) {
	workers := []string{"worker-0", "worker-1", "worker-2", "worker-3", "worker-4", "worker-5", "worker-6", "worker-7", "worker-8", "worker-9"}
	for _, c := range []struct {
		owners []string
		want   []string // the whole shuffled list as Java printed it
	}{
		{[]string{"a"}, []string{"a"}},
		{[]string{"b", "a", "b", ""}, []string{"a", "b"}},
		{[]string{"w2", "w3", "w1", "w1"}, []string{"w3", "w1", "w2"}},
		{workers, []string{"worker-8", "worker-5", "worker-1", "worker-6", "worker-9", "worker-4", "worker-2", "worker-0", "worker-7", "worker-3"}},
		// Java sorts by UTF-16 code units: U+1F600 (a surrogate pair,
		// 0xD83D…) sorts before U+FF41; Go's byte order puts it after.
		{[]string{"\U0001F600", "a", "B", "\uFF41"}, []string{"\uFF41", "B", "a", "\U0001F600"}},
	} {
		if got := ShuffleLeaders(c.owners, len(c.want)); !slices.Equal(got, c.want) {
			t.Errorf("ShuffleLeaders(%q) = %q, want %q", c.owners, got, c.want)
		}
		if got := ShuffleLeaders(c.owners, ShuffleLeaderCount); !slices.Equal(got, c.want[:1]) {
			t.Errorf("ShuffleLeaders(%q, 1) = %q, want %q", c.owners, got, c.want[:1])
		}
	}
	if got := ShuffleLeaders(nil, 1); len(got) != 0 {
		t.Errorf("no owners: leaders %q, want none", got)
	}
}

func TestIsShuffleLeader(t *testing.T) {
	if !IsShuffleLeader(nil, "w1") {
		t.Error("no leader elected: every worker leads (isWorkerLeaderForShardSync)")
	}
	if IsShuffleLeader([]string{"w2"}, "w1") || !IsShuffleLeader([]string{"w2"}, "w2") {
		t.Error("only the elected worker leads")
	}
}
