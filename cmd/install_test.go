package cmd

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// TestMakeInstall runs `make install` as a packager would (PREFIX, DESTDIR,
// a VERSION stamp) into a temporary root: the binary reports the stamped
// version, every man page and the bash, zsh and fish completions land where
// those shells look, byte for byte what the repository holds; `make
// uninstall` takes it all away again.
func TestMakeInstall(t *testing.T) {
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make is not installed")
	}
	root, err := emulator.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	destdir, prefix := filepath.Join(tmp, "stage"), "/opt/kcltool"
	const version = "v0.0.0-installtest"
	make := func(target string) {
		t.Helper()
		// BIN: the build goes to the temporary directory, not the work tree's bin/.
		cmd := exec.Command(mk, "--no-print-directory", target, "PREFIX="+prefix, "DESTDIR="+destdir,
			"VERSION="+version, "BIN="+filepath.Join(tmp, "build", "kcltool"))
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make %s: %v\n%s", target, err, out)
		}
	}
	make("install")

	base := filepath.Join(destdir, prefix)
	want := map[string]string{ // installed path under PREFIX: the repository's file
		"share/bash-completion/completions/kcltool":    "completions/kcltool.bash",
		"share/zsh/site-functions/_kcltool":            "completions/kcltool.zsh",
		"share/fish/vendor_completions.d/kcltool.fish": "completions/kcltool.fish",
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "man", "*.1"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no man pages in docs/man: %v", err)
	}
	for _, p := range pages {
		want[filepath.Join("share/man/man1", filepath.Base(p))] = filepath.Join("docs", "man", filepath.Base(p))
	}
	for installed, src := range want {
		got, err := os.ReadFile(filepath.Join(base, installed))
		if err != nil {
			t.Errorf("make install did not install %s: %v", installed, err)
			continue
		}
		orig, err := os.ReadFile(filepath.Join(root, src))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, orig) {
			t.Errorf("%s differs from %s", installed, src)
		}
	}

	bin := filepath.Join(base, "bin", "kcltool")
	if st, err := os.Stat(bin); err != nil || st.Mode().Perm()&0o111 == 0 {
		t.Fatalf("make install: %s missing or not executable (%v)", bin, err)
	}
	out, err := exec.Command(bin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("installed kcltool version: %v", err)
	}
	var v VersionJSON
	if err := json.Unmarshal(out, &v); err != nil || v.Version != version {
		t.Errorf("installed kcltool version -o json = %s (%v), want version %s from the Makefile's -ldflags", out, err, version)
	}

	make("uninstall")
	filepath.WalkDir(destdir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("make uninstall left %s", path)
		}
		return nil
	})
}
