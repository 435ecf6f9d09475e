package cmd

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// TestBenchRunManyShards is `make bench`'s figure for one worker holding
// many shards at the tip: 500 shards against 20 in the same run, with the
// idle benchmark's figures (CPU per read at the tip and per renewal, from
// the differences of three workers each: the defaults, fewer reads, fewer
// renewals), reads per second achieved, peak memory and goroutines. The
// goal is a per-read and per-renewal cost no higher at 500 shards than at
// 20, and under 300 MB.
//
// The three workers of a size run side by side, each its own process with
// its own lease table on the same stream, so that the benchmark keeps its
// time budget; CPU is each process's own. The window starts once each has
// read every shard once; after that only the first reads again. The
// window, 20 s, holds a whole number of renewal periods at both failover
// times (3.33 s and 20 s), so that the renewal counts do not depend on
// where it falls.
func TestBenchRunManyShards(t *testing.T) {
	if os.Getenv("KCLTOOL_BENCH") == "" {
		t.Skip("benchmark: run with KCLTOOL_BENCH=1 (make bench)")
	}
	bin := kcltoolBinary(t)
	kin := emulator.Kinesis(t)
	type costs struct{ read, renewal float64 }
	var per [2]costs
	names := []string{"defaults", "--idle-between-reads 5m", "--idle-between-reads 5m --failover-time 60s"}
	for i, shards := range []int{20, 500} {
		stream := emulator.Name(t, "many")
		emulator.CreateStream(t, kin, stream, int32(shards))
		// Other benchmarks in this binary share kinesis-local's 2,000 shards.
		t.Cleanup(func() {
			_, _ = kin.DeleteStream(context.Background(), &kinesis.DeleteStreamInput{StreamName: aws.String(stream)})
		})
		var ws []*manyWorker
		for j, name := range names {
			var args []string
			if j > 0 {
				args = strings.Fields(name)
			}
			ws = append(ws, startManyWorker(t, bin, stream, fmt.Sprintf("%s-%d", stream, j), args))
		}
		f := measureMany(t, ws, shards)
		for j, p := range f {
			fmt.Printf("bench run-many: %d shards at the tip, %s: %.1f ms of CPU a second; %.1f reads and %.1f renewals a second; %.1f failed reads a second; peak RSS %.0f MB; %d goroutines\n",
				shards, names[j], p.per.cpu.self*1000, p.per.reads, p.per.renewals, p.failures, p.peakRSS/(1<<20), p.goroutines)
		}
		a, b, c := f[0].per, f[1].per, f[2].per
		per[i] = costs{read: (a.cpu.self - b.cpu.self) / (a.reads - b.reads), renewal: (b.cpu.self - c.cpu.self) / (b.renewals - c.renewals)}
		fmt.Printf("bench run-many: %d shards: one read at the tip costs %.2f ms of CPU, one renewal %.2f ms\n",
			shards, per[i].read*1000, per[i].renewal*1000)
	}
	fmt.Printf("bench run-many: 500 shards against 20: CPU per read %.2fx, per renewal %.2fx (goal <= 1.00x each)\n",
		per[1].read/per[0].read, per[1].renewal/per[0].renewal)
}

// manyFigures are a worker's figures per second over the window, with its
// peak resident memory (VmHWM) and goroutines at the end.
type manyFigures struct {
	per        workerFigures
	peakRSS    float64
	goroutines int
	failures   float64 // failed reads a second (timed out, throttled, refused)
}

// manyWorker is a kcltool run process with its metrics endpoint.
type manyWorker struct {
	cmd  *exec.Cmd
	port int
	logs *lockedBuffer
}

// startManyWorker starts kcltool on an empty stream; it is stopped when the
// test ends.
func startManyWorker(t *testing.T, bin, stream, app string, args []string) *manyWorker {
	t.Helper()
	w := &manyWorker{port: freePort(t), logs: &lockedBuffer{}}
	w.cmd = exec.Command(bin, append([]string{"run", "--app", app, "--stream", stream, "--create-table", "--kcl-version", "2", "--log-format", "json",
		"--metrics-addr", fmt.Sprintf("127.0.0.1:%d", w.port), "--exec", "cat >/dev/null"}, args...)...)
	w.cmd.Env = append(os.Environ(), emulator.Env(t)...)
	w.cmd.Stderr = w.logs
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
		_ = w.cmd.Wait()
	})
	return w
}

// measureMany waits until every worker holds every lease and has read
// every shard, lets them settle, and measures them over the same 20 s.
func measureMany(t *testing.T, ws []*manyWorker, shards int) []manyFigures {
	t.Helper()
	// Every worker reads each shard once at the start (an iterator and a
	// read, as fast as the server answers): the window starts once they
	// all have, and the workers that read every 5 minutes are quiet.
	for _, w := range ws {
		eventuallyE2E(t, 3*time.Minute, "the worker to hold every lease and read every shard", func() bool {
			f, ok := scrapeWorker(w.port)
			return ok && f.held == float64(shards) && f.reads >= float64(shards)
		})
	}
	time.Sleep(5 * time.Second) // past the leases' first renewals
	const window = 20 * time.Second
	from := make([]workerFigures, len(ws))
	failedFrom := make([]float64, len(ws))
	for i, w := range ws {
		var ok bool
		if from[i], ok = scrapeWorker(w.port); !ok {
			t.Fatalf("the metrics endpoint does not answer:\n%s", w.logs.String())
		}
		failedFrom[i] = scrapeSum(t, w.port, "kcltool_shard_read_failures_total")
	}
	time.Sleep(window)
	out := make([]manyFigures, len(ws))
	for i, w := range ws {
		to, ok := scrapeWorker(w.port)
		if !ok {
			t.Fatalf("the metrics endpoint stopped answering:\n%s", w.logs.String())
		}
		if to.held != float64(shards) {
			t.Fatalf("a worker holds %v of %d leases after the window:\n%s", to.held, shards, w.logs.String())
		}
		s := window.Seconds()
		out[i] = manyFigures{
			per:        workerFigures{cpu: to.cpu.sub(from[i].cpu).scale(1 / s), reads: (to.reads - from[i].reads) / s, renewals: (to.renewals - from[i].renewals) / s},
			peakRSS:    procStatusBytes(t, w.cmd.Process.Pid, "VmHWM"),
			goroutines: int(scrapeSum(t, w.port, "go_goroutines")),
			failures:   (scrapeSum(t, w.port, "kcltool_shard_read_failures_total") - failedFrom[i]) / s,
		}
	}
	return out
}

// procStatusBytes reads a kB field of /proc/PID/status in bytes.
func procStatusBytes(t *testing.T, pid int, field string) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb * 1024
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// scrapeSum sums the samples of one metric on the metrics endpoint, over
// all its labels.
func scrapeSum(t *testing.T, port int, name string) float64 {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	sum, found := 0.0, false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			sum, found = sum+v, true
		}
	}
	if !found {
		t.Fatalf("no %s on the metrics endpoint", name)
	}
	return sum
}
