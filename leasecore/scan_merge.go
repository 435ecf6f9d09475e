package leasecore

import (
	"slices"
	"strings"
)

// sortedRun is one segment's items with their order by key: the items stay
// where the scan put them, and only the order is sorted, because a lease is
// some 400 bytes and sorting moves what it sorts many times over.
type sortedRun[T any] struct {
	items []T
	keys  []string // keys[i] is items[i]'s key
	order []int32  // indexes into items, by key
}

// sortRun orders items by key.
func sortRun[T any](items []T, key func(*T) string) sortedRun[T] {
	r := sortedRun[T]{items: items, keys: make([]string, len(items)), order: make([]int32, len(items))}
	for i := range items {
		r.keys[i], r.order[i] = key(&items[i]), int32(i)
	}
	slices.SortFunc(r.order, func(a, b int32) int { return strings.Compare(r.keys[a], r.keys[b]) })
	return r
}

// mergeRuns is every run's items in one slice sorted by key, each copied
// once. A lease table has up to 16 segments (SegmentsFor), so the smallest
// head is found by looking at each; nil when there are no items.
func mergeRuns[T any](runs []sortedRun[T]) []T {
	n := 0
	for _, r := range runs {
		n += len(r.items)
	}
	if n == 0 {
		return nil
	}
	if len(runs) == 1 {
		return permute(runs[0].items, runs[0].order)
	}
	out := make([]T, 0, n)
	pos := make([]int, len(runs))
	for len(out) < n {
		best := -1
		for i, r := range runs {
			if pos[i] < len(r.order) && (best < 0 || r.keys[r.order[pos[i]]] < runs[best].keys[runs[best].order[pos[best]]]) {
				best = i
			}
		}
		r := runs[best]
		out = append(out, r.items[r.order[pos[best]]])
		pos[best]++
	}
	return out
}

// permute puts items in order in place, following each cycle of the
// permutation with one spare item, so that a table read in one segment is
// not copied whole once more; it consumes order.
func permute[T any](items []T, order []int32) []T {
	for start := range order {
		if order[start] < 0 || int(order[start]) == start {
			continue
		}
		spare := items[start]
		i := start
		for {
			next := int(order[i])
			order[i] = -1
			if next == start {
				items[i] = spare
				break
			}
			items[i] = items[next]
			i = next
		}
	}
	return items
}
