package cmd

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// fleetHandler appends each batch to $OUT under a lock, after a header line
// naming the worker, the shard and the attempt, so that the test can tell
// who handled what, in which order. It takes a tenth of a second per batch,
// and shard 3 more, so that shards build a backlog: when the merge of shards
// 2 and 3 creates shard 6 at the end of shard 2, shard 6 has records to read
// while shard 3 is still behind, which is when reading it too early would
// break a key's order.
const fleetHandler = `case $KCLTOOL_SHARD_ID in *3) sleep 0.25;; *) sleep 0.1;; esac; flock "$OUT.lock" sh -c '{ echo "# $KCLTOOL_WORKER_ID $KCLTOOL_SHARD_ID $KCLTOOL_ATTEMPT"; cat; } >> "$OUT"'`

// handledBatch is one handler run as the fleet handler wrote it.
type handledBatch struct {
	idx     int
	worker  string
	shard   string
	attempt int
	records []handledRecord
}

type handledRecord struct {
	key string
	n   int
	seq string
}

func readBatches(t *testing.T, path string) []handledBatch {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []handledBatch
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "# ") {
			fields := strings.Fields(line[2:])
			if len(fields) != 3 {
				t.Fatalf("header %q", line)
			}
			attempt, _ := strconv.Atoi(fields[2])
			out = append(out, handledBatch{idx: len(out), worker: fields[0], shard: fields[1], attempt: attempt})
			continue
		}
		if len(out) == 0 {
			t.Fatalf("record before any header: %q", line)
		}
		var r struct {
			Data           string `json:"data"`
			PartitionKey   string `json:"partitionKey"`
			SequenceNumber string `json:"sequenceNumber"`
			ShardID        string `json:"shardId"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("handler input line %q: %v", line, err)
		}
		data, err := base64.StdEncoding.DecodeString(r.Data)
		if err != nil {
			t.Fatal(err)
		}
		key, num, ok := strings.Cut(string(data), ":")
		n, err := strconv.Atoi(num)
		if !ok || err != nil || key != r.PartitionKey {
			t.Fatalf("record %q with partition key %q", data, r.PartitionKey)
		}
		b := &out[len(out)-1]
		if r.ShardID != b.shard {
			t.Fatalf("batch of %s holds a record of %s: batches must not mix shards", b.shard, r.ShardID)
		}
		b.records = append(b.records, handledRecord{key: key, n: n, seq: r.SequenceNumber})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// readBatchesLocked reads the batches under the handlers' lock, so that no
// batch is half written while it is read.
func readBatchesLocked(t *testing.T, path string) []handledBatch {
	t.Helper()
	l, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := syscall.Flock(int(l.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer syscall.Flock(int(l.Fd()), syscall.LOCK_UN)
	return readBatches(t, path)
}

// leasesLostIn returns the leases a worker's JSON log says it lost.
func leasesLostIn(log string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(log, "\n") {
		var l struct {
			Msg   string `json:"msg"`
			Lease string `json:"lease"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "lease lost" && l.Lease != "" {
			out[l.Lease] = true
		}
	}
	return out
}

func distinctRecords(batches []handledBatch) int {
	seen := map[string]bool{}
	for _, b := range batches {
		for _, r := range b.records {
			seen[r.key+":"+strconv.Itoa(r.n)] = true
		}
	}
	return len(seen)
}

// The main scenario of issue 4: 5,000 records over 200 keys into a 4-shard
// stream, two workers, a split and a merge during the run, kill -9 of one
// worker, a third joining later.
func TestRunFleetAcrossReshardsCrashAndJoin(t *testing.T) {
	t.Parallel() // long, and mostly waiting on the local servers: it overlaps others on CI's two cores
	s := newE2EStack(t, 4)
	out := filepath.Join(t.TempDir(), "handled.jsonl")
	args := func(id string) []string { return runArgs(s, id, "--batch-size", "25", "--exec", fleetHandler) }
	batches, want := runFleetScenario(t, s, out, args, 90*time.Second)
	byWorker := map[string]int{}
	for _, b := range batches {
		byWorker[b.worker] += len(b.records)
	}
	if byWorker["A"] == 0 || byWorker["B"] == 0 || byWorker["C"] == 0 {
		t.Errorf("records handled per worker %v: every worker should have had a share", byWorker)
	}
	t.Logf("records handled per worker %v, %d batches, %d handlings of %d records", byWorker, len(batches), sum(byWorker), want)
	checkFleetLeaseTable(t, s)
}

