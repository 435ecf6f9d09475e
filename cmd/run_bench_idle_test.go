package cmd

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// TestBenchIdle is `make bench`'s figure for a worker with nothing to do:
// the CPU per second of `kcltool run` holding 20 shards at the tip, and,
// from runs with fewer reads and fewer renewals, what one read at the tip
// and one renewal cost. Most consumers sit at the tip most of the time, so
// this is what a fleet mostly spends.
func TestBenchIdle(t *testing.T) {
	if os.Getenv("KCLTOOL_BENCH") == "" {
		t.Skip("benchmark: run with KCLTOOL_BENCH=1 (make bench)")
	}
	const shards = 20
	bin := kcltoolBinary(t)
	stream := emulator.Name(t, "idle")
	emulator.CreateStream(t, emulator.Kinesis(t), stream, shards)
	runs := []struct {
		name string
		args []string
		per  workerFigures // per second
	}{
		{name: "defaults"},
		{name: "--idle-between-reads 10s", args: []string{"--idle-between-reads", "10s"}},
		{name: "--idle-between-reads 10s --failover-time 60s", args: []string{"--idle-between-reads", "10s", "--failover-time", "60s"}},
	}
	for i := range runs {
		runs[i].per = idleWorker(t, bin, stream, fmt.Sprintf("%s-%d", stream, i), shards, runs[i].args)
		p := runs[i].per
		fmt.Printf("bench run-idle: %d shards at the tip, %s: %.1f ms of CPU a second; %.1f reads and %.1f renewals a second\n",
			shards, runs[i].name, p.cpu.self*1000, p.reads, p.renewals)
	}
	a, b, c := runs[0].per, runs[1].per, runs[2].per
	fmt.Printf("bench run-idle: one read at the tip costs %.2f ms of CPU, one renewal %.2f ms (differences of the runs above)\n",
		(a.cpu.self-b.cpu.self)/(a.reads-b.reads)*1000, (b.cpu.self-c.cpu.self)/(b.renewals-c.renewals)*1000)
}

// idleWorker runs kcltool on an empty stream until it holds every shard,
// lets it settle, and returns its figures per second over the next 20 s.
func idleWorker(t *testing.T, bin, stream, app string, shards int, args []string) workerFigures {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(bin, append([]string{"run", "--app", app, "--stream", stream, "--create-table", "--kcl-version", "2", "--log-format", "json",
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
	eventuallyE2E(t, time.Minute, "the worker to hold every lease", func() bool {
		f, ok := scrapeWorker(port)
		return ok && f.held == float64(shards)
	})
	time.Sleep(5 * time.Second) // past the first reads and the leases' first renewals
	const window = 20 * time.Second
	from, ok := scrapeWorker(port)
	time.Sleep(window)
	to, ok2 := scrapeWorker(port)
	if !ok || !ok2 {
		t.Fatalf("the metrics endpoint stopped answering:\n%s", logs.String())
	}
	s := window.Seconds()
	return workerFigures{cpu: to.cpu.sub(from.cpu).scale(1 / s), reads: (to.reads - from.reads) / s, renewals: (to.renewals - from.renewals) / s}
}
