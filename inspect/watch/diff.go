// Package watch turns repeated reads of a listing into change events, as
// `kubectl get -w` does: a row appeared (ADDED), went (DELETED), or one of
// its watched fields changed (MODIFIED, with the fields from and to). It
// knows nothing of leases or shards: the caller keys its rows and picks the
// fields worth a line (a lease's counter, which every renewal moves, is
// not one). Run is the loop: one read per interval on an injected clock.
package watch

// Field is one watched value of a row. Value is any canonical encoding of
// it (the callers use its JSON text): two reads differ where the strings
// do.
type Field struct {
	Name, Value string
}

// Row is one item of a read, identified by Key across reads.
type Row struct {
	Key string
	// Label is what a person reads it as (a shard id where Key is a
	// multi-stream lease key); Key when empty.
	Label string
	// Fields are compared between reads, by name, in this order.
	Fields []Field
	// Object is the caller's full row, carried to the printer and never
	// compared.
	Object any
}

// Name is the row's label, or its key without one.
func (r Row) Name() string {
	if r.Label != "" {
		return r.Label
	}
	return r.Key
}

// Type is what happened to a row between two reads.
type Type string

// The change types, kubectl's watch event names.
const (
	Added    Type = "ADDED"
	Modified Type = "MODIFIED"
	Deleted  Type = "DELETED"
)

// FieldChange is one field of a MODIFIED row, from its old to its new value.
type FieldChange struct {
	Name, From, To string
}

// Change is one row's change. Row is the new row, or the last one seen for
// DELETED. Changed lists the fields that moved (MODIFIED only).
type Change struct {
	Type    Type
	Row     Row
	Changed []FieldChange
}

// Diff compares two reads keyed by Row.Key: first the rows of next in its
// order (ADDED or MODIFIED), then the rows of prev that next lacks
// (DELETED) in prev's order. A row whose watched fields are all equal is
// not a change. A key seen twice in one read counts once, the last one.
func Diff(prev, next []Row) []Change {
	old := make(map[string]Row, len(prev))
	for _, r := range prev {
		old[r.Key] = r
	}
	var out []Change
	seen := make(map[string]bool, len(next))
	for _, r := range next {
		seen[r.Key] = true
		o, ok := old[r.Key]
		if !ok {
			out = append(out, Change{Type: Added, Row: r})
			continue
		}
		if changed := diffFields(o.Fields, r.Fields); len(changed) > 0 {
			out = append(out, Change{Type: Modified, Row: r, Changed: changed})
		}
	}
	for _, r := range prev {
		if !seen[r.Key] {
			seen[r.Key] = true // once, however often prev lists it
			out = append(out, Change{Type: Deleted, Row: r})
		}
	}
	return out
}

// diffFields lists the fields of next whose value differs from prev's
// field of the same name; a field only one side has counts as changed
// from or to "".
func diffFields(prev, next []Field) []FieldChange {
	var out []FieldChange
	for i, f := range next {
		from, ok := "", false
		// The same order on both sides is the rule: look there first.
		if i < len(prev) && prev[i].Name == f.Name {
			from, ok = prev[i].Value, true
		} else {
			from, ok = lookup(prev, f.Name)
		}
		if !ok || from != f.Value {
			out = append(out, FieldChange{Name: f.Name, From: from, To: f.Value})
		}
	}
	for _, f := range prev {
		if _, ok := lookup(next, f.Name); !ok {
			out = append(out, FieldChange{Name: f.Name, From: f.Value})
		}
	}
	return out
}

func lookup(fields []Field, name string) (string, bool) {
	for _, f := range fields {
		if f.Name == name {
			return f.Value, true
		}
	}
	return "", false
}

// Initial is the first read as changes: every row ADDED, in order.
func Initial(rows []Row) []Change {
	out := make([]Change, 0, len(rows))
	for _, r := range rows {
		out = append(out, Change{Type: Added, Row: r})
	}
	return out
}
