// Package deploy holds no code: its tests check the repository's Dockerfile
// and the deployment examples below this folder against the kcltool binary
// (docs/deploy.md).
package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

func TestMain(m *testing.M) {
	code := m.Run()
	emulator.StopAll()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := emulator.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// The build arguments builtBinary gives the Dockerfile's build line.
const (
	testVersion = "v0.0.0-deploytest"
	testCommit  = "0123456789abcdef0123456789abcdef01234567"
)

var built struct {
	once      sync.Once
	dir, path string
	err       string
}

// builtBinary is kcltool built by the Dockerfile's own go build line (its
// RUN, run by sh with the build arguments set and -o redirected to a
// temporary folder), once per test binary: the tests then check the binary
// the image holds, not one built some other way.
func builtBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		root := repoRoot(t)
		b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
		if err != nil {
			built.err = err.Error()
			return
		}
		stages, err := parseDockerfile(string(b))
		if err != nil {
			built.err = "Dockerfile: " + err.Error()
			return
		}
		_, run, ok := goBuild(stages)
		out := buildOutput.FindStringSubmatch(run.args)
		if !ok || out == nil {
			built.err = "the Dockerfile has no RUN ... go build ... -o PATH"
			return
		}
		if built.dir, err = os.MkdirTemp("", "kcltool-deploy-"); err != nil {
			built.err = err.Error()
			return
		}
		built.path = filepath.Join(built.dir, "kcltool")
		line := strings.Replace(run.args, "-o "+out[1], "-o "+built.path, 1)
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "TARGETOS="+runtime.GOOS, "TARGETARCH="+runtime.GOARCH,
			"VERSION="+testVersion, "COMMIT="+testCommit)
		if b, err := cmd.CombinedOutput(); err != nil {
			built.err = "the Dockerfile's build line " + line + ": " + err.Error() + "\n" + string(b)
		}
	})
	if built.err != "" {
		t.Fatal(built.err)
	}
	return built.path
}

// kcltool runs the built binary with only env (and PATH, HOME) in its
// environment and returns its stdout; a failure ends the test.
func kcltool(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out, errOut, err := kcltoolRun(t, env, args...)
	if err != nil {
		t.Fatalf("kcltool %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	return out
}

func kcltoolRun(t *testing.T, env []string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(builtBinary(t), args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}
