package reset

import (
	"strings"
	"testing"
)

// Every entry that cannot be used is named with its line, item number,
// key and reason; entries marked malformed or non-lease are carried.
func TestReadExportNamesEveryInvalidEntry(t *testing.T) {
	lease := func(key, cp string) string {
		return `{"leaseKey":{"S":"` + key + `"},"leaseCounter":{"N":"1"},"checkpoint":{"S":"` + cp + `"},"checkpointSubSequenceNumber":{"N":"0"},"ownerSwitchesSinceCheckpoint":{"N":"0"}}`
	}
	doc := `{
  "format": "kcltool-lease-table-export",
  "version": 1,
  "table": "t",
  "exportedAt": "2026-11-01T10:00:00Z",
  "counts": {"leases": 0, "nonLeases": 0, "malformed": 0},
  "items": [
    {"leaseKey":"a","kind":"lease","checkpoint":"100","subSequenceNumber":0,"item":` + lease("a", "100") + `},
    {"leaseKey":"b","kind":"lease","item":{"leaseKey":{"S":"b"},"leaseCounter":{"S":"x"}}},
    {"leaseKey":"c","kind":"lease","item":` + lease("d", "100") + `},
    {"leaseKey":"a","kind":"lease","item":` + lease("a", "100") + `},
    {"leaseKey":"e","kind":"lease","checkpoint":"999","item":` + lease("e", "100") + `},
    {"leaseKey":"f","kind":"lease","item":{"leaseKey":{"Q":"f"}}},
    {"leaseKey":"g","kind":"other","item":` + lease("g", "100") + `},
    {"leaseKey":7},
    {"leaseKey":"m","kind":"malformed","error":"leaseCounter has type S","item":{"leaseKey":{"S":"m"},"leaseCounter":{"S":"x"}}},
    {"leaseKey":"Leader","kind":"non-lease","entityType":"LEADER","item":{"leaseKey":{"S":"Leader"},"entityType":{"S":"LEADER"}}}
  ]
}`
	e, err := ReadExport([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range e.Invalid {
		got = append(got, it.String())
	}
	for i, want := range []string{
		"line 9, item 2 (b): KCL could not read the item",
		`line 10, item 3 (c): leaseKey "c" does not match the item's leaseKey "d"`,
		"line 11, item 4 (a): leaseKey appears twice (first at line 8, item 1)",
		`line 12, item 5 (e): checkpoint "999", but the item's checkpoint is "100"`,
		"line 13, item 6 (f): the item is not DynamoDB JSON",
		`line 14, item 7 (g): kind "other" is none of lease, non-lease, malformed`,
		"line 15, item 8 (leaseKey unknown): leaseKey, kind and checkpoint must be strings",
	} {
		if i >= len(got) || !strings.HasPrefix(got[i], want) {
			t.Errorf("invalid entry %d: got %v, want %q", i, got, want)
		}
	}
	if len(got) != 7 {
		t.Errorf("%d invalid entries, want 7: %v", len(got), got)
	}
	kinds := map[string]string{}
	for _, it := range e.Items {
		kinds[it.LeaseKey] = it.Kind
	}
	if len(kinds) != 3 || kinds["a"] != KindLease || kinds["m"] != KindMalformed || kinds["Leader"] != KindNonLease {
		t.Errorf("items %v, want a lease, m malformed and Leader non-lease", kinds)
	}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "m", "Leader"} {
		if !e.Names(k) {
			t.Errorf("the file names %s, Names says not", k)
		}
	}
	if e.Names("z") || len(e.UnnamedInvalid()) != 1 {
		t.Errorf("Names(z) %v, unnamed %v", e.Names("z"), e.UnnamedInvalid())
	}
}
