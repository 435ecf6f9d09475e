package reshard

import (
	"fmt"
	"slices"
	"testing"

	"github.com/kcltool/kcltool/leasecore"
)

func planned(cp string, ids ...int) []Planned {
	var out []Planned
	for _, id := range ids {
		out = append(out, Planned{ShardID: sid(id), Checkpoint: cp})
	}
	return out
}

func set(ids ...int) map[string]bool {
	m := map[string]bool{}
	for _, id := range ids {
		m[sid(id)] = true
	}
	return m
}

const (
	th = leasecore.TRIM_HORIZON
	lt = leasecore.LATEST
	at = leasecore.AT_TIMESTAMP
)

func TestPlanNewLeases(t *testing.T) {
	g := kclExample(t)
	tests := []struct {
		name    string
		leased  map[string]bool
		initial string
		want    []Planned
	}{
		// The three cases of KCL's own javadoc (leases 4, 5, 7).
		{"kcl javadoc LATEST", set(4, 5, 7), lt, planned(lt, 6)},
		{"kcl javadoc TRIM_HORIZON", set(4, 5, 7), th, planned(th, 0, 1)},
		{"kcl javadoc AT_TIMESTAMP", set(4, 5, 7), at, planned(at, 0, 1)},
		// Nothing leased: LATEST starts at the open tip, TRIM_HORIZON at
		// the roots, never at both.
		{"no lease LATEST", set(), lt, planned(lt, 4, 8, 9, 10)},
		{"no lease TRIM_HORIZON", set(), th, planned(th, 0, 1, 2, 3, 4, 5)},
		// Leased merge parents: the open child waits for their SHARD_END.
		{"parents leased", set(4, 6, 7, 9, 10), lt, nil},
		{"everything open leased", set(4, 8, 9, 10), th, nil},
		// First missing ancestor level: 0 is leased, so its co-parent 1 gets
		// a lease (at the initial position under LATEST: it is not a
		// descendant), and so does 7, the co-parent of 6 under 8.
		{"one root leased LATEST", set(0), lt, append(planned(lt, 1, 4, 7), planned(lt, 9, 10)...)},
		{"one root leased TRIM_HORIZON", set(0), th, planned(th, 1, 2, 3, 4, 5)},
		{"one root leased AT_TIMESTAMP", set(0), at, planned(at, 1, 2, 3, 4, 5)},
	}
	for _, tc := range tests {
		got := PlanNewLeases(g, tc.leased, tc.initial)
		if fmt.Sprint(sortedPlan(got)) != fmt.Sprint(sortedPlan(tc.want)) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
		assertParentsFirst(t, g, got)
	}
}

func sortedPlan(p []Planned) []Planned {
	p = slices.Clone(p)
	slices.SortFunc(p, func(a, b Planned) int {
		if a.ShardID < b.ShardID {
			return -1
		}
		return 1
	})
	return p
}

func assertParentsFirst(t *testing.T, g *Graph, p []Planned) {
	t.Helper()
	pos := map[string]int{}
	for i, x := range p {
		pos[x.ShardID] = i
	}
	for _, x := range p {
		for _, a := range g.Ancestors(x.ShardID) {
			if i, ok := pos[a]; ok && i > pos[x.ShardID] {
				t.Errorf("plan %v creates %s before its ancestor %s", p, x.ShardID, a)
			}
		}
	}
}

func TestPlanSkipsInconsistentChildren(t *testing.T) {
	g, err := NewGraph(inconsistentListing())
	if err != nil {
		t.Fatal(err)
	}
	if got := PlanNewLeases(g, set(7), lt); fmt.Sprint(got) != fmt.Sprint(planned(lt, 0)) {
		t.Errorf("got %v, want only the open parent", got)
	}
}

func TestPlanInitialLeases(t *testing.T) {
	g := kclExample(t)
	got := PlanInitialLeases(g, append(g.Roots(), "shardId-unknown"), th)
	if fmt.Sprint(got) != fmt.Sprint(planned(th, 0, 1, 2, 3, 4, 5)) {
		t.Errorf("got %v", got)
	}
	l, ok := NewLease(g, Stream{ID: "123456789012:orders:1700000000"}, sid(8), lt)
	start, end := part(0, 4)
	if !ok || l.LeaseKey != "123456789012:orders:1700000000:"+sid(8) || l.ShardID != sid(8) ||
		l.StreamName != "123456789012:orders:1700000000" || !slices.Equal(l.ParentShardIDs, sids(6, 7)) ||
		l.StartingHashKey != start || l.EndingHashKey != end || l.Checkpoint.SequenceNumber != lt || l.LeaseOwner != "" {
		t.Errorf("multi-stream lease = %+v", l)
	}
	if err := l.Validate(); err != nil {
		t.Error(err)
	}
}
