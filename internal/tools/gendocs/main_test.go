package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestReferenceDoesNotDependOnTheMachine generates the reference twice, from
// different working directories, home directories and environments, and
// fails when a byte differs: a flag default computed from where kcltool runs
// would make `make docs-check` fail on every other machine.
func TestReferenceDoesNotDependOnTheMachine(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for i, out := range []string{a, b} {
		t.Chdir(t.TempDir())
		t.Setenv("HOME", t.TempDir())
		t.Setenv("XDG_STATE_HOME", t.TempDir())
		t.Setenv("TERM", []string{"xterm-256color", "dumb"}[i])
		t.Setenv("KCLTOOL_APP", []string{"orders", "audit"}[i])
		if err := generate(out); err != nil {
			t.Fatal(err)
		}
	}
	files := readTree(t, a)
	other := readTree(t, b)
	if len(files) == 0 || len(files) != len(other) {
		t.Fatalf("generated %d and %d files", len(files), len(other))
	}
	for name, body := range files {
		if !bytes.Equal(body, other[name]) {
			t.Errorf("%s differs between two machines' runs", name)
		}
	}
	if _, ok := files[filepath.Join("man", "kcltool.1")]; !ok {
		t.Error("no man page for kcltool")
	}
	if _, ok := files[filepath.Join("cli", "kcltool_run.md")]; !ok {
		t.Error("no markdown page for kcltool run")
	}
}

// TestManPagesCarryThePinnedDate checks that the header holds manDate, not
// the day the generator ran.
func TestManPagesCarryThePinnedDate(t *testing.T) {
	out := t.TempDir()
	if err := generate(out); err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(filepath.Join(out, "man", "kcltool.1"))
	if err != nil {
		t.Fatal(err)
	}
	want := []byte(`.TH "KCLTOOL" "1" "` + manDate.Format("Jan 2006") + `" "kcltool" "kcltool manual"`)
	if !bytes.Contains(body, want) {
		t.Errorf("kcltool.1 has no header %s:\n%s", want, body[:min(len(body), 200)])
	}
}

func readTree(t *testing.T, root string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		files[rel], err = os.ReadFile(path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
