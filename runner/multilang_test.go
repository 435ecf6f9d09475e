package runner

import (
	"bytes"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// The MultiLang tests run testdata/mlchild, a record processor speaking the
// KCL's MultiLang protocol, as --multilang's child.

var (
	mlChildOnce sync.Once
	mlChildBin  string
	mlChildErr  error
)

// mlChildPath builds testdata/mlchild once per test binary.
func mlChildPath(t *testing.T) string {
	t.Helper()
	mlChildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mlchild")
		if err != nil {
			mlChildErr = err
			return
		}
		mlChildBin = filepath.Join(dir, "mlchild")
		if out, err := exec.Command("go", "build", "-o", mlChildBin, "./testdata/mlchild").CombinedOutput(); err != nil {
			mlChildErr = fmt.Errorf("go build mlchild: %v\n%s", err, out)
		}
	})
	if mlChildErr != nil {
		t.Fatal(mlChildErr)
	}
	return mlChildBin
}

// mlSetup is a --multilang worker config whose child appends records to
// out and its messages to events; extra env selects a misbehaviour.
type mlSetup struct {
	out, events string
	logs        *logBuffer
}

func mlConfig(t *testing.T, s stack, id string, env ...string) (Config, mlSetup) {
	t.Helper()
	dir := t.TempDir()
	su := mlSetup{out: filepath.Join(dir, "out.jsonl"), events: filepath.Join(dir, "events")}
	cfg := s.config(t, id, su.out, mlChildPath(t))
	cfg.MultiLang = true
	cfg.Handler.Env = append(append(os.Environ(), "OUT="+su.out, "EVENTS="+su.events, "MLCHILD_MARKS="+dir), env...)
	cfg.Log, su.logs = recordedLogger(t, id)
	cfg.Metrics = NewMetrics()
	return cfg, su
}

// eventLines are the child's events: "worker shard pid what".
func eventLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// countEvents counts the events of shard (any if "") ending in what.
func countEvents(lines []string, shard, what string) int {
	n := 0
	for _, l := range lines {
		f := strings.SplitN(l, " ", 4)
		if len(f) == 4 && (shard == "" || f[1] == shard) && f[3] == what {
			n++
		}
	}
	return n
}

