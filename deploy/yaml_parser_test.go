package deploy

import (
	"reflect"
	"strings"
	"testing"
)

func TestYAMLSubsetReadsTheManifestShape(t *testing.T) {
	src := `# comment
a: 1
b:
  c: "x # not a comment"
  d: 'it''s'
list:
- name: K
  value: v # comment
- plain
nested:
  - - no
`
	// The last item, a sequence inside a sequence item on one line, is
	// outside the subset.
	if _, err := parseYAML(src); err == nil || !strings.Contains(err.Error(), "sequence inside") {
		t.Errorf("want the nested one-line sequence refused, got %v", err)
	}
	src = strings.Replace(src, "nested:\n  - - no\n", "empty: {}\nnone:\n---\nkind: Two\n", 1)
	docs, err := parseYAML(src)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{
		map[string]any{"a": "1", "b": map[string]any{"c": "x # not a comment", "d": "it's"},
			"list":  []any{map[string]any{"name": "K", "value": "v"}, "plain"},
			"empty": map[string]any{}, "none": nil},
		map[string]any{"kind": "Two"},
	}
	if !reflect.DeepEqual(docs, want) {
		t.Errorf("got %#v\nwant %#v", docs, want)
	}
}

// What the subset does not read is an error, never a guess.
func TestYAMLSubsetRefusesTheRest(t *testing.T) {
	for name, src := range map[string]string{
		"tab":             "a:\n\tb: 1\n",
		"anchor":          "a: &x 1\n",
		"alias":           "a: *x\n",
		"flow sequence":   "a: [1, 2]\n",
		"flow mapping":    "a: {b: 1}\n",
		"block scalar":    "a: |\n  text\n",
		"duplicate key":   "a: 1\na: 2\n",
		"bad indentation": "a:\n    b: 1\n  c: 2\n",
		"open quote":      "a: \"x\n",
		"colon in plain":  "a: b: c\n",
		"not a mapping":   "a: 1\njust text\n",
	} {
		if _, err := parseYAML(src); err == nil {
			t.Errorf("%s: %q parsed", name, src)
		}
	}
}
