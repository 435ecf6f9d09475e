package runner

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// trimmedProxy puts a fault proxy that refuses shardID's positions (the
// TrimmedPosition fault) between the worker and kinesis-local.
func trimmedProxy(t *testing.T, shardID string) (*emulator.FaultProxy, *kinesis.Client) {
	t.Helper()
	p := emulator.NewFaultProxy(t, emulator.KinesisEndpoint(t), emulator.TrimmedPosition, 1, "GetShardIterator", 1)
	p.MatchShard(shardID)
	return p, kinesis.NewFromConfig(emulator.Config(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(p.URL) })
}

// seedLease writes a lease with a numeric checkpoint, as a worker that read
// the shard up to seq left it.
func seedLease(t *testing.T, s stack, key, seq string) {
	t.Helper()
	emulator.CreateLeaseTable(t, s.ddb, s.table)
	if _, err := leasecore.CreateLease(context.Background(), s.ddb, s.table, leasecore.Lease{
		LeaseKey: key, Checkpoint: leasecore.SequenceNumber{SequenceNumber: seq},
	}); err != nil {
		t.Fatal(err)
	}
}

// A closed parent whose checkpoint is older than its trim horizon: Kinesis
// refuses GetShardIterator at the checkpoint with InvalidArgumentException
// (the fault proxy refuses AT/AFTER_SEQUENCE_NUMBER only; TRIM_HORIZON
// passes). The records between the checkpoint and the trim horizon are
// lost, but the rest of the parent is not: it is read again from
// TRIM_HORIZON to its end, each key's records before its children's, then
// finished the usual way, parent and children marked as trimmed (not as
// expired), with a warning naming the checkpoint. kinesis-local cannot
// trim, so its trim horizon is the shard's start: the parent's records at
// or below the checkpoint come back and are dropped as already handled.
// Before, the parent was finished at once: its records after the
// checkpoint were never handled, and the children started without them.
func TestTrimmedCheckpointOfClosedParentIsReadFromTrimHorizon(t *testing.T) {
	s := newStack(t, 1)
	const parent = "shardId-000000000000"
	ks := keys("k", 10)
	seqs := s.put(t, func(k string) string { return k + ":0" }, ks...)
	emulator.SplitShard(t, s.kin, s.stream, parent, new(big.Int).Lsh(big.NewInt(1), 126))
	s.put(t, func(k string) string { return k + ":1" }, ks...)
	checkpoint := seqs[ks[2]]
	seedLease(t, s, parent, checkpoint)
	proxy, kin := trimmedProxy(t, parent)

	out := outFile(t)
	cfg := s.config(t, "w1", out)
	cfg.CleanupInterval = time.Hour // keep the finished parent to look at
	var logs *logBuffer
	cfg.Log, logs = recordedLogger(t, "w1")
	startVia(t, s, kin, cfg)
	children := func() int {
		n := 0
		for _, h := range readHandled(t, out) {
			if strings.HasSuffix(h.text(), ":1") {
				n++
			}
		}
		return n
	}
	eventually(t, 60*time.Second, "the children's 10 records", func() bool { return children() >= 10 })
	if proxy.Injected.Load() == 0 {
		t.Fatal("the parent's position was never refused")
	}
	// Per key: the parent's record when it is after the checkpoint, then
	// the child's; each once.
	got := readHandled(t, out)
	next := map[string]int{}
	for _, k := range ks[:3] {
		next[k] = 1 // at or below the checkpoint: handled before, not again
	}
	for _, h := range got {
		key, round, _ := strings.Cut(h.text(), ":")
		if want := fmt.Sprint(next[key]); round != want {
			t.Fatalf("key %s: handled round %s (shard %s), want %s: the parent's records after the checkpoint must be handled once, before the children's", key, round, h.ShardID, want)
		}
		if round == "0" && h.ShardID != parent {
			t.Fatalf("key %s round 0 handled from %s", key, h.ShardID)
		}
		next[key]++
	}
	if len(got) != 17 {
		t.Fatalf("handled %d records, want the parent's 7 after the checkpoint and the children's 10", len(got))
	}

	eventually(t, 10*time.Second, "the parent at SHARD_END", func() bool { return leases(t, s)[parent].Checkpoint.IsShardEnd() })
	ls := leases(t, s)
	mark, _ := ls[parent].Extra[reshard.AttrTrimmed].(*ddbtypes.AttributeValueMemberS)
	if mark == nil || !strings.Contains(mark.Value, " "+checkpoint+" ") || !strings.Contains(mark.Value, "InvalidArgumentException") {
		t.Errorf("parent %s = %v, want the refused checkpoint %s and the error", reshard.AttrTrimmed, ls[parent].Extra[reshard.AttrTrimmed], checkpoint)
	}
	if v, ok := ls[parent].Extra[reshard.AttrExpired]; ok {
		t.Errorf("parent marked expired (%v): only the records before the trim horizon were lost", v)
	}
	for _, c := range []string{"shardId-000000000001", "shardId-000000000002"} {
		m, _ := ls[c].Extra[reshard.AttrParentTrimmed].(*ddbtypes.AttributeValueMemberS)
		if m == nil || !strings.HasPrefix(m.Value, parent+" ") {
			t.Errorf("child %s: %s = %v, want it to name %s", c, reshard.AttrParentTrimmed, ls[c].Extra[reshard.AttrParentTrimmed], parent)
		}
		if v, ok := ls[c].Extra[reshard.AttrParentExpired]; ok {
			t.Errorf("child %s marked as the child of an expired shard (%v)", c, v)
		}
	}
	if !logLine(logs.String(), "level=WARN", "older than its trim horizon", "records between the checkpoint and the trim horizon are lost", "shard="+parent, "checkpoint="+checkpoint) {
		t.Errorf("no warning of the trimmed checkpoint:\n%s", logs.String())
	}
}