// One long-lived child per shard handles every record once, in order, in
// several processRecords messages, and checkpoints them itself; a graceful
// stop sends shutdownRequested, the child exits at EOF, and the leases are
// released.
func TestMultiLangConsumesWithOneChildPerShard(t *testing.T) {
	s := newStack(t, 2)
	// Each child spends 300ms of CPU as it starts: the handler CPU metric
	// counts it while the child runs.
	cfg, su := mlConfig(t, s, "w1", "MLCHILD_BURN=300ms")
	cfg.MaxRecords = 7 // several pages per shard
	r := start(t, s, cfg)
	for round := range 4 {
		s.put(t, func(k string) string { return fmt.Sprintf("%s:%d", k, round) }, keys("k", 20)...)
	}
	eventually(t, 30*time.Second, "80 records handled", func() bool { return len(readHandled(t, su.out)) >= 80 })
	got := readHandled(t, su.out)
	checkExactlyOnceInOrder(t, got, 20, 4)
	last := lastPerShard(got)
	eventuallyCheckpointedAt(t, s, "the child's checkpoints at the last records", last)
	ev := eventLines(t, su.events)
	for shard := range last {
		if n := countEvents(ev, shard, "initialize"); n != 1 {
			t.Errorf("%s: %d children initialized, want 1:\n%s", shard, n, strings.Join(ev, "\n"))
		}
		if n := countEvents(ev, shard, "processRecords"); n < 2 {
			t.Errorf("%s: %d processRecords messages, want several (pages of 7)", shard, n)
		}
		if n := countEvents(ev, shard, "empty processRecords"); n != 0 {
			t.Errorf("%s: %d empty processRecords without callProcessRecordsEvenForEmptyRecordList", shard, n)
		}
		if cpu := handlerCPU(t, cfg.Metrics, shard); cpu < 0.3 {
			t.Errorf("%s: handler CPU %.3fs while the child runs, want its 0.3s at least", shard, cpu)
		}
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	for shard := range last {
		if cpu := handlerCPU(t, cfg.Metrics, shard); cpu < 0.3 {
			t.Errorf("%s: handler CPU %.3fs once the child is reaped, want its 0.3s at least", shard, cpu)
		}
	}
	ev = eventLines(t, su.events)
	for shard := range last {
		if countEvents(ev, shard, "shutdownRequested") != 1 || countEvents(ev, shard, "eof") != 1 {
			t.Errorf("%s: want shutdownRequested then EOF:\n%s", shard, strings.Join(ev, "\n"))
		}
	}
	for key, l := range leases(t, s) {
		if l.LeaseOwner != "" {
			t.Errorf("%s still owned by %q after the stop", key, l.LeaseOwner)
		}
	}
}

// handlerCPU reads a shard's kcltool_shard_handler_cpu_seconds_total.
func handlerCPU(t *testing.T, m *Metrics, shard string) float64 {
	t.Helper()
	var b bytes.Buffer
	if err := m.WritePrometheus(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, "kcltool_shard_handler_cpu_seconds_total{") && strings.Contains(line, `shard="`+shard+`"`) {
			var v float64
			if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no handler CPU figure for %s:\n%s", shard, b.String())
	return 0
}

// callProcessRecordsEvenForEmptyRecordList: every GetRecords page reaches
// the child, the empty ones as "records":[] with millisBehindLatest, as
// the KCL sends them; records still arrive once each, in order.
func TestMultiLangEmptyPages(t *testing.T) {
	s := newStack(t, 1)
	cfg, su := mlConfig(t, s, "w1")
	cfg.MultiLangEmptyPages = true
	cfg.IdleBetweenReads = 100 * time.Millisecond
	start(t, s, cfg)
	s.put(t, func(k string) string { return k + ":0" }, keys("k", 5)...)
	eventually(t, 30*time.Second, "5 records handled", func() bool { return len(readHandled(t, su.out)) >= 5 })
	before := countEvents(eventLines(t, su.events), "", "empty processRecords")
	eventually(t, 10*time.Second, "3 more empty pages at the tip", func() bool {
		return countEvents(eventLines(t, su.events), "", "empty processRecords") >= before+3
	})
	checkExactlyOnceInOrder(t, readHandled(t, su.out), 5, 1)
	ev := eventLines(t, su.events)
	for _, l := range ev {
		if strings.Contains(l, "malformed") {
			t.Fatalf("an empty page was not sent as the KCL sends it: %s", l)
		}
	}
}

// A split ends the parent: the child gets shardEnded, checkpoints
// SHARD_END, and the children's records follow in key order. A child that
// does not checkpoint at the shard end leaves the shard open: it is read
// again with a new child, and only then reaches SHARD_END.
func TestMultiLangShardEnd(t *testing.T) {
	s := newStack(t, 1)
	cfg, su := mlConfig(t, s, "w1", "MLCHILD_MODE=noshardend", "MLCHILD_SHARD=shardId-000000000000")
	start(t, s, cfg)
	produce := func(from, n int) {
		for round := from; round < from+n; round++ {
			s.put(t, func(k string) string { return fmt.Sprintf("%s:%d", k, round) }, keys("k", 10)...)
		}
	}
	produce(0, 2)
	emulator.SplitShard(t, s.kin, s.stream, "shardId-000000000000", new(big.Int).Lsh(big.NewInt(1), 127))
	produce(2, 2)
	eventually(t, 60*time.Second, "40 records handled", func() bool { return len(readHandled(t, su.out)) >= 40 })
	// The cleanup deletes the finished parent's lease soon after.
	eventually(t, 20*time.Second, "parent at SHARD_END", func() bool {
		l, ok := leases(t, s)["shardId-000000000000"]
		return !ok || l.Checkpoint.IsShardEnd()
	})
	ev := eventLines(t, su.events)
	if countEvents(ev, "shardId-000000000000", "shardEnded") != 2 || countEvents(ev, "shardId-000000000000", "misbehave noshardend") != 1 {
		t.Errorf("want two shardEnded (the first not checkpointed):\n%s", strings.Join(ev, "\n"))
	}
	if !strings.Contains(su.logs.String(), "did not checkpoint SHARD_END") || !strings.Contains(su.logs.String(), "answered shardEnded without checkpointing SHARD_END") {
		t.Error("the log does not say the child did not checkpoint SHARD_END")
	}
	var metrics bytes.Buffer
	if err := cfg.Metrics.WritePrometheus(&metrics); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`kcltool_shard_multilang_child_restarts_total{app="%s",stream="%s",shard="shardId-000000000000"} 1`, s.table, s.stream); !strings.Contains(metrics.String(), want) {
		t.Errorf("metrics lack %s", want)
	}
	// Records after the split: per key, the parent's before the children's.
	got := readHandled(t, su.out)
	seen := map[string]bool{}
	var first []handled
	for _, h := range got {
		if !seen[h.text()] {
			seen[h.text()] = true
			first = append(first, h)
		}
	}
	checkExactlyOnceInOrder(t, first, 10, 4)
}

// Each misbehaving child loses only its shard for a backoff: it is
// stopped, the log says which message failed and why, the other shard
// goes on, no bad checkpoint is written, and a new child finishes the
// shard from its checkpoint.
func TestMultiLangMisbehavingChildren(t *testing.T) {
	const bad = "shardId-000000000000"
	cases := []struct {
		mode, log string
		restarts  int
	}{
		{"unknown", `MultiLang child failed on processRecords: unknown action \"dance\"`, 1},
		{"daemonaction", `MultiLang child failed on processRecords: unexpected action \"processRecords\" from the child`, 1},
		{"silent", "MultiLang child failed on processRecords: no message from the child within 1.5s", 1},
		{"exit", "MultiLang child failed on processRecords: the child closed its stdout before its status (handler exited with status 3)", 1},
		{"garbage", "MultiLang child wrote a line that is not a message; skipped", 0},
		{"badcp", "refused the MultiLang child's checkpoint", 0},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			s := newStack(t, 2)
			cfg, su := mlConfig(t, s, "w1", "MLCHILD_MODE="+c.mode, "MLCHILD_SHARD="+bad)
			cfg.MultiLangTimeout = 1500 * time.Millisecond
			start(t, s, cfg)
			for round := range 3 {
				s.put(t, func(k string) string { return fmt.Sprintf("%s:%d", k, round) }, keys("k", 20)...)
			}
			eventually(t, 30*time.Second, "every record handled", func() bool {
				seen := map[string]bool{}
				for _, h := range readHandled(t, su.out) {
					seen[h.text()] = true
				}
				return len(seen) == 60
			})
			got := readHandled(t, su.out)
			last := lastPerShard(got)
			perShard := map[string]int{}
			for _, h := range got {
				perShard[h.ShardID]++
			}
			eventuallyCheckpointedAt(t, s, "checkpoints at the last records", last)
			if !strings.Contains(su.logs.String(), c.log) {
				t.Errorf("the log does not say %q", c.log)
			}
			ev := eventLines(t, su.events)
			if countEvents(ev, bad, "misbehave "+c.mode) != 1 {
				t.Fatalf("the child never misbehaved:\n%s", strings.Join(ev, "\n"))
			}
			if n := countEvents(ev, bad, "initialize"); n != 1+c.restarts {
				t.Errorf("%s: %d children, want %d", bad, n, 1+c.restarts)
			}
			for shard := range last {
				if shard != bad && countEvents(ev, shard, "initialize") != 1 {
					t.Errorf("%s was restarted too:\n%s", shard, strings.Join(ev, "\n"))
				}
			}
			if c.mode == "badcp" && countEvents(ev, bad, "checkpointError IllegalArgumentException") != 1 {
				t.Errorf("the bad checkpoint was not answered with IllegalArgumentException:\n%s", strings.Join(ev, "\n"))
			}
			var metrics bytes.Buffer
			if err := cfg.Metrics.WritePrometheus(&metrics); err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf(`kcltool_shard_multilang_child_restarts_total{app="%s",stream="%s",shard="%s"} %d`, s.table, s.stream, bad, c.restarts)
			if !strings.Contains(metrics.String(), want) {
				t.Errorf("metrics lack %s", want)
			}
		})
	}
}

