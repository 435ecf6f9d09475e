package doctor

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestChecksShuffled runs the table in random (seeded) orders over facts on
// which every check finds something, and gets the same findings each time:
// no check depends on another having run before it. no-workers needs a
// table no worker owns anything in, which everything() cannot be (most
// checks need owners), so a stopped fleet's facts are shuffled too.
func TestChecksShuffled(t *testing.T) {
	stopped := func() *facts { return handBuilt(4, still("s1", ""), still("s2", "")) }
	for _, c := range checks {
		if len(c.run(everything())) == 0 && len(c.run(stopped())) == 0 {
			t.Errorf("check %s finds nothing in the shuffle test's facts: an order dependency of it would not show", c.name)
		}
	}
	for _, facts := range []func() *facts{everything, stopped} {
		want := runChecks(facts(), checks)
		// Fresh facts for every order: a check that left something in the
		// facts for a later one would otherwise pass on what an earlier run left.
		fc := facts()
		for seed := range uint64(40) {
			order := slices.Clone(checks)
			rand.New(rand.NewPCG(seed, 24)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			if got := runChecks(facts(), order); !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d: order %v gives other findings:\n got %s\nwant %s", seed, names(order), summaries(got), summaries(want))
			}
		}
		// The same facts, run again and again, give the same findings.
		for range 3 {
			runChecks(fc, checks)
		}
		if again := runChecks(fc, append(slices.Clone(checks), checks...)); !reflect.DeepEqual(again, want) {
			t.Fatalf("every check twice gives other findings:\n got %s\nwant %s", summaries(again), summaries(want))
		}
	}
}

// TestChecksOrphanLeftToStuckShard: a lease held still on a shard whose
// reads fail is reported as stuck, and not again as an orphan, whatever
// the order of the two checks (the finding kinesisStuck was made for).
func TestChecksOrphanLeftToStuckShard(t *testing.T) {
	for _, order := range [][]check{checks, reversed(checks)} {
		found := runChecks(everything(), order)
		stuck, orphan := findingOf(found, FindStuckShard, "s-orph"), findingOf(found, FindOrphanLease, "s-orph")
		if stuck == nil || orphan != nil {
			t.Fatalf("order %v: s-orph stuck %v, orphan %v; want stuck only", names(order), stuck != nil, orphan != nil)
		}
		if findingOf(found, FindOrphanLease, "s-gone") == nil {
			t.Fatalf("order %v: the plain orphan s-gone is not reported: %s", names(order), summaries(found))
		}
	}
}

// TestDedupFindings: equal findings collapse to one, findings that differ
// in any field stay.
func TestDedupFindings(t *testing.T) {
	a := Finding{ID: FindShardLag, Summary: "x", Evidence: Evidence{Shards: []string{"s1"}, Values: map[string]float64{"n": 1}}}
	b := a
	b.Evidence = Evidence{Shards: []string{"s2"}, Values: map[string]float64{"n": 1}}
	got := dedupFindings([]Finding{a, b, a, b, a})
	if !reflect.DeepEqual(got, []Finding{a, b}) {
		t.Fatalf("got %+v", got)
	}
	twice := runChecks(everything(), []check{{"stuck", checkStuck}, {"stuck", checkStuck}})
	if once := runChecks(everything(), []check{{"stuck", checkStuck}}); !reflect.DeepEqual(twice, once) || len(once) == 0 {
		t.Fatalf("a check listed twice: %s, once: %s", summaries(twice), summaries(once))
	}
}

func reversed(cs []check) []check {
	out := slices.Clone(cs)
	slices.Reverse(out)
	return out
}

func names(cs []check) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.name)
	}
	return out
}

func summaries(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Severity.String()+" "+f.ID+": "+f.Summary)
	}
	return out
}

// findingOf is the finding of that id naming the shard, or nil.
func findingOf(fs []Finding, id, shard string) *Finding {
	for i, f := range fs {
		if f.ID == id && slices.Contains(f.Evidence.Shards, shard) {
			return &fs[i]
		}
	}
	return nil
}