// An open shard whose checkpoint is older than its trim horizon is not
// skipped: as the KCL does, its reads are retried (logged with the fix),
// the lease and its checkpoint stay, and the shard is read from the
// checkpoint once Kinesis takes the position again.
func TestTrimmedCheckpointOfOpenShardIsRetried(t *testing.T) {
	s := newStack(t, 1)
	const shard = "shardId-000000000000"
	ks := keys("k", 6)
	seqs := s.put(t, func(k string) string { return k + ":0" }, ks...)
	seedLease(t, s, shard, seqs[ks[2]])
	proxy, kin := trimmedProxy(t, shard)

	out := outFile(t)
	cfg := s.config(t, "w1", out)
	var logs *logBuffer
	cfg.Log, logs = recordedLogger(t, "w1")
	startVia(t, s, kin, cfg)
	eventually(t, 20*time.Second, "the refused position tried again", func() bool { return proxy.Injected.Load() >= 2 })
	l := leases(t, s)[shard]
	if l.Checkpoint.SequenceNumber != seqs[ks[2]] {
		t.Fatalf("checkpoint moved to %s while the position was refused", l.Checkpoint.SequenceNumber)
	}
	if _, ok := l.Extra[reshard.AttrExpired]; ok {
		t.Fatalf("the open shard was marked expired")
	}
	if n := len(readHandled(t, out)); n != 0 {
		t.Fatalf("%d records handled while the position was refused", n)
	}
	if !logLine(logs.String(), "level=ERROR", "older than the open shard's trim horizon", "checkpoint reset") {
		t.Errorf("the retry is not logged at error with the fix:\n%s", logs.String())
	}

	proxy.SetRate(0)
	eventually(t, 20*time.Second, "the 3 records after the checkpoint", func() bool { return len(readHandled(t, out)) >= 3 })
	if n := len(readHandled(t, out)); n != 3 {
		t.Fatalf("%d records handled, want the 3 after the checkpoint", n)
	}
}
