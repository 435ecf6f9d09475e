package cmd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// awsKCLProcessor is the record processor written against AWS's Node.js
// KCL client (the aws-kcl npm package pinned in package.json, unmodified),
// and the node program that runs it.
func awsKCLProcessor(t *testing.T) []string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: the aws-kcl tests run AWS's Node.js KCL client (and the local servers) on Node.js 20 or newer; install node and npm")
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
	t.Parallel() // long, and mostly waiting on the local servers: it overlaps others on CI's two cores
	processor := awsKCLProcessor(t)
	s := newE2EStack(t, 4)
	out := filepath.Join(t.TempDir(), "handled.jsonl")
	args := func(id string) []string {
		return append(runArgs(s, id, "--multilang", "--max-records", "25", "--shutdown-grace", "10s", "--"), processor...)
	}
	batches, want := runFleetScenario(t, s, out, args, 120*time.Second)
	byWorker := map[string]int{}
	for _, b := range batches {
		byWorker[b.worker] += len(b.records)
	}
	t.Logf("records handled per worker %v, %d batches, %d handlings of %d records", byWorker, len(batches), sum(byWorker), want)
	// The child's checkpoints only put the table in that state.
	checkFleetLeaseTable(t, s)
	// No child outlives its worker: B's, orphaned by kill -9, exit at
	// their stdin's EOF; A's and C's were stopped before the release.
	if pgrep, err := exec.LookPath("pgrep"); err == nil {
		eventuallyE2E(t, 10*time.Second, "no record processor left running", func() bool {
			out, _ := exec.Command(pgrep, "-f", processor[1]).Output()
			return strings.TrimSpace(string(out)) == ""
		})
	}
}

// The aws-kcl sample as users have it: its properties file (executableName
// = node sample_kcl_app.js, DefaultCredentialsProvider, no polling key, so
// fan-out under the MultiLangDaemon's DEFAULT rule) and its consumer, with
// only the endpoints, region and credentials from the environment (and
// NODE_PATH, since the sample is copied out of the repository). It runs
// with polling and one warning, every record reaches the sample's files,
// and its checkpoints are written.
func TestRunMultiLangAWSKCLSample(t *testing.T) {
	processor := awsKCLProcessor(t)
	st := emulator.NewStack(t, 2, emulator.StackOptions{})
	dir := t.TempDir()
	props, err := os.ReadFile(filepath.Join("testdata", "awskcl", "sample", "sample.properties"))
	if err != nil {
		t.Fatal(err)
	}
	props = []byte(strings.NewReplacer("@STREAM@", st.Stream, "@APP@", st.Table).Replace(string(props)))
	if err := os.WriteFile(filepath.Join(dir, "sample.properties"), props, 0o644); err != nil {
		t.Fatal(err)
	}
	app, err := os.ReadFile(filepath.Join("testdata", "awskcl", "sample", "sample_kcl_app.js"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sample_kcl_app.js"), app, 0o644); err != nil {
		t.Fatal(err)
	}
	root, _ := emulator.RepoRoot()
	// The sample sets no polling key: under the MLD's DEFAULT rule it reads
	// with enhanced fan-out, through the harness's EFO proxy.
	env := []string{"NODE_PATH=" + filepath.Join(root, "node_modules"), "PATH=" + filepath.Dir(processor[0]) + ":" + os.Getenv("PATH"),
		"AWS_ENDPOINT_URL_KINESIS=" + emulator.KinesisEFOEndpoint(t)}
	w := startWorkerIn(t, dir, "sample", env, "run", "--properties", "sample.properties")

	s := e2eStack{ddb: st.DynamoDB, kin: st.Kinesis, stream: st.Stream, app: st.Table}
	keys := keyNames(30)
	for round := range 3 {
		s.putRound(t, keys, round)
	}
	lines := func() []string {
		var out []string
		for _, shard := range []string{"shardId-000000000000", "shardId-000000000001"} {
			data, _ := os.ReadFile(filepath.Join(dir, shard+".log"))
			out = append(out, strings.Fields(strings.ReplaceAll(string(data), "\n", " | "))...)
		}
		return out
	}
	eventuallyE2E(t, 60*time.Second, "90 records in the sample's files", func() bool {
		n := 0
		for _, f := range lines() {
			if strings.Contains(f, ":") {
				n++
			}
		}
		return n >= 90
	})
	// Each shard's checkpoint is the last record its file holds.
	eventuallyE2E(t, 20*time.Second, "the sample's checkpoints", func() bool {
		ls := s.leases(t)
		for _, shard := range []string{"shardId-000000000000", "shardId-000000000001"} {
			data, _ := os.ReadFile(filepath.Join(dir, shard+".log"))
			rows := strings.Split(strings.TrimSpace(string(data)), "\n")
			f := strings.Fields(rows[len(rows)-1])
			if len(f) != 3 || ls[shard].Checkpoint.SequenceNumber != f[2] {
				return false
			}
		}
		return true
	})
	w.signal(t, syscall.SIGTERM)
	if code := w.exitCode(t, 40*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM, want 0", code)
	}
	logs := w.logs.String()
	if !strings.Contains(logs, "enhanced fan-out consumer ready") {
		t.Errorf("the sample did not read with enhanced fan-out:\n%s", logs)
	}
	sum, err := st.Kinesis.DescribeStreamSummary(context.Background(), &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(st.Stream)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Kinesis.DescribeStreamConsumer(context.Background(), &kinesis.DescribeStreamConsumerInput{
		StreamARN: sum.StreamDescriptionSummary.StreamARN, ConsumerName: aws.String(st.Table)}); err != nil {
		t.Errorf("no stream consumer named after the application: %v", err)
	}
	for key, l := range s.leases(t) {
		if l.LeaseOwner != "" {
			t.Errorf("lease %s still owned by %s after SIGTERM", key, l.LeaseOwner)
		}
	}
}

// startWorkerIn is startWorker in the working folder dir, without the
// recording proxy: its command line names a properties file, which
// iam-policy does not read.
func startWorkerIn(t *testing.T, dir, name string, env []string, args ...string) *worker {
	t.Helper()
	cmd := exec.Command(kcltoolBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), emulator.Env(t)...), env...)
	return launchWorker(t, name, cmd)
}
