package runner

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// One handler per shard at a time: each test runs handlers longer than the
// failover time (testdata/overlaphandler records, on the machine's
// monotonic clock, when each ran) and measures how long two handlers of
// one shard ran at once.

// overlapFailover and overlapTakerInterval are the settings of issue 13's
// probes (--failover-time 5s --taker-interval 500ms): renewals every
// 1.642s, a stop margin of 1.642s, a kill grace of 821ms, a steal wait of
// 3.283s.
const (
	overlapFailover      = 5 * time.Second
	overlapTakerInterval = 500 * time.Millisecond
)

// handlerSleep is how long each handler runs: longer than the failover
// time, so that a lease moves while one runs.
const handlerSleep = 7 * time.Second

// overlapHandler builds the recording handler and returns its path.
func overlapHandler(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the recording handler reads CLOCK_MONOTONIC through a Linux system call")
	}
	bin := filepath.Join(t.TempDir(), "overlaphandler")
	cmd := exec.Command("go", "build", "-o", bin, "./testdata/overlaphandler")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build overlaphandler: %v\n%s", err, out)
	}
	return bin
}

// overlapConfig is a worker whose handler is the recording one, one record
// per batch, with the tests' failover time.
func overlapConfig(t *testing.T, s stack, id, bin, log string) (Config, *logBuffer) {
	cfg := s.config(t, id, log, bin)
	cfg.Handler.Env = append(os.Environ(), "OVERLAP_LOG="+log, "OVERLAP_SLEEP="+handlerSleep.String())
	cfg.Lease = leasecore.Config{FailoverTime: overlapFailover, TakerInterval: overlapTakerInterval, MaxLeasesToStealAtOneTime: 1}
	cfg.BatchSize = 1
	var logs *logBuffer
	cfg.Log, logs = recordedLogger(t, id)
	return cfg, logs
}

// invocation is one handler run as the recording handler saw it.
type invocation struct {
	worker, shard string
	pid           int
	start, end    int64 // monotonic ns; end is the last line written
}

func (i invocation) String() string {
	return fmt.Sprintf("%s/%s pid %d", i.worker, i.shard, i.pid)
}

func readInvocations(t *testing.T, path string) []invocation {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byPid := map[int]*invocation{}
	var order []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 5 {
			continue // a line cut short by a kill (never seen: one write each)
		}
		pid, _ := strconv.Atoi(fields[3])
		ns, err := strconv.ParseInt(fields[4], 10, 64)
		if err != nil {
			continue
		}
		inv := byPid[pid]
		if inv == nil {
			inv = &invocation{worker: fields[1], shard: fields[2], pid: pid, start: ns}
			byPid[pid] = inv
			order = append(order, pid)
		}
		inv.start, inv.end = min(inv.start, ns), max(inv.end, ns)
	}
	out := make([]invocation, len(order))
	for i, pid := range order {
		out[i] = *byPid[pid]
	}
	return out
}

// overlap is two handler runs of one shard that ran at once, for d.
type overlap struct {
	a, b invocation
	d    time.Duration
}

// overlapsByShard returns, per shard, the longest time two of its handler
// runs ran at once (0 when none did), and those two.
func overlapsByShard(invs []invocation) map[string]overlap {
	out := map[string]overlap{}
	for i, a := range invs {
		if _, ok := out[a.shard]; !ok {
			out[a.shard] = overlap{}
		}
		for _, b := range invs[i+1:] {
			if a.shard != b.shard {
				continue
			}
			if d := time.Duration(min(a.end, b.end) - max(a.start, b.start)); d > out[a.shard].d {
				out[a.shard] = overlap{a, b, d}
			}
		}
	}
	return out
}

