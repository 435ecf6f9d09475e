package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// scenario is a real stream in kinesis-local and a lease table in dynalite,
// with leases written by kcltool's KCL codec.
type scenario struct {
	t      *testing.T
	kin    *kinesis.Client
	ddb    *dynamodb.Client
	stream string
	table  string
	shards map[string]kintypes.Shard
	last   map[string]string // last sequence number put per shard
	prev   map[string]string // the one before it
}

func newScenario(t *testing.T, shards int32) *scenario {
	// The golden files normalise the names by these prefixes.
	st := emulator.NewStack(t, shards, emulator.StackOptions{StreamPrefix: "views", TablePrefix: "app"})
	s := &scenario{t: t, kin: st.Kinesis, ddb: st.DynamoDB, stream: st.Stream, table: st.Table, last: map[string]string{}, prev: map[string]string{}}
	s.refresh()
	return s
}

func (s *scenario) refresh() {
	s.t.Helper()
	out, err := s.kin.ListShards(context.Background(), &kinesis.ListShardsInput{StreamName: aws.String(s.stream)})
	if err != nil {
		s.t.Fatal(err)
	}
	s.shards = map[string]kintypes.Shard{}
	for _, sh := range out.Shards {
		s.shards[aws.ToString(sh.ShardId)] = sh
	}
}

func shardID(n int) string { return fmt.Sprintf("shardId-%012d", n) }

// put writes n records into the shard by explicit hash key.
func (s *scenario) put(shard string, n int) {
	s.t.Helper()
	key := aws.ToString(s.shards[shard].HashKeyRange.StartingHashKey)
	for i := range n {
		out, err := s.kin.PutRecord(context.Background(), &kinesis.PutRecordInput{StreamName: aws.String(s.stream),
			PartitionKey: aws.String("k"), ExplicitHashKey: aws.String(key), Data: fmt.Appendf(nil, "r%d", i)})
		if err != nil {
			s.t.Fatal(err)
		}
		if got := aws.ToString(out.ShardId); got != shard {
			s.t.Fatalf("record went to %s, want %s", got, shard)
		}
		s.prev[shard], s.last[shard] = s.last[shard], aws.ToString(out.SequenceNumber)
	}
}

func (s *scenario) split(shard string) {
	s.t.Helper()
	mid := emulator.MidHashKey(s.shards[shard].HashKeyRange)
	emulator.SplitShard(s.t, s.kin, s.stream, shard, mid.Add(mid, big.NewInt(1)))
	s.refresh()
}

func (s *scenario) merge(a, b string) {
	s.t.Helper()
	emulator.MergeShards(s.t, s.kin, s.stream, a, b)
	s.refresh()
}

// lease writes a lease as the KCL serializer would, with the shard's
// hash range and parents.
func (s *scenario) lease(shard, owner, checkpoint string) {
	s.t.Helper()
	l := leasecore.Lease{LeaseKey: shard, LeaseOwner: owner, LeaseCounter: 7, Checkpoint: leasecore.SequenceNumber{SequenceNumber: checkpoint}}
	if sh, ok := s.shards[shard]; ok {
		l.StartingHashKey, l.EndingHashKey = aws.ToString(sh.HashKeyRange.StartingHashKey), aws.ToString(sh.HashKeyRange.EndingHashKey)
		for _, p := range []*string{sh.ParentShardId, sh.AdjacentParentShardId} {
			if p != nil {
				l.ParentShardIDs = append(l.ParentShardIDs, *p)
			}
		}
	}
	if _, err := leasecore.CreateLease(context.Background(), s.ddb, s.table, l); err != nil {
		s.t.Fatal(err)
	}
}

// kcltool runs the built binary (testscript put it on PATH) against the
// local servers and returns stdout, stderr and the exit code.
func (s *scenario) kcltool(args ...string) (string, string, int) {
	s.t.Helper()
	cmd := exec.Command("kcltool", args...)
	cmd.Env = recordCalls(s.t, args, append(os.Environ(), emulator.Env(s.t)...))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		s.t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// jsonRows decodes a JSON array of objects.
func jsonRows(t *testing.T, out string) []map[string]any {
	t.Helper()
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("not a JSON array: %v\n%s", err, out)
	}
	return rows
}

var (
	longDigits = regexp.MustCompile(`\d{45,}`) // sequence numbers; hash keys have at most 39 digits
	scenarioID = regexp.MustCompile(`(views|app)-Test[^"\s,]*`)
	millisNum  = regexp.MustCompile(`"millisBehindLatest":[1-9]\d*`)
	shortSeq   = regexp.MustCompile(`\d{4}…\d{4}`)
)

// normalize replaces what differs between runs (sequence numbers, names,
// non-zero lag) so a golden file can pin the JSON shape.
func normalize(s string) string {
	s = longDigits.ReplaceAllString(s, "<seq>")
	s = shortSeq.ReplaceAllString(s, "<seq>")
	s = scenarioID.ReplaceAllString(s, "<$1>")
	return millisNum.ReplaceAllString(s, `"millisBehindLatest":<ms>`)
}

// golden compares got with testdata/golden/name, rewriting it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := "testdata/golden/" + name
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}