// A lease stolen by a second worker: the first worker's child gets
// leaseLost and exits, the thief's child is initialized and goes on from
// the checkpoint; every record is handled, each key in order of first
// handling.
func TestMultiLangLeaseLostToASteal(t *testing.T) {
	s := newStack(t, 2)
	cfg1, su := mlConfig(t, s, "w1")
	start(t, s, cfg1)
	s.put(t, func(k string) string { return k + ":0" }, keys("k", 20)...)
	eventually(t, 30*time.Second, "20 records", func() bool { return len(readHandled(t, su.out)) >= 20 })
	cfg2, _ := mlConfig(t, s, "w2")
	cfg2.Handler.Env = cfg1.Handler.Env // the same files
	start(t, s, cfg2)
	eventually(t, 30*time.Second, "a lease stolen by w2", func() bool {
		return countEvents(eventLines(t, su.events), "", "leaseLost") == 1
	})
	s.put(t, func(k string) string { return k + ":1" }, keys("k", 20)...)
	eventually(t, 30*time.Second, "40 distinct records", func() bool {
		seen := map[string]bool{}
		for _, h := range readHandled(t, su.out) {
			seen[h.text()] = true
		}
		return len(seen) == 40
	})
	ev := eventLines(t, su.events)
	var lostShard string
	for _, l := range ev {
		if f := strings.Fields(l); len(f) == 4 && f[3] == "leaseLost" {
			if f[0] != "w1" {
				t.Fatalf("leaseLost sent by %s, want w1:\n%s", f[0], strings.Join(ev, "\n"))
			}
			lostShard = f[1]
		}
	}
	w2init := false
	for _, l := range ev {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "w2" && f[1] == lostShard && f[3] == "initialize" {
			w2init = true
		}
	}
	if !w2init {
		t.Errorf("w2 never initialized a child for %s:\n%s", lostShard, strings.Join(ev, "\n"))
	}
	seen := map[string]bool{}
	var first []handled
	for _, h := range readHandled(t, su.out) {
		if !seen[h.text()] {
			seen[h.text()] = true
			first = append(first, h)
		}
	}
	checkExactlyOnceInOrder(t, first, 20, 2)
}

