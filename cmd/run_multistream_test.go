package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/internal/testenv/testfixtures"
	"github.com/kcltool/kcltool/leasecore"
)

// --stream twice: one worker reads both streams from a KCL multi-stream
// lease table, and stops cleanly.
func TestRunTwoStreamsUsesMultiStreamKeys(t *testing.T) {
	s := newE2EStack(t, 1)
	other := s
	other.stream = emulator.Name(t, "s2")
	emulator.CreateStream(t, s.kin, other.stream, 1)
	s.putRound(t, keyNames(4), 0)
	other.putRound(t, keyNames(3), 0)
	out := filepath.Join(t.TempDir(), "out")
	w := startWorker(t, "A", []string{"OUT=" + out}, runArgs(s, "A", "--stream", other.stream, "--exec", `cat >> "$OUT.$KCLTOOL_STREAM"`)...)
	lines := func(stream string) int {
		b, _ := os.ReadFile(out + "." + stream)
		return strings.Count(string(b), "\n")
	}
	eventuallyE2E(t, 60*time.Second, "the records of both streams", func() bool { return lines(s.stream) == 4 && lines(other.stream) == 3 })
	w.signal(t, syscall.SIGTERM)
	if code := w.exitCode(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	ls := s.leases(t)
	if len(ls) != 2 {
		t.Fatalf("%d leases, want one per stream", len(ls))
	}
	for key, l := range ls {
		id, shard, ok := leasecore.ParseMultiStreamKey(key)
		if !ok || l.StreamName != id || l.ShardID != shard || !(strings.Contains(id, ":"+s.stream+":") || strings.Contains(id, ":"+other.stream+":")) {
			t.Errorf("lease %q (streamName %q, shardId %q) is not a multi-stream lease of the two streams", key, l.StreamName, l.ShardID)
		}
	}
}

// --multi-stream=false on a KCL multi-stream table: exit 1, the reason,
// nothing written.
func TestRunSingleStreamRefusesMultiStreamTable(t *testing.T) {
	s := newE2EStack(t, 1)
	emulator.CreateLeaseTable(t, s.ddb, s.app)
	item, err := leasecore.UnmarshalItemJSON(testfixtures.Read(t, "f5-multistream.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(s.app), Item: item}); err != nil {
		t.Fatal(err)
	}
	w := startWorker(t, "A", nil, runArgs(s, "A", "--multi-stream=false", "--exec", "cat")...)
	if code := w.exitCode(t, 30*time.Second); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if logs := w.logs.String(); !strings.Contains(logs, "is a KCL multi-stream table") || !strings.Contains(logs, "123456789012:orders:1700000000:shardId-000000000007") {
		t.Fatalf("stderr does not explain the refusal:\n%s", logs)
	}
	ls := s.leases(t)
	if len(ls) != 1 || ls["123456789012:orders:1700000000:shardId-000000000007"].LeaseCounter != 64 {
		t.Fatalf("the table was written: %v", ls)
	}
}
