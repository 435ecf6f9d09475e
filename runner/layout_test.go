package runner

import (
	"go/build"
	"slices"
	"strings"
	"testing"
)

// runner's sub-packages are the parts the shard lifecycle drives: none
// imports runner, processor and metrics import no other part of it, and
// retrieval only metrics (it counts its reads); retrieval's tests also
// import processor, whose encoders its pipeline benchmarks end with. The
// lifecycle of the next worker protocol is meant to plug into them
// without them knowing it.
func TestSubpackagesImportNoLifecycle(t *testing.T) {
	const mod = "github.com/kcltool/kcltool/runner"
	allowed := map[string][]string{
		"processor": nil,
		"metrics":   nil,
		"retrieval": {mod + "/metrics"},
	}
	testsAlso := map[string][]string{"retrieval": {mod + "/processor"}}
	for dir, ok := range allowed {
		for _, tests := range []bool{false, true} {
			if tests {
				ok = append(slices.Clip(ok), testsAlso[dir]...)
			}
			p, err := build.ImportDir(dir, 0)
			if err != nil {
				t.Fatal(err)
			}
			imports := p.Imports
			if tests {
				imports = p.TestImports
			}
			for _, imp := range imports {
				if (imp == mod || strings.HasPrefix(imp, mod+"/")) && !slices.Contains(ok, imp) {
					t.Errorf("runner/%s imports %s (tests %v): only %v may be", dir, imp, tests, ok)
				}
			}
		}
	}
}
