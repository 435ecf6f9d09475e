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

	"github.com/kcltool/kcltool/internal/emulator"
)

// TestBenchRunManyShards is `make bench`'s figure for one worker holding
// many shards at the tip: 500 shards against 20 in the same run, with the
// idle benchmark's figures (CPU per read at the tip and per renewal, from
// the differences of three runs each: the defaults, fewer reads, fewer
// renewals), reads per second achieved, peak memory and goroutines. The
// goal is a per-read and per-renewal cost no higher at 500 shards than at
// 20, and under 300 MB.
func TestBenchRunManyShards(t *testing.T) {
	if os.Getenv("KCLTOOL_BENCH") == "" {
		t.Skip("benchmark: run with KCLTOOL_BENCH=1 (make bench)")
	}
	bin := kcltoolBinary(t)
	kin := emulator.Kinesis(t)
	type costs struct{ read, renewal float64 }
	var per [2]costs
	for i, shards := range []int{20, 500} {
		stream := emulator.Name(t, "many")
		emulator.CreateStream(t, kin, stream, int32(shards))
		// Other benchmarks in this binary share kinesis-local's 2,000 shards.
		t.Cleanup(func() {
			_, _ = kin.DeleteStream(context.Background(), &kinesis.DeleteStreamInput{StreamName: aws.String(stream)})
		})
		runs := []struct {
			name string
			args []string
			f    manyFigures
		}{
			{name: "defaults"},
			{name: "--idle-between-reads 30s", args: []string{"--idle-between-reads", "30s"}},
			{name: "--idle-between-reads 30s --failover-time 60s", args: []string{"--idle-between-reads", "30s", "--failover-time", "60s"}},
		}
		for j := range runs {
			runs[j].f = manyWorker(t, bin, stream, fmt.Sprintf("%s-%d", stream, j), shards, runs[j].args)
			p := runs[j].f
			fmt.Printf("bench run-many: %d shards at the tip, %s: %.1f ms of CPU a second; %.1f reads and %.1f renewals a second; %.1f failed reads a second; peak RSS %.0f MB; %d goroutines\n",
				shards, runs[j].name, p.per.cpu.self*1000, p.per.reads, p.per.renewals, p.failures, p.peakRSS/(1<<20), p.goroutines)
		}
		a, b, c := runs[0].f.per, runs[1].f.per, runs[2].f.per
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

// manyWorker runs kcltool on an empty stream until it holds every shard,
// lets it settle, and measures it over the next 10 s.
func manyWorker(t *testing.T, bin, stream, app string, shards int, args []string) manyFigures {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(bin, append([]string{"run", "--app", app, "--stream", stream, "--create-table", "--log-format", "json",
		"--metrics-addr", fmt.Sprintf("127.0.0.1:%d", port), "--exec", "cat >/dev/null"}, args...)...)
	cmd.Env = append(os.Environ(), emulator.Env(t)...)
	logs := &lockedBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	eventuallyE2E(t, 2*time.Minute, "the worker to hold every lease", func() bool {
		f, ok := scrapeWorker(port)
		return ok && f.held == float64(shards)
	})
	// Past the first reads (an iterator for every shard, as fast as the
	// server answers) and the leases' first renewals.
	time.Sleep(5*time.Second + time.Duration(shards)*10*time.Millisecond)
	const window = 10 * time.Second
	from, ok := scrapeWorker(port)
	failedFrom := scrapeSum(t, port, "kcltool_shard_read_failures_total")
	time.Sleep(window)
	to, ok2 := scrapeWorker(port)
	failed := scrapeSum(t, port, "kcltool_shard_read_failures_total")
	if !ok || !ok2 {
		t.Fatalf("the metrics endpoint stopped answering:\n%s", logs.String())
	}
	if to.held != float64(shards) {
		t.Fatalf("the worker holds %v of %d leases after the window:\n%s", to.held, shards, logs.String())
	}
	s := window.Seconds()
	return manyFigures{
		per:        workerFigures{cpu: to.cpu.sub(from.cpu).scale(1 / s), reads: (to.reads - from.reads) / s, renewals: (to.renewals - from.renewals) / s},
		peakRSS:    procStatusBytes(t, cmd.Process.Pid, "VmHWM"),
		goroutines: int(scrapeSum(t, port, "go_goroutines")),
		failures:   (failed - failedFrom) / s,
	}
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
