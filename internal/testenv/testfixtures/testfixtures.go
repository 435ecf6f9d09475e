// Package testfixtures locates the repository's KCL lease-table fixtures
// (testdata/kcl) for the tests of every package, wherever they run from.
package testfixtures

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Dir returns the absolute path of testdata/kcl. The path is taken from this
// source file's location, so it holds in any package's test binary.
func Dir(tb testing.TB) string {
	tb.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("testfixtures: cannot locate the source file")
	}
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "kcl")
	if _, err := os.Stat(dir); err != nil {
		tb.Fatalf("testfixtures: the KCL fixtures are missing at %s: %v", dir, err)
	}
	return dir
}

// Read returns the bytes of one fixture file.
func Read(tb testing.TB, name string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(Dir(tb), name))
	if err != nil {
		tb.Fatalf("testfixtures: %v", err)
	}
	return data
}
