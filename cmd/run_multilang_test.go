package cmd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/internal/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// awsKCLProcessor is the record processor written against AWS's Node.js
// KCL client (the aws-kcl npm package pinned in package.json, unmodified),
// and the node program that runs it.
func awsKCLProcessor(t *testing.T) []string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the aws-kcl test needs Node.js")
	}
	root, err := emulator.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "node_modules", "aws-kcl", "package.json")); err != nil {
		t.Fatalf("the aws-kcl package is not installed (npm ci at the repository's root): %v", err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "awskcl", "fleet_processor.js"))
	if err != nil {
		t.Fatal(err)
	}
	return []string{node, script}
}

// The --exec fleet scenario with AWS's own MultiLang client as the record
// processor: a 4-shard stream, two workers, a split and a merge during the
// run, kill -9 of one worker, a third joining later. Every record is
// handled, each key's first handlings are in order, duplicates come only
// from batches in flight when their lease moved, and the lease table is a
// valid KCL one at the end.
func TestRunMultiLangAWSKCLFleet(t *testing.T) {
	processor := awsKCLProcessor(t)
	s := newE2EStack(t, 4)
	out := filepath.Join(t.TempDir(), "handled.jsonl")
	env := []string{"OUT=" + out}
	args := func(id string) []string {
		return append(runArgs(s, id, "--multilang", "--max-records", "25", "--shutdown-grace", "10s", "--"), processor...)
	}
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

	shards, err := s.kin.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(s.stream)})
	if err != nil {
		t.Fatal(err)
	}
	emulator.SplitShard(t, s.kin, s.stream, "shardId-000000000000", emulator.MidHashKey(shards.Shards[0].HashKeyRange))
	produce(5)
	emulator.MergeShards(t, s.kin, s.stream, "shardId-000000000002", "shardId-000000000003")
	produce(5)

	eventuallyE2E(t, 20*time.Second, "B to read a shard before it is killed", func() bool { return s.reading(t)["B"] > 0 })
	b.signal(t, syscall.SIGKILL)
	b.exitCode(t, 10*time.Second)
	produce(5)

	c := startWorker(t, "C", env, args("C")...)
	eventuallyE2E(t, 30*time.Second, "C to take a shard to read", func() bool { return s.reading(t)["C"] > 0 })
	produce(rounds - round)

	want := len(keys) * rounds
	eventuallyE2E(t, 120*time.Second, fmt.Sprintf("all %d records handled", want), func() bool {
		return distinctRecords(readBatches(t, out)) == want
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
	checkDuplicatesFromMovedLeases(t, batches)
	byWorker := map[string]int{}
	for _, b := range batches {
		byWorker[b.worker] += len(b.records)
	}
	t.Logf("records handled per worker %v, %d batches, %d handlings of %d records", byWorker, len(batches), sum(byWorker), want)

	// The child's checkpoints only: every parent finished or cleaned up,
	// every open shard checkpointed at a sequence number, every lease
	// released, and the table decodes as the KCL's.
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
	for key, l := range ls {
		if l.LeaseOwner != "" {
			t.Errorf("lease %s still owned by %s after both workers stopped gracefully", key, l.LeaseOwner)
		}
	}
	// No child outlives its worker: B's, orphaned by kill -9, exit at
	// their stdin's EOF; A's and C's were stopped before the release.
	if pgrep, err := exec.LookPath("pgrep"); err == nil {
		eventuallyE2E(t, 10*time.Second, "no record processor left running", func() bool {
			out, _ := exec.Command(pgrep, "-f", processor[1]).Output()
			return strings.TrimSpace(string(out)) == ""
		})
	}
}
