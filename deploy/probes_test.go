package deploy

import (
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/internal/testenv/proctest"
)

// The probes of the Kubernetes and ECS examples answer 200 on a worker
// started with the example's command line and settings: the same flags and
// KCLTOOL_* variables, but the local servers' stream and table (the
// example's --app and --stream name AWS ones), --metrics-addr on a free
// port (the examples' port equals the probes', TestExamplesSettingsAndGrace),
// a handler that reads its batch, and --create-table.
func TestExamplesProbesAnswer(t *testing.T) {
	k, _, _ := loadKubernetes(t)
	e, _ := loadECS(t)
	for _, ex := range []example{k, e} {
		t.Run(ex.name, func(t *testing.T) {
			if len(ex.probes) == 0 {
				t.Fatal("no probes")
			}
			st := emulator.NewStack(t, 2, emulator.StackOptions{NoTable: true})
			w := startExample(t, ex, st)
			addr := w.metricsAddr(t)
			for _, p := range ex.probes {
				url := "http://" + addr + p.path
				var last string
				ok := waitFor(60*time.Second, func() bool {
					resp, err := http.Get(url)
					if err != nil {
						last = err.Error()
						return false
					}
					resp.Body.Close()
					last = resp.Status
					return resp.StatusCode == http.StatusOK
				})
				if !ok {
					t.Fatalf("%s %s: no 200 within 60s; last answer: %s", p.kind, url, last)
				}
			}
			// And the worker stops cleanly within the example's stop time.
			if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case <-w.done:
			case <-time.After(ex.stop):
				t.Fatalf("still running %s after SIGTERM: the orchestrator would kill it", ex.stop)
			}
			if w.err != nil {
				t.Errorf("exit after SIGTERM: %v", w.err)
			}
		})
	}
}

type exampleWorker struct {
	cmd  *exec.Cmd
	logs *proctest.Output
	done chan struct{}
	err  error
}

// localArgs is the example's command line for the local servers.
func localArgs(ex example, st emulator.Stack) []string {
	args := slices.Clone(ex.args)
	handler := []string{"sh", "-c", "cat >/dev/null"}
	if i := slices.Index(args, "--"); i >= 0 {
		args = append(args[:i+1], handler...)
	} else {
		args = append(args, append([]string{"--"}, handler...)...)
	}
	for i := 0; i < len(args) && args[i] != "--"; i++ {
		switch {
		case args[i] == "--metrics-addr" && i+1 < len(args):
			args[i+1] = "127.0.0.1:0"
		case strings.HasPrefix(args[i], "--metrics-addr="):
			args[i] = "--metrics-addr=127.0.0.1:0"
		}
	}
	return slices.Insert(args, 1, "--app", st.Table, "--stream", st.Stream, "--create-table")
}

func startExample(t *testing.T, ex example, st emulator.Stack) *exampleWorker {
	t.Helper()
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, ex.env...)
	env = append(env, emulator.Env(t)...)
	// The flags above win over KCLTOOL_APP and KCLTOOL_STREAM; these win
	// over the example's values.
	env = append(env, "KCLTOOL_REGION="+emulator.Region, "KCLTOOL_METRICS_ADDR=127.0.0.1:0", "KCLTOOL_LOG_FORMAT=json")
	cmd := exec.Command(builtBinary(t), localArgs(ex, st)...)
	cmd.Env = env
	w := &exampleWorker{cmd: cmd, logs: &proctest.Output{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = w.logs, w.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { w.err = cmd.Wait(); close(w.done) }()
	t.Cleanup(func() {
		select {
		case <-w.done:
		default:
			_ = cmd.Process.Kill()
			<-w.done
		}
		if t.Failed() {
			t.Logf("kcltool %s\n---- its log ----\n%s", strings.Join(cmd.Args[1:], " "), w.logs.String())
		}
	})
	return w
}

var metricsURL = regexp.MustCompile(`"url":"http://([^/"]+)/metrics"`)

// metricsAddr is the address the worker's log says it serves on.
func (w *exampleWorker) metricsAddr(t *testing.T) string {
	t.Helper()
	var addr string
	ok := waitFor(30*time.Second, func() bool {
		select {
		case <-w.done:
			t.Fatalf("kcltool exited: %v", w.err)
		default:
		}
		if m := metricsURL.FindStringSubmatch(w.logs.String()); m != nil {
			addr = m[1]
			return true
		}
		return false
	})
	if !ok {
		t.Fatal("no log line names the metrics address within 30s")
	}
	return addr
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
	return true
}
