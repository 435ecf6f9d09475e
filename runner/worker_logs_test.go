package runner

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// A lease stolen while its shard is being read, whose loss the reader's own
// checkpoint notices before the renewer does, is logged as a loss that
// stopped the shard, not as "lease gone" of a shard not being read.
func TestLeaseLostAtCheckpointIsLoggedAsStoppingTheShard(t *testing.T) {
	s := newStack(t, 1)
	out := outFile(t)
	s.put(t, func(k string) string { return k }, keys("k", 5)...)
	cfg := s.config(t, "victim", out, "sh", "-c", `touch "$OUT.started"; while [ ! -e "$OUT.go" ]; do sleep 0.01; done; cat >> "$OUT"`)
	// A failover time long enough that the renewer does not notice first.
	cfg.Lease.FailoverTime = 6 * time.Second
	logs := &logBuffer{}
	cfg.Log = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("worker log:\n%s", logs.String())
		}
	})
	start(t, s, cfg)
	eventually(t, 20*time.Second, "the handler to start", func() bool { _, err := os.Stat(out + ".started"); return err == nil })

	held := leases(t, s)["shardId-000000000000"]
	if _, ok, err := leasecore.TakeLease(context.Background(), s.ddb, s.table, held, "thief"); err != nil || !ok {
		t.Fatalf("steal: ok=%v err=%v", ok, err)
	}
	// The handler ends now: its checkpoint is the first to find the lease gone.
	if err := os.WriteFile(out+".go", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the worker to log the loss of the shard", func() bool {
		return strings.Contains(logs.String(), `"msg":"lease lost: stopped the shard"`) || strings.Contains(logs.String(), `"msg":"lease gone; `)
	})
	if l := logs.String(); strings.Contains(l, `"msg":"lease gone; `) {
		t.Fatal(`the shard was being read, but its loss was logged as "lease gone" of a shard not being read`)
	}
}

// A malformed lease item is warned about at every shard sync, not once: it
// blocks its shard for as long as it stays.
func TestMalformedLeaseWarnedAtEveryShardSync(t *testing.T) {
	s := newStack(t, 2)
	emulator.CreateLeaseTable(t, s.ddb, s.table)
	item := leasecore.EncodeLease(leasecore.Lease{LeaseKey: "shardId-000000000001", Checkpoint: leasecore.SequenceNumber{SequenceNumber: leasecore.TRIM_HORIZON}})
	item[leasecore.AttrLeaseCounter] = &types.AttributeValueMemberS{Value: "7"}
	if _, err := s.ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item}); err != nil {
		t.Fatal(err)
	}
	cfg := s.config(t, "w1", outFile(t))
	cfg.ShardSyncInterval = 500 * time.Millisecond
	logs := &logBuffer{}
	cfg.Log = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("worker log:\n%s", logs.String())
		}
	})
	r := start(t, s, cfg)
	const want = `"level":"WARN","msg":"malformed lease item: no worker reads its shard until it is repaired (kcltool doctor prints the command that repairs it)","worker":"w1","err":"lease \"shardId-000000000001\": leaseCounter has type S, want N"`
	eventually(t, 10*time.Second, "the warning at three shard syncs", func() bool { return strings.Count(logs.String(), want) >= 3 })
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}