// runFleetScenario runs the fleet scenario with the workers args starts,
// each handling into out: A and B share a 4-shard stream, shard 0 splits,
// shards 2 and 3 merge, B is killed with SIGKILL, C joins, and A and C stop
// gracefully once every record was handled (within drain). extraEnv goes
// to every worker. It checks each
// key's first handlings are in order and duplicates come only from moved
// leases, and returns the batches handled and the number of records.
func runFleetScenario(t *testing.T, s e2eStack, out string, args func(id string) []string, drain time.Duration, extraEnv ...string) ([]handledBatch, int) {
	t.Helper()
	env := append([]string{"OUT=" + out}, extraEnv...)
	keys := keyNames(200)
	const rounds = 25
	round := 0
	produce := func(n int) {
		for range n {
			s.putRound(t, keys, round)
			round++
		}
	}
	ctx := context.Background()

	a := startWorker(t, "A", env, args("A")...)
	b := startWorker(t, "B", env, args("B")...)
	eventuallyE2E(t, 30*time.Second, "A and B to share the leases", func() bool { o := s.owners(t); return o["A"] > 0 && o["B"] > 0 })
	produce(6)

	// Split shard 0 in the middle of its range (children 4 and 5).
	shards, err := s.kin.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(s.stream)})
	if err != nil {
		t.Fatal(err)
	}
	emulator.SplitShard(t, s.kin, s.stream, "shardId-000000000000", emulator.MidHashKey(shards.Shards[0].HashKeyRange))
	produce(5)

	// Merge shards 2 and 3 (child 6).
	emulator.MergeShards(t, s.kin, s.stream, "shardId-000000000002", "shardId-000000000003")
	produce(5)

	// B must have handled a batch, not only started reading, before the
	// kill: the test checks below that every worker had a share, and under
	// load B's first handler could still be running here.
	eventuallyE2E(t, 20*time.Second, "B to handle a batch before it is killed", func() bool {
		for _, hb := range readBatchesLocked(t, out) {
			if hb.worker == "B" && len(hb.records) > 0 {
				return true
			}
		}
		return false
	})
	b.signal(t, syscall.SIGKILL)
	b.exitCode(t, 10*time.Second)
	produce(5)

	c := startWorker(t, "C", env, args("C")...)
	eventuallyE2E(t, 30*time.Second, "C to take a shard to read", func() bool { return s.reading(t)["C"] > 0 })
	produce(rounds - round)

	want := len(keys) * rounds
	eventuallyE2E(t, drain, fmt.Sprintf("all %d records handled", want), func() bool {
		return distinctRecords(readBatchesLocked(t, out)) == want
	})
	a.signal(t, syscall.SIGTERM)
	c.signal(t, syscall.SIGTERM)
	if code := a.exitCode(t, 40*time.Second); code != 0 {
		t.Errorf("A exited %d after SIGTERM, want 0", code)
	}
	if code := c.exitCode(t, 40*time.Second); code != 0 {
		t.Errorf("C exited %d after SIGTERM, want 0", code)
	}

	batches := readBatches(t, out)
	checkFirstHandlingOrder(t, batches, keys, rounds)
	lost := map[string]map[string]bool{}
	for _, w := range []*worker{a, b, c} {
		lost[w.name] = leasesLostIn(w.logs.String())
	}
	checkDuplicatesFromMovedLeases(t, batches, lost)
	return batches, want
}

