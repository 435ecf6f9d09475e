package cmd

import (
	"context"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
)

// End-to-end tests of `kcltool run` as a worker of a KCL 3.x application:
// the built binary, the local servers, and the test harness's port of the
// KCL 3.x leader (internal/testenv/kcl3fleet) assigning the leases.

// kcl3Timings are the harness leader's, short for the tests: a round every
// 2 s, a lease expired after 2 s without renewal, a worker gone when its
// metrics item is older than 2 × 2 s.
var kcl3Timings = kcl3fleet.LeaderConfig{WorkerID: "leader", AssignmentInterval: 2 * time.Second, FailoverTime: 2 * time.Second,
	MetricsReporterFreq: 2 * time.Second, HeartbeatPeriod: time.Second, LockLeaseDuration: 10 * time.Second, HandoffTimeout: 20 * time.Second}

// kcl3App makes the stack's application a KCL 3.x one of the given layout
// (its lease table is the application's name, as runArgs has it), with one
// lease per shard as the KCL's shard sync writes them.
func kcl3App(t *testing.T, s e2eStack, kind kcl3fleet.Kind) *kcl3fleet.Fleet {
	t.Helper()
	f := kcl3fleet.Setup(t, s.ddb, kcl3fleet.Layout{Kind: kind, LeaseTable: s.app})
	shards, err := s.kin.ListShards(context.Background(), &kinesis.ListShardsInput{StreamName: aws.String(s.stream)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, sh := range shards.Shards {
		keys = append(keys, aws.ToString(sh.ShardId))
	}
	if err := f.CreateLeases(context.Background(), keys...); err != nil {
		t.Fatal(err)
	}
	return f
}

// runLeader runs the leader's rounds until the test ends.
func runLeader(t *testing.T, l *kcl3fleet.Leader) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = l.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// kcl3RunArgs are runArgs with the 3.x timings that match kcl3Timings: the
// worker looks for its leases every second and writes its metrics item
// every second, so that the leader counts it as active.
func kcl3RunArgs(s e2eStack, id string, extra ...string) []string {
	return runArgs(s, id, append([]string{"--lease-assignment-interval", "2s", "--worker-metrics-interval", "1s"}, extra...)...)
}

// fleetOwners counts the leases each worker holds, the harness's way.
func fleetOwners(t *testing.T, f *kcl3fleet.Fleet) map[string]int {
	t.Helper()
	ls, err := f.Leases(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, l := range ls {
		if l.LeaseOwner != "" {
			out[l.LeaseOwner]++
		}
	}
	return out
}

// checkpointWatch reads the leases every 100 ms and records every time a
// lease's checkpoint goes back; stop returns those.
func checkpointWatch(t *testing.T, f *kcl3fleet.Fleet) (stop func() []string) {
	var mu sync.Mutex
	var back []string
	last := map[string]*big.Int{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			ls, err := f.Leases(ctx)
			if err == nil {
				for _, l := range ls {
					n, ok := new(big.Int).SetString(l.Checkpoint.SequenceNumber, 10)
					if !ok {
						continue // TRIM_HORIZON, SHARD_END
					}
					if prev := last[l.LeaseKey]; prev != nil && n.Cmp(prev) < 0 {
						mu.Lock()
						back = append(back, l.LeaseKey+": "+prev.String()+" -> "+n.String()+" (owner "+l.LeaseOwner+")")
						mu.Unlock()
					}
					last[l.LeaseKey] = n
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return func() []string {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return back
	}
}

// kill -9 of a kcltool worker in a KCL 3.x fleet: nobody takes its leases
// (3.x workers never take); the leader sees them expire and the worker's
// metrics go stale, and gives them to the worker left. Every record is
// handled at least once, none twice but B's batches in flight, and no
// lease's checkpoint ever goes back.
func TestRunKCL3KillWorker(t *testing.T) {
	t.Parallel() // its own stream, tables and leader, no process-wide state; mostly waiting on lease and leader timings
	s := newE2EStack(t, 4)
	f := kcl3App(t, s, kcl3fleet.NewApp)
	out := filepath.Join(t.TempDir(), "handled.jsonl")
	env := []string{"OUT=" + out}
	const batchSize = 25
	args := func(id string) []string {
		return kcl3RunArgs(s, id, "--batch-size", strconv.Itoa(batchSize), "--exec", fleetHandler)
	}
	watch := checkpointWatch(t, f)
	// The Java leader holds the lock from the start (kcltool workers
	// contend for it, and would lead a fleet without one); it assigns only
	// once both workers report metrics.
	leader := f.NewLeader(kcl3Timings)
	if ok, err := leader.TakeLock(context.Background()); !ok || err != nil {
		t.Fatalf("the Java leader takes the lock: %v %v", ok, err)
	}

	a := startWorker(t, "A", env, args("A")...)
	b := startWorker(t, "B", env, args("B")...)
	// The leader starts once both workers report metrics: it gives a round's
	// leases to the active workers, and the harness's leader does not
	// rebalance later (kcl3fleet's package doc).
	eventuallyE2E(t, 60*time.Second, "A and B to write their metrics items", func() bool {
		reports, err := f.WorkerMetricsReports(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]bool{}
		for _, r := range reports {
			ids[r.WorkerID] = true
		}
		return ids["A"] && ids["B"]
	})
	runLeader(t, leader)
	eventuallyE2E(t, 60*time.Second, "the leader to give leases to A and B", func() bool {
		o := fleetOwners(t, f)
		return o["A"] > 0 && o["B"] > 0 && o["A"]+o["B"] == 4
	})
	keys := keyNames(100)
	round := 0
	produce := func(n int) {
		for range n {
			s.putRound(t, keys, round)
			round++
		}
	}
	produce(6)
	eventuallyE2E(t, 60*time.Second, "B to handle 100 records", func() bool {
		n := 0
		for _, bt := range readBatchesLocked(t, out) {
			if bt.worker == "B" {
				n += len(bt.records)
			}
		}
		return n >= 100
	})
	heldByB := fleetOwners(t, f)["B"]
	if err := b.cmd.Process.Kill(); err != nil { // SIGKILL: no release, no last checkpoint
		t.Fatal(err)
	}
	<-b.done
	produce(6)
	want := len(keys) * round
	eventuallyE2E(t, 90*time.Second, "A to hold every lease and every record to be handled", func() bool {
		o := fleetOwners(t, f)
		return o["A"] == 4 && distinctRecords(readBatchesLocked(t, out)) == want
	})
	moved := 0
	for _, r := range leader.Rounds() {
		for _, m := range r.Moves {
			if m.From == "B" && m.To == "A" && m.Err == nil {
				moved++
			}
		}
	}
	if moved != heldByB {
		t.Errorf("the leader moved %d leases from B to A, B held %d", moved, heldByB)
	}
	if back := watch(); len(back) > 0 {
		t.Errorf("checkpoints went back: %v", back)
	}
	// Handled twice: only what B handled and had not checkpointed when it
	// died, at most its batch in flight on each lease it held. A resumes
	// each of B's leases from B's last checkpoint.
	if dup := countHandlings(readBatches(t, out)) - want; dup > batchSize*heldByB {
		t.Errorf("%d records handled twice, more than B's batches in flight (%d leases × %d)", dup, heldByB, batchSize)
	}
	checkModeLogged(t, a.logs.String(), "leader", "lease table", "LeaseOwnerToLeaseKeyIndex")
	a.signal(t, syscall.SIGTERM)
	if code := a.exitCode(t, 30*time.Second); code != 0 {
		t.Errorf("A exit %d", code)
	}
	t.Logf("B held %d leases when killed; %d records, %d handlings", heldByB, want, countHandlings(readBatches(t, out)))
}

// checkModeLogged: the worker's start-up log names the mode it follows,
// where the coordination items live, and why.
func checkModeLogged(t *testing.T, logs, assignment, layout, why string) {
	t.Helper()
	for _, line := range strings.Split(logs, "\n") {
		var l struct{ Msg, Assignment, Layout, Reason string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "lease assignment mode" {
			if l.Assignment != assignment || l.Layout != layout || !strings.Contains(l.Reason, why) {
				t.Errorf("start-up mode %+v, want assignment %s, layout %s and a reason naming %s", l, assignment, layout, why)
			}
			return
		}
	}
	t.Errorf("no start-up line saying the mode:\n%s", logs)
}

func countHandlings(batches []handledBatch) int {
	n := 0
	for _, b := range batches {
		n += len(b.records)
	}
	return n
}

// handoffProcessor is handoff_processor.js run by node with the aws-kcl
// package.
func handoffProcessor(t *testing.T) []string {
	t.Helper()
	p := awsKCLProcessor(t)
	script, err := filepath.Abs(filepath.Join("testdata", "awskcl", "handoff_processor.js"))
	if err != nil {
		t.Fatal(err)
	}
	return []string{p[0], script}
}

// A MultiLang child (AWS's aws-kcl package) through a graceful handoff in
// a KCL 3.x application kept in the side tables: the leader hands the
// shard from A to B; A's child gets shutdownRequested after its batch in
// flight and checkpoints at the last record it was given; B's child starts
// from that checkpoint. Across the handoff every record is handled exactly
// once: A's records end at the checkpoint, B's begin after it.
func TestRunKCL3MultiLangHandoff(t *testing.T) {
	t.Parallel() // its own stream, tables and leader, no process-wide state; mostly waiting on lease and leader timings
	processor := handoffProcessor(t)
	s := newE2EStack(t, 1)
	f := kcl3App(t, s, kcl3fleet.SideTables)
	shard := "shardId-000000000000"
	leader := f.NewLeader(kcl3Timings)
	ctx := context.Background()
	if ok, err := leader.TakeLock(ctx); !ok || err != nil {
		t.Fatalf("take the leader lock: %v, %v", ok, err)
	}
	out := filepath.Join(t.TempDir(), "handled.jsonl")
	env := []string{"OUT=" + out, "DELAY_MS=300"}
	args := func(id string) []string {
		return append(kcl3RunArgs(s, id, "--multilang", "--max-records", "10", "--"), processor...)
	}
	a := startWorker(t, "A", env, args("A")...)
	startWorker(t, "B", env, args("B")...)
	if _, err := leader.AssignLease(ctx, shard, "A"); err != nil {
		t.Fatal(err)
	}
	keys := keyNames(20)
	round := 0
	produce := func(n int) {
		for range n {
			s.putRound(t, keys, round)
			round++
		}
	}
	produce(10)
	byWorker := func() map[string][]handledRecord {
		m := map[string][]handledRecord{}
		for _, b := range readBatches(t, out) {
			m[b.worker] = append(m[b.worker], b.records...)
		}
		return m
	}
	eventuallyE2E(t, 60*time.Second, "A to handle records", func() bool { return len(byWorker()["A"]) >= 30 })
	if _, err := leader.Handoff(ctx, shard, "B"); err != nil {
		t.Fatal(err)
	}
	eventuallyE2E(t, 60*time.Second, "the handoff to complete: B owns the lease, no checkpointOwner", func() bool {
		l, err := f.Lease(ctx, shard)
		return err == nil && l.LeaseOwner == "B" && l.CheckpointOwner == ""
	})
	produce(5)
	want := len(keys) * round
	eventuallyE2E(t, 60*time.Second, "every record to be handled", func() bool {
		m := byWorker()
		return len(m["A"])+len(m["B"]) >= want && len(m["B"]) > 0
	})

	events := readLines(t, out+".events")
	var shutdownAt, checkpointAt, initB string
	for _, e := range events {
		f := strings.Fields(e)
		switch {
		case len(f) == 4 && f[0] == "shutdownRequested" && f[1] == "A":
			shutdownAt = f[3]
		case len(f) >= 4 && f[0] == "checkpointed" && f[1] == "A":
			if len(f) > 4 {
				t.Errorf("A's checkpoint at shutdownRequested failed: %s", e)
			}
			checkpointAt = f[3]
		case len(f) == 4 && f[0] == "initialize" && f[1] == "B":
			initB = f[3]
		}
	}
	m := byWorker()
	lastA := m["A"][len(m["A"])-1].seq
	if shutdownAt == "" || checkpointAt != shutdownAt || checkpointAt != lastA {
		t.Errorf("A's child: shutdownRequested at %q, checkpointed %q; the last record it handled is %s\nevents:\n%s", shutdownAt, checkpointAt, lastA, strings.Join(events, "\n"))
	}
	if initB != checkpointAt {
		t.Errorf("B's child started at %q, A checkpointed %q", initB, checkpointAt)
	}
	seen := map[string]string{}
	for _, w := range []string{"A", "B"} {
		for _, r := range m[w] {
			if by, dup := seen[r.seq]; dup {
				t.Errorf("record %s handled by %s and %s: the handoff overlapped", r.seq, by, w)
			}
			seen[r.seq] = w
		}
	}
	if len(seen) != want {
		t.Errorf("%d distinct records handled, want %d", len(seen), want)
	}
	checkModeLogged(t, a.logs.String(), "leader", "side tables", "-CoordinatorState")
	t.Logf("A handled %d records, B %d; handoff checkpoint %s", len(m["A"]), len(m["B"]), checkpointAt)
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// A worker of a KCL 3.x application in the middle of its table migration
// (tm PENDING: the lock in <app>-CoordinatorState, everything else in the
// lease table): the leader gives it the leases, its metrics item is in the
// lease table, and at a graceful stop it evicts its leases with the KCL's
// 3.x evict write (no owner left, the counter moved), for the leader's
// next round. Its calls are judged against `kcltool iam-policy run` with
// the other end-to-end tests.
func TestRunKCL3PendingLayout(t *testing.T) {
	t.Parallel() // its own stream, tables and leader, no process-wide state; mostly waiting on lease and leader timings
	s := newE2EStack(t, 2)
	f := kcl3App(t, s, kcl3fleet.Pending)
	runLeader(t, f.NewLeader(kcl3Timings))
	ctx := context.Background()
	a := startWorker(t, "A", nil, kcl3RunArgs(s, "A", "--exec", "cat >/dev/null")...)
	eventuallyE2E(t, 60*time.Second, "the leader to give A both leases and A's metrics item in the lease table", func() bool {
		reports, err := f.WorkerMetricsReports(ctx)
		if err != nil {
			t.Fatal(err)
		}
		inLeaseTable := false
		for _, r := range reports {
			inLeaseTable = inLeaseTable || r.WorkerID == "A" && r.Table == s.app
		}
		return inLeaseTable && fleetOwners(t, f)["A"] == 2
	})
	// Renewed by A (the leader's assignLease set the counter to 1): A
	// found them through the index and holds them.
	eventuallyE2E(t, 30*time.Second, "A to renew both leases", func() bool {
		ls, err := f.Leases(ctx)
		if err != nil {
			t.Fatal(err)
		}
		renewed := 0
		for _, l := range ls {
			if l.LeaseOwner == "A" && l.LeaseCounter > 1 {
				renewed++
			}
		}
		return renewed == 2
	})
	before, err := f.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a.signal(t, syscall.SIGTERM)
	if code := a.exitCode(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	after, err := f.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	counter := map[string]int64{}
	for _, l := range before {
		counter[l.LeaseKey] = l.LeaseCounter
	}
	for _, l := range after {
		if l.LeaseOwner != "" || l.CheckpointOwner != "" || l.LeaseCounter <= counter[l.LeaseKey] {
			t.Errorf("lease %s after the stop: owner %q, checkpointOwner %q, counter %d (was %d); want evicted", l.LeaseKey, l.LeaseOwner, l.CheckpointOwner, l.LeaseCounter, counter[l.LeaseKey])
		}
	}
	checkModeLogged(t, a.logs.String(), "leader", "pending (writes to the lease table, reads merged)", "PENDING")
}