// A worker cut off from DynamoDB past its lease's handler deadline stops
// its MultiLang child (leaseLost, then its group is killed): nothing the
// child was doing is checkpointed. Once a renewal gets through, the shard
// restarts from its checkpoint with a new child, and no lease is lost.
func TestMultiLangChildStoppedAtLeaseDeadline(t *testing.T) {
	s := newStack(t, 1)
	p := emulator.NewFaultProxy(t, emulator.DynamoDBEndpoint(t), emulator.Hang, 0, "", 1)
	through := s
	through.ddb = via(p.URL)
	// The first child never answers its first processRecords.
	cfg, su := mlConfig(t, s, "w1", "MLCHILD_MODE=silent", "MLCHILD_SHARD=shardId-000000000000")
	cfg.Lease = leasecore.Config{FailoverTime: 4 * time.Second, RenewInterval: time.Second, TakerInterval: 300 * time.Millisecond, MaxLeasesToStealAtOneTime: 1}
	shortDynamoDBTimeout(&cfg, 200*time.Millisecond)
	start(t, through, cfg)
	seqs := s.put(t, func(k string) string { return k + ":0" }, keys("k", 3)...)
	eventually(t, 20*time.Second, "the first child stuck in processRecords", func() bool {
		return countEvents(eventLines(t, su.events), "", "misbehave silent") == 1
	})
	p.Partition()
	eventually(t, 10*time.Second, "the child stopped at the lease deadline", func() bool {
		return strings.Contains(su.logs.String(), `msg="MultiLang child stopped" test_worker=w1 worker=w1 shard=shardId-000000000000 during=processRecords why="lease not renewed in time`)
	})
	p.Heal()
	eventually(t, 20*time.Second, "a new child's checkpoint", func() bool {
		return leases(t, s)["shardId-000000000000"].Checkpoint.SequenceNumber == seqs["k002"]
	})
	checkExactlyOnceInOrder(t, readHandled(t, su.out), 3, 1)
	if n := countEvents(eventLines(t, su.events), "shardId-000000000000", "initialize"); n != 2 {
		t.Errorf("%d children, want 2", n)
	}
	if strings.Contains(su.logs.String(), `msg="lease lost`) {
		t.Error("the lease was lost")
	}
}

