package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/internal/buildinfo"
)

func runVersion(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := cmdutil.NewFactory(&cmdutil.IOStreams{Out: &out, ErrOut: &errOut}, func(string) string { return "" })
	code = Run(context.Background(), f, append([]string{"version"}, args...))
	return out.String(), errOut.String(), code
}

// TestVersionCommand: `kcltool version -o json` prints every documented
// key, in the documented order, with what internal/buildinfo reads; the
// table shows the same; any other -o is a usage error.
func TestVersionCommand(t *testing.T) {
	want := buildinfo.Read()

	out, errOut, code := runVersion(t, "-o", "json")
	if code != 0 || errOut != "" {
		t.Fatalf("version -o json: exit %d, stderr %q", code, errOut)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	var keys []string
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("version -o json is not one object: %q", out)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip any
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	if doc := schemaPaths("version"); !slices.Equal(keys, doc) {
		t.Errorf("version -o json keys %v, docs/json.md documents %v", keys, doc)
	}
	var got VersionJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got != versionJSON(want) || got.Version == "" || got.Commit == "" || got.OS == "" || got.Arch == "" {
		t.Errorf("version -o json = %+v, buildinfo.Read() = %+v", got, want)
	}

	out, _, code = runVersion(t)
	if code != 0 {
		t.Fatalf("version: exit %d", code)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, " ")
		rows[k] = strings.TrimSpace(v)
	}
	for k, v := range map[string]string{"version": want.Version, "commit": want.Commit, "go": want.GoVersion, "platform": want.OS + "/" + want.Arch} {
		if rows[k] != v {
			t.Errorf("version's table says %s %q, want %q:\n%s", k, rows[k], v, out)
		}
	}

	if _, errOut, code = runVersion(t, "-o", "csv"); code != cmdutil.ExitUsage || !strings.Contains(errOut, `invalid --output "csv": use table or json`) {
		t.Errorf("version -o csv: exit %d, stderr %q; want 2 and the formats", code, errOut)
	}
}
