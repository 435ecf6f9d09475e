package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The release archives (.goreleaser.yaml) are built for linux, darwin and
// windows: the binary must compile for the two that CI does not run on.
// Windows has no process groups or rusage (runner/processor/procgroup_*.go,
// runner/metrics/cpu_*.go), so it fails first when a Unix-only call
// creeps into the binary's packages.
func TestBinaryBuildsForEveryReleaseOS(t *testing.T) {
	for _, target := range [][2]string{{"windows", "amd64"}, {"darwin", "arm64"}} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(t.TempDir(), "kcltool"), ".")
		cmd.Env = append(os.Environ(), "GOOS="+target[0], "GOARCH="+target[1], "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("GOOS=%s GOARCH=%s go build: %v\n%s", target[0], target[1], err, out)
		}
	}
}