// The child is started and initialized when the lease is taken, as the MLD
// does in its record processor's initialize, not at the first record: the
// shards of a stream nobody writes to have their children, and a graceful
// stop sends each one shutdownRequested before its stdin closes.
func TestMultiLangChildStartsWithTheLease(t *testing.T) {
	s := newStack(t, 2)
	cfg, su := mlConfig(t, s, "w1")
	r := start(t, s, cfg)
	shards := []string{"shardId-000000000000", "shardId-000000000001"}
	eventually(t, 30*time.Second, "both shards' children initialized", func() bool {
		ev := eventLines(t, su.events)
		return countEvents(ev, shards[0], "initialize") == 1 && countEvents(ev, shards[1], "initialize") == 1
	})
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	ev := eventLines(t, su.events)
	for _, shard := range shards {
		if countEvents(ev, shard, "processRecords") != 0 || countEvents(ev, shard, "shutdownRequested") != 1 || countEvents(ev, shard, "eof") != 1 {
			t.Errorf("%s: want initialize, shutdownRequested, EOF and no records:\n%s", shard, strings.Join(ev, "\n"))
		}
	}
}

// A child that names the last record it was given, by its sequence and
// sub-sequence numbers, at shardEnded finishes the shard: that is
// SHARD_END, as the KCL's checkpointer writes it, even though the child
// had checkpointed that record already. The shard is not read again.
func TestMultiLangShardEndNamedLastRecord(t *testing.T) {
	s := newStack(t, 1)
	cfg, su := mlConfig(t, s, "w1", "MLCHILD_SHARDEND=named")
	start(t, s, cfg)
	s.put(t, func(k string) string { return k + ":0" }, keys("k", 10)...)
	emulator.SplitShard(t, s.kin, s.stream, "shardId-000000000000", new(big.Int).Lsh(big.NewInt(1), 127))
	s.put(t, func(k string) string { return k + ":1" }, keys("k", 10)...)
	eventually(t, 60*time.Second, "20 records handled", func() bool { return len(readHandled(t, su.out)) >= 20 })
	eventually(t, 20*time.Second, "parent at SHARD_END", func() bool {
		l, ok := leases(t, s)["shardId-000000000000"]
		return !ok || l.Checkpoint.IsShardEnd()
	})
	ev := eventLines(t, su.events)
	if n := countEvents(ev, "shardId-000000000000", "shardEnded"); n != 1 {
		t.Errorf("%d shardEnded, want 1 (the first checkpoint was SHARD_END):\n%s", n, strings.Join(ev, "\n"))
	}
	if n := countEvents(ev, "shardId-000000000000", "initialize"); n != 1 {
		t.Errorf("%d children of the parent, want 1:\n%s", n, strings.Join(ev, "\n"))
	}
	if strings.Contains(su.logs.String(), "without checkpointing SHARD_END") {
		t.Error("the named last record was not taken as SHARD_END")
	}
	checkExactlyOnceInOrder(t, readHandled(t, su.out), 10, 2)
}

// A child that logs without newlines, as AWS's sample processors do, has
// its stderr logged: lines run together until it exits, and then the last
// one is logged too.
func TestMultiLangChildStderrWithoutNewlines(t *testing.T) {
	s := newStack(t, 1)
	cfg, su := mlConfig(t, s, "w1", "MLCHILD_STDERR=nonewline")
	r := start(t, s, cfg)
	s.put(t, func(k string) string { return k + ":0" }, keys("k", 3)...)
	eventually(t, 30*time.Second, "3 records handled", func() bool { return len(readHandled(t, su.out)) >= 3 })
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	want := `msg="child stderr" test_worker=w1 worker=w1 shard=shardId-000000000000 line="mlchild: record k000 mlchild: record k001 mlchild: record k002 mlchild: shardId-000000000000 exits"`
	if !strings.Contains(su.logs.String(), want) {
		t.Errorf("the log lacks %s:\n%s", want, su.logs.String())
	}
}