// checkFleetLeaseTable: after the fleet scenario the lease table is valid
// KCL format (leases decodes and validates every item), every parent is
// finished or cleaned up, every open shard checkpointed at a sequence
// number, the merge child names both parents, and every lease is released.
func checkFleetLeaseTable(t *testing.T, s e2eStack) {
	t.Helper()
	ls := s.leases(t)
	for _, p := range []string{"shardId-000000000000", "shardId-000000000002", "shardId-000000000003"} {
		if l, ok := ls[p]; ok && !l.Checkpoint.IsShardEnd() {
			t.Errorf("parent %s has checkpoint %s, want SHARD_END or no lease", p, l.Checkpoint.SequenceNumber)
		}
	}
	for _, child := range []string{"shardId-000000000001", "shardId-000000000004", "shardId-000000000005", "shardId-000000000006"} {
		l, ok := ls[child]
		if !ok || leasecore.IsSentinel(l.Checkpoint.SequenceNumber) {
			t.Errorf("open shard %s: lease %v, checkpoint %q; want a sequence number checkpoint", child, ok, l.Checkpoint.SequenceNumber)
		}
	}
	if l, ok := ls["shardId-000000000006"]; ok && fmt.Sprint(slices.Sorted(slices.Values(l.ParentShardIDs))) != "[shardId-000000000002 shardId-000000000003]" {
		t.Errorf("merge child parents %v", l.ParentShardIDs)
	}
	for key, l := range ls {
		if l.LeaseOwner != "" {
			t.Errorf("lease %s still owned by %s after both workers stopped gracefully", key, l.LeaseOwner)
		}
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// checkFirstHandlingOrder: every record handled at least once, and for
// every key the first handlings, in the order the handlers wrote them,
// follow the key's counter, across the split and the merge.
func checkFirstHandlingOrder(t *testing.T, batches []handledBatch, keys []string, rounds int) {
	t.Helper()
	next := map[string]int{}
	seen := map[string]bool{}
	for _, b := range batches {
		for _, r := range b.records {
			id := r.key + ":" + strconv.Itoa(r.n)
			if seen[id] {
				continue
			}
			seen[id] = true
			if r.n != next[r.key] {
				t.Fatalf("key %s: first handled record %d (batch %d, worker %s, %s) when %d was due: order broken",
					r.key, r.n, b.idx, b.worker, b.shard, next[r.key])
			}
			next[r.key]++
		}
	}
	for _, k := range keys {
		if next[k] != rounds {
			t.Fatalf("key %s: %d of %d records handled", k, next[k], rounds)
		}
	}
}

// checkDuplicatesFromMovedLeases: a record handled twice must first have
// been handled in a batch that was in flight when its lease moved: the next
// batch of that shard came from another worker (the killed worker's
// unfinished batch, or a batch whose lease was stolen). A worker handling
// its own records twice would mean a lost checkpoint.
//
// lost holds, per worker, the leases its log says it lost. A lease can move
// away and back with no batch in between (the other worker took it and was
// killed, or gave it back, before its first batch): the next batch of the
// shard is then the same worker's, and the duplicate is still one from a
// lease move, which that worker's "lease lost" line shows.
func checkDuplicatesFromMovedLeases(t *testing.T, batches []handledBatch, lost map[string]map[string]bool) {
	t.Helper()
	first := map[string]int{}
	moved := map[int]bool{}
	dups := 0
	for _, b := range batches {
		for _, r := range b.records {
			id := r.key + ":" + strconv.Itoa(r.n)
			fi, ok := first[id]
			if !ok {
				first[id] = b.idx
				continue
			}
			dups++
			fb := batches[fi]
			var after *handledBatch
			for j := fb.idx + 1; j < len(batches); j++ {
				if batches[j].shard == fb.shard {
					after = &batches[j]
					break
				}
			}
			if (after == nil || after.worker == fb.worker) && !lost[fb.worker][fb.shard] {
				t.Fatalf("record %s of %s handled again by %s (batch %d) although batch %d of %s was followed by the same worker's: a duplicate without a lease move",
					id, fb.shard, b.worker, b.idx, fb.idx, fb.worker)
			}
			moved[fb.idx] = true
		}
	}
	t.Logf("%d duplicate handlings, from %d batches in flight when their lease moved", dups, len(moved))
}
