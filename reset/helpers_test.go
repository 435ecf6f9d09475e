package reset

import (
	"context"
	"fmt"
	"math/big"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

func TestMain(m *testing.M) { os.Exit(emulator.Main(m)) }

// world is a stream in kinesis-local and a lease table in dynalite.
type world struct {
	t      *testing.T
	ctx    context.Context
	kin    *kinesis.Client
	ddb    *dynamodb.Client
	stream string
	table  string
	shards map[string]kintypes.Shard
	// puts are the sequence numbers written per shard, in order.
	puts map[string][]string
}

func newWorld(t *testing.T, shards int32) *world {
	t.Helper()
	st := emulator.NewStreamAndTable(t, shards)
	w := &world{t: t, ctx: context.Background(), kin: st.Kinesis, ddb: st.DynamoDB,
		stream: st.Stream, table: st.Table, puts: map[string][]string{}}
	w.refresh()
	return w
}

// newTable is a lease table without a stream, for the tests that need
// none.
func newTable(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, ctx: context.Background(), ddb: emulator.DynamoDB(t), table: emulator.Name(t, "app")}
	emulator.CreateLeaseTable(t, w.ddb, w.table)
	return w
}

func shardID(n int) string { return fmt.Sprintf("shardId-%012d", n) }

func (w *world) refresh() {
	w.t.Helper()
	out, err := w.kin.ListShards(w.ctx, &kinesis.ListShardsInput{StreamName: aws.String(w.stream)})
	if err != nil {
		w.t.Fatal(err)
	}
	w.shards = map[string]kintypes.Shard{}
	for _, s := range out.Shards {
		w.shards[*s.ShardId] = s
	}
}

// put writes n records into an open shard (by explicit hash key) and
// returns their sequence numbers.
func (w *world) put(shard string, n int) []string {
	w.t.Helper()
	return w.putData(shard, n, func(i int) []byte { return fmt.Appendf(nil, "%s-%d", shard, i) })
}

func (w *world) putData(shard string, n int, data func(i int) []byte) []string {
	w.t.Helper()
	key := aws.ToString(w.shards[shard].HashKeyRange.StartingHashKey)
	var seqs []string
	for i := range n {
		out, err := w.kin.PutRecord(w.ctx, &kinesis.PutRecordInput{StreamName: aws.String(w.stream),
			PartitionKey: aws.String("k"), ExplicitHashKey: aws.String(key), Data: data(i)})
		if err != nil {
			w.t.Fatal(err)
		}
		if aws.ToString(out.ShardId) != shard {
			w.t.Fatalf("record went to %s, want %s", aws.ToString(out.ShardId), shard)
		}
		seqs = append(seqs, *out.SequenceNumber)
	}
	w.puts[shard] = append(w.puts[shard], seqs...)
	return seqs
}

// mark returns an instant strictly between the records put before and
// after it (arrival timestamps have millisecond precision).
func mark() time.Time {
	time.Sleep(15 * time.Millisecond)
	t := time.Now()
	time.Sleep(15 * time.Millisecond)
	return t
}

func (w *world) split(shard string) {
	w.t.Helper()
	mid := emulator.MidHashKey(w.shards[shard].HashKeyRange)
	emulator.SplitShard(w.t, w.kin, w.stream, shard, mid.Add(mid, big.NewInt(1)))
	w.refresh()
}

func (w *world) merge(a, b string) {
	w.t.Helper()
	emulator.MergeShards(w.t, w.kin, w.stream, a, b)
	w.refresh()
}

// lease creates a lease shaped as KCL creates it (hash range, parents),
// owned by owner (none when empty), with a counter that is not 0.
func (w *world) lease(shard, owner, checkpoint string) {
	w.t.Helper()
	l := leasecore.Lease{LeaseKey: shard, LeaseOwner: owner, LeaseCounter: 7, Checkpoint: leasecore.SequenceNumber{SequenceNumber: checkpoint}}
	if s, ok := w.shards[shard]; ok {
		l.StartingHashKey, l.EndingHashKey = *s.HashKeyRange.StartingHashKey, *s.HashKeyRange.EndingHashKey
		for _, p := range []*string{s.ParentShardId, s.AdjacentParentShardId} {
			if p != nil {
				l.ParentShardIDs = append(l.ParentShardIDs, *p)
			}
		}
	}
	if ok, err := leasecore.CreateLease(w.ctx, w.ddb, w.table, l); err != nil || !ok {
		w.t.Fatalf("create lease %s: %v %v", shard, ok, err)
	}
}

// seed puts raw items as written.
func (w *world) seed(items ...map[string]ddbtypes.AttributeValue) {
	w.t.Helper()
	for _, it := range items {
		if _, err := w.ddb.PutItem(w.ctx, &dynamodb.PutItemInput{TableName: aws.String(w.table), Item: it}); err != nil {
			w.t.Fatal(err)
		}
	}
}

func (w *world) scan() leasecore.ScanResult {
	w.t.Helper()
	res, err := leasecore.ScanTable(w.ctx, w.ddb, w.table, leasecore.ScanOptions{ConsistentRead: true, KeepItems: true})
	if err != nil {
		w.t.Fatal(err)
	}
	return res
}

func (w *world) leases() map[string]leasecore.Lease {
	w.t.Helper()
	out := map[string]leasecore.Lease{}
	for _, l := range w.scan().Leases {
		out[l.LeaseKey] = l
	}
	return out
}

func (w *world) items() map[string]map[string]ddbtypes.AttributeValue {
	return itemsByKey(w.scan().Items)
}

func (w *world) plan(opt ResetOptions) *Plan {
	w.t.Helper()
	opt.Table = w.table
	if opt.Stream == "" {
		opt.Stream = w.stream
	}
	var kin StreamAPI
	if w.kin != nil {
		kin = w.kin
	}
	p, err := PlanReset(w.ctx, w.ddb, kin, opt)
	if err != nil {
		w.t.Fatalf("plan: %v", err)
	}
	return p
}

func (w *world) execute(p *Plan, opt ExecOptions) *Execution {
	w.t.Helper()
	if opt.Sample == 0 {
		opt.Sample = 50 * time.Millisecond
	}
	x, err := Execute(w.ctx, w.ddb, p, opt)
	if err != nil {
		w.t.Fatalf("execute: %v", err)
	}
	return x
}

// changeOf finds a plan's row for a lease.
func changeOf(t *testing.T, p *Plan, key string) Change {
	t.Helper()
	for _, c := range p.Changes {
		if c.LeaseKey == key {
			return c
		}
	}
	t.Fatalf("the plan has no row for %s: %+v", key, p.Changes)
	return Change{}
}

func seq(s string) leasecore.SequenceNumber { return leasecore.SequenceNumber{SequenceNumber: s} }

func last(s []string) string { return s[len(s)-1] }
