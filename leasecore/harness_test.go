package leasecore

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// Short timings for the multi-worker tests: failover 1s, so renewals every
// 308ms, and a fixed taker interval of 500ms.
var fastConfig = Config{FailoverTime: time.Second, TakerInterval: 500 * time.Millisecond}

// newLeaseTable creates a KCL-shaped lease table holding n unowned leases
// shardId-000000000000... at TRIM_HORIZON, as shard sync creates them.
func newLeaseTable(t testing.TB, n int) (*dynamodb.Client, string) {
	t.Helper()
	ddb := emulator.DynamoDB(t)
	table := emulator.Name(t, "leases")
	emulator.CreateLeaseTable(t, ddb, table)
	for i := range n {
		l := Lease{LeaseKey: shardKey(i), Checkpoint: SequenceNumber{SequenceNumber: TRIM_HORIZON}}
		if ok, err := CreateLease(context.Background(), ddb, table, l); err != nil || !ok {
			t.Fatalf("create lease %s: created=%v err=%v", l.LeaseKey, ok, err)
		}
	}
	return ddb, table
}

func shardKey(i int) string { return fmt.Sprintf("shardId-%012d", i) }

// testWorker is one in-process worker with its events and log recorded.
type testWorker struct {
	t      testing.TB
	id     string
	c      *Coordinator
	cancel context.CancelFunc
	logs   *syncBuffer

	mu     sync.Mutex
	events []LeaseEvent
}

func startWorker(t testing.TB, api CoordinatorAPI, table, id string, cfg Config) *testWorker {
	t.Helper()
	return startWorker3(t, api, table, id, cfg, AssignByTaking)
}

// crash stops the worker the way a killed process stops: no release, no
// further writes.
func (w *testWorker) crash() {
	w.cancel()
	w.c.loops.Wait()
}

func (w *testWorker) held() int { return len(w.c.Held()) }

func (w *testWorker) eventCount(kind EventKind) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, e := range w.events {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// waitFor polls cond until it holds or the timeout passes, and returns how
// long it took.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		if cond() {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s: not reached within %s", what, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// owners reads the table and counts leases per leaseOwner ("" = unowned).
func owners(t *testing.T, api ScanAPI, table string) map[string]int {
	t.Helper()
	res, err := ScanTable(context.Background(), api, table, ScanOptions{ConsistentRead: true})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, l := range res.Leases {
		out[l.LeaseOwner]++
	}
	return out
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// auditWrite is one UpdateItem a worker sent, as the recording decorator saw
// it go out and come back.
type auditWrite struct {
	Worker   string
	Key      string
	Op       string // renew, take, checkpoint, release, meta
	Expected int64  // the leaseCounter it was conditioned on (-1: none)
	OK       bool
	Seq      string // checkpoint written, for checkpoints
}

type auditLog struct {
	mu     sync.Mutex
	writes []auditWrite
}

func (a *auditLog) all() []auditWrite {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]auditWrite(nil), a.writes...)
}

// recordingAPI wraps a worker's DynamoDB client and logs every UpdateItem
// with its outcome.
type recordingAPI struct {
	CoordinatorAPI
	worker string
	log    *auditLog
}

func (r recordingAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := r.CoordinatorAPI.UpdateItem(ctx, in, opts...)
	w := auditWrite{Worker: r.worker, Key: in.Key[AttrLeaseKey].(*types.AttributeValueMemberS).Value, Expected: -1, OK: err == nil}
	if v, ok := in.ExpressionAttributeValues[valExpectedCounter].(*types.AttributeValueMemberN); ok {
		fmt.Sscan(v.Value, &w.Expected)
	}
	expr := aws.ToString(in.UpdateExpression)
	switch {
	case strings.Contains(expr, "#checkpoint ="):
		w.Op = "checkpoint"
		w.Seq = in.ExpressionAttributeValues[valCheckpoint].(*types.AttributeValueMemberS).Value
	case strings.Contains(expr, "REMOVE #leaseOwner"):
		w.Op = "release"
	case strings.Contains(expr, "#leaseOwner ="):
		w.Op = "take"
	case strings.Contains(expr, "#leaseCounter ="):
		w.Op = "renew"
	default:
		w.Op = "meta"
	}
	r.log.mu.Lock()
	r.log.writes = append(r.log.writes, w)
	r.log.mu.Unlock()
	return out, err
}

// faultProxy puts the shared fault-injecting proxy in front of dynalite.
type faultProxy struct {
	*emulator.FaultProxy
	rate float64 // the share throttled while throttling is on
}

// newFaultProxy throttles rate of the requests while throttling is on; it
// starts off, so a test can warm up on a healthy table.
func newFaultProxy(t testing.TB, rate float64, seed uint64) *faultProxy {
	t.Helper()
	return &faultProxy{emulator.NewFaultProxy(t, emulator.DynamoDBEndpoint(t), emulator.Throttle, 0, "", seed), rate}
}

// client returns a DynamoDB client that talks through the proxy.
func (p *faultProxy) client() *dynamodb.Client {
	return dynamodb.NewFromConfig(emulator.Config(), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(p.URL) })
}

// throttling switches the injected throttling on or off.
func (p *faultProxy) throttling(on bool) {
	if on {
		p.SetRate(p.rate)
	} else {
		p.SetRate(0)
	}
}