func startedBy(invs []invocation, worker string) []invocation {
	var out []invocation
	for _, i := range invs {
		if i.worker == worker {
			out = append(out, i)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out
}

func shardsOf(invs []invocation) map[string]bool {
	m := map[string]bool{}
	for _, i := range invs {
		m[i.shard] = true
	}
	return m
}

// A worker cut off from DynamoDB stops its handler at its own lease
// deadline, by a timer: before the lease can expire for anyone else. The
// worker that takes the expired lease starts at once, and the two handlers
// never run at the same time.
func TestOneHandlerPerShardTakeoverAfterPartition(t *testing.T) {
	t.Parallel() // each has its own stream, table and handler log
	bin := overlapHandler(t)
	s := newStack(t, 1)
	log := filepath.Join(t.TempDir(), "handlers.log")
	s.put(t, func(k string) string { return k }, keys("k", 10)...)

	p1 := emulator.NewFaultProxy(t, emulator.DynamoDBEndpoint(t), emulator.Hang, 0, "", 1)
	through := s
	through.ddb = via(p1.URL)
	cfg1, logs1 := overlapConfig(t, s, "w1", bin, log)
	start(t, through, cfg1)
	eventually(t, 20*time.Second, "w1's handler running", func() bool { return len(startedBy(readInvocations(t, log), "w1")) > 0 })
	cfg2, logs2 := overlapConfig(t, s, "w2", bin, log)
	start(t, s, cfg2)
	time.Sleep(time.Second) // w2 has seen w1 renew
	p1.Partition()
	eventually(t, 20*time.Second, "w2's handler running", func() bool { return len(startedBy(readInvocations(t, log), "w2")) > 0 })
	time.Sleep(1500 * time.Millisecond) // long enough for w1's handler to show, had it gone on

	invs := readInvocations(t, log)
	for shard, o := range overlapsByShard(invs) {
		if o.d > 0 {
			t.Errorf("shard %s: handlers %s and %s ran at once for %s", shard, o.a, o.b, o.d)
		}
	}
	w1, w2 := startedBy(invs, "w1"), startedBy(invs, "w2")
	t.Logf("w1's last handler ended %s before w2's first started",
		time.Duration(w2[0].start-w1[len(w1)-1].end))
	if !strings.Contains(logs1.String(), `level=WARN msg="lease deadline passed without a renewal known to be applied: stopped the handler`) {
		t.Errorf("w1 did not log the stop at its lease deadline at warn")
	}
	if strings.Contains(logs1.String(), `msg="handler failed"`) {
		t.Errorf("the handler stopped at the lease deadline was counted as a failure")
	}
	if strings.Contains(logs2.String(), "stolen lease") {
		t.Errorf("an expired lease was treated as stolen:\n%s", logs2.String())
	}
}

// A steal while the old owner renews: the old owner notices at its next
// renewal, and the thief's first batch waits a renew interval plus the stop
// margin, so the two handlers never run at the same time.
func TestOneHandlerPerShardStealWhileOwnerRenews(t *testing.T) {
	t.Parallel() // each has its own stream, table and handler log
	bin := overlapHandler(t)
	s := newStack(t, 2)
	log := filepath.Join(t.TempDir(), "handlers.log")
	s.put(t, func(k string) string { return k }, keys("k", 40)...)

	cfg1, _ := overlapConfig(t, s, "w1", bin, log)
	start(t, s, cfg1)
	eventually(t, 20*time.Second, "w1's handlers running on both shards", func() bool {
		return len(shardsOf(startedBy(readInvocations(t, log), "w1"))) == 2
	})
	cfg2, logs2 := overlapConfig(t, s, "w2", bin, log)
	cfg2.Lease.MaxLeasesToStealAtOneTime = 1
	start(t, s, cfg2)
	eventually(t, 20*time.Second, "w2's handler running on the stolen shard", func() bool {
		return len(startedBy(readInvocations(t, log), "w2")) > 0
	})
	time.Sleep(1500 * time.Millisecond)

	invs := readInvocations(t, log)
	stolen := startedBy(invs, "w2")[0].shard
	for shard, o := range overlapsByShard(invs) {
		if o.d > 0 {
			t.Errorf("shard %s: handlers %s and %s ran at once for %s", shard, o.a, o.b, o.d)
		}
	}
	if !logLine(logs2.String(), `msg="stolen lease: the first batch waits until the old owner has stopped its handler"`, "shard="+stolen+" ", "from=w1") {
		t.Errorf("w2 did not wait before the stolen shard's first batch")
	}
	var lastW1 int64
	for _, i := range startedBy(invs, "w1") {
		if i.shard == stolen {
			lastW1 = max(lastW1, i.end)
		}
	}
	t.Logf("stolen shard %s: w1's handler ended %s before w2's started", stolen, time.Duration(startedBy(invs, "w2")[0].start-lastW1))
}

// A steal while the old owner cannot renew (cut off from DynamoDB just
// before): it learns nothing, so its handler of the stolen shard runs until
// its own lease deadline, and overlaps the thief's by at most failover −
// renew interval − 2 × stop margin + kill grace (896ms here, 1.075s at the
// defaults). Its other lease expires and is taken without a wait, and
// overlaps not at all.
func TestOneHandlerPerShardStealWhileOwnerCutOff(t *testing.T) {
	t.Parallel() // each has its own stream, table and handler log
	bin := overlapHandler(t)
	s := newStack(t, 2)
	log := filepath.Join(t.TempDir(), "handlers.log")
	s.put(t, func(k string) string { return k }, keys("k", 40)...)

	p1 := emulator.NewFaultProxy(t, emulator.DynamoDBEndpoint(t), emulator.Hang, 0, "", 1)
	through := s
	through.ddb = via(p1.URL)
	cfg1, logs1 := overlapConfig(t, s, "w1", bin, log)
	start(t, through, cfg1)
	eventually(t, 20*time.Second, "w1's handlers running on both shards", func() bool {
		return len(shardsOf(startedBy(readInvocations(t, log), "w1"))) == 2
	})
	p1.Partition()
	cfg2, logs2 := overlapConfig(t, s, "w2", bin, log)
	start(t, s, cfg2)
	eventually(t, 20*time.Second, "w2's handlers running on both shards", func() bool {
		return len(shardsOf(startedBy(readInvocations(t, log), "w2"))) == 2
	})
	time.Sleep(1500 * time.Millisecond)

	bound := stealOverlapBound(cfg2.Lease)
	stolen := stolenShard(t, logs2.String())
	invs := readInvocations(t, log)
	for shard, o := range overlapsByShard(invs) {
		switch {
		case shard == stolen && o.d > bound:
			t.Errorf("stolen shard %s: handlers %s and %s ran at once for %s, more than the bound %s", shard, o.a, o.b, o.d, bound)
		case shard != stolen && o.d > 0:
			t.Errorf("shard %s, taken after expiry: handlers %s and %s ran at once for %s", shard, o.a, o.b, o.d)
		default:
			t.Logf("shard %s (stolen %v): longest overlap %s (bound %s)", shard, shard == stolen, o.d, bound)
		}
	}
	if !strings.Contains(logs1.String(), `msg="lease deadline passed without a renewal known to be applied: stopped the handler`) {
		t.Errorf("w1 did not stop its handlers at its lease deadline")
	}
	var lastW1, firstW2 int64
	for _, i := range invs {
		switch {
		case i.shard != stolen:
		case i.worker == "w1":
			lastW1 = max(lastW1, i.end)
		case firstW2 == 0 || i.start < firstW2:
			firstW2 = i.start
		}
	}
	t.Logf("stolen shard %s: w1's handler ended %s before w2's started", stolen, time.Duration(firstW2-lastW1))
}

// stolenShard is the one lease a worker's log says it stole.
func stolenShard(t *testing.T, log string) string {
	t.Helper()
	var stolen []string
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `msg="stole lease"`) {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "lease="); ok {
				stolen = append(stolen, v)
			}
		}
	}
	if len(stolen) != 1 {
		t.Fatalf("want exactly one steal, the log shows %v", stolen)
	}
	return stolen[0]
}

// logLine reports whether one line of the log holds every part.
func logLine(log string, parts ...string) bool {
	for _, line := range strings.Split(log, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}
