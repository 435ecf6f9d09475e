package watch

import (
	"reflect"
	"testing"
)

func row(key string, kv ...string) Row {
	r := Row{Key: key}
	for i := 0; i+1 < len(kv); i += 2 {
		r.Fields = append(r.Fields, Field{Name: kv[i], Value: kv[i+1]})
	}
	return r
}

func TestDiff(t *testing.T) {
	prev := []Row{
		row("shard-0", "owner", "a", "checkpoint", "1"),
		row("shard-1", "owner", "b", "checkpoint", "5"),
		row("shard-2", "owner", "c", "checkpoint", "7"),
	}
	next := []Row{
		row("shard-0", "owner", "a", "checkpoint", "1"), // unchanged: no line
		row("shard-1", "owner", "a", "checkpoint", "6"), // two fields
		row("shard-3", "owner", "", "checkpoint", "TRIM_HORIZON"),
	}
	got := Diff(prev, next)
	want := []Change{
		{Type: Modified, Row: next[1], Changed: []FieldChange{{"owner", "b", "a"}, {"checkpoint", "5", "6"}}},
		{Type: Added, Row: next[2]},
		{Type: Deleted, Row: prev[2]},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Diff:\n got %+v\nwant %+v", got, want)
	}
}

func TestDiffNothingChanged(t *testing.T) {
	rows := []Row{row("a", "x", "1"), row("b", "x", "2")}
	// Object is never compared: the caller's row may differ in what is not
	// watched (a lease counter).
	again := []Row{row("a", "x", "1"), row("b", "x", "2")}
	again[0].Object = 42
	if got := Diff(rows, again); len(got) != 0 {
		t.Fatalf("Diff of equal reads = %+v, want none", got)
	}
	if got := Diff(nil, nil); len(got) != 0 {
		t.Fatalf("Diff(nil, nil) = %+v", got)
	}
}

func TestDiffFieldsByName(t *testing.T) {
	// Fields in another order, one gone, one new: compared by name.
	prev := []Row{row("k", "a", "1", "b", "2", "gone", "x")}
	next := []Row{row("k", "b", "2", "a", "1", "new", "y")}
	got := Diff(prev, next)
	want := []FieldChange{{"new", "", "y"}, {"gone", "x", ""}}
	if len(got) != 1 || got[0].Type != Modified || !reflect.DeepEqual(got[0].Changed, want) {
		t.Fatalf("Diff = %+v, want one MODIFIED with %+v", got, want)
	}
}

func TestDiffDuplicateKeys(t *testing.T) {
	prev := []Row{row("k", "a", "1"), row("k", "a", "1"), row("gone", "a", "1"), row("gone", "a", "1")}
	next := []Row{row("k", "a", "1")}
	got := Diff(prev, next)
	if len(got) != 1 || got[0].Type != Deleted || got[0].Row.Key != "gone" {
		t.Fatalf("Diff = %+v, want one DELETED gone", got)
	}
}

func TestInitialAndName(t *testing.T) {
	rows := []Row{{Key: "acct:s:1:shardId-0", Label: "shardId-0"}, {Key: "w"}}
	got := Initial(rows)
	if len(got) != 2 || got[0].Type != Added || got[1].Row.Key != "w" {
		t.Fatalf("Initial = %+v", got)
	}
	if rows[0].Name() != "shardId-0" || rows[1].Name() != "w" {
		t.Fatalf("Name = %q, %q", rows[0].Name(), rows[1].Name())
	}
}
