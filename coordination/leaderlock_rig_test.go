package coordination_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
)

// lockRig is one application on dynalite, in one of the two places the
// lock can live, with a fake clock shared by every contender (kcltool's
// and the Java port's).
type lockRig struct {
	t       *testing.T
	ddb     *dynamodb.Client
	api     *faultyAPI
	f       *kcl3fleet.Fleet
	st      coordination.State
	clk     *clocktest.Clock
	keyAttr string
	logs    *syncBuffer
}

// lockLayouts are the two places: the lease table keyed leaseKey (a new
// 3.5 application, tm COMPLETE) and <app>-CoordinatorState keyed "key"
// (KCL 3.0 - 3.4, tm INIT / DEPLOYED / PENDING).
var lockLayouts = []struct {
	kind    kcl3fleet.Kind
	keyAttr string
}{{kcl3fleet.NewApp, "leaseKey"}, {kcl3fleet.SideTables, "key"}}

func forEachLayout(t *testing.T, fn func(t *testing.T, r *lockRig)) {
	for _, l := range lockLayouts {
		t.Run(l.kind.String(), func(t *testing.T) {
			ddb := emulator.DynamoDB(t)
			f := kcl3fleet.Setup(t, ddb, kcl3fleet.Layout{Kind: l.kind})
			clk := clocktest.New(time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC))
			f.Clock = clk
			st, err := coordination.Detect(context.Background(), ddb, f.Tables)
			if err != nil {
				t.Fatal(err)
			}
			if table, key := st.LockTable(f.Tables); table != f.LockTable() || key != l.keyAttr {
				t.Fatalf("Detect puts the lock in %s (%s), the harness in %s (%s)", table, key, f.LockTable(), l.keyAttr)
			}
			fn(t, &lockRig{t: t, ddb: ddb, api: &faultyAPI{Client: ddb}, f: f, st: st, clk: clk, keyAttr: l.keyAttr, logs: &syncBuffer{}})
		})
	}
}

// lock makes a kcltool contender with the given leaseDuration (0: the
// default, 20 s) and the default heartbeat period (a quarter of it).
func (r *lockRig) lock(owner string, lease time.Duration) *coordination.LeaderLock {
	return r.lockOn(r.api, owner, lease)
}

// lockOn makes a contender that calls DynamoDB through api.
func (r *lockRig) lockOn(api coordination.WriteAPI, owner string, lease time.Duration) *coordination.LeaderLock {
	return r.lockWith(api, coordination.LeaderLockConfig{Owner: owner, LeaseDuration: lease})
}

func (r *lockRig) lockWith(api coordination.WriteAPI, cfg coordination.LeaderLockConfig) *coordination.LeaderLock {
	log := slog.New(slog.NewTextHandler(r.logs, nil))
	return coordination.NewLeaderLock(api, r.f.Tables, cfg, r.clk, log)
}

func (r *lockRig) poll(l *coordination.LeaderLock) bool {
	r.t.Helper()
	ok, err := l.Poll(context.Background(), r.st)
	if err != nil {
		r.t.Fatalf("Poll: %v", err)
	}
	return ok
}

// javaLeader is the harness's port of a Java 3.x leader (lock client
// 1.4.0, 120 s lease) whose background heartbeat never fires in these
// tests: the test sends its heartbeats by hand.
func (r *lockRig) javaLeader(id string) *kcl3fleet.Leader {
	j := r.f.NewLeader(kcl3fleet.LeaderConfig{WorkerID: id, HeartbeatPeriod: 1000 * time.Hour})
	r.t.Cleanup(j.Stall)
	return j
}

// item reads the raw Leader item; nil when there is none.
func (r *lockRig) item() map[string]types.AttributeValue {
	r.t.Helper()
	out, err := r.ddb.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(r.f.LockTable()), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{r.keyAttr: &types.AttributeValueMemberS{Value: "Leader"}},
	})
	if err != nil {
		r.t.Fatal(err)
	}
	if len(out.Item) == 0 {
		return nil
	}
	return out.Item
}

// read is the lock as the harness's Java port reads it.
func (r *lockRig) read() kcl3fleet.LockItem {
	r.t.Helper()
	it, ok, err := r.f.ReadLock(context.Background())
	if err != nil || !ok {
		r.t.Fatalf("kcl3fleet.ReadLock = %v, %v", ok, err)
	}
	return it
}

// faultyAPI is the dynalite client with writes that can be made to fail:
// failWrites fails UpdateItem before sending it; lostAnswers sends it and
// then reports an error, as a timeout after the server applied it.
type faultyAPI struct {
	*dynamodb.Client
	failWrites, lostAnswers atomic.Bool
	// beforePut, when set, runs once before the next PutItem is sent: a
	// rival's whole Poll between this contender's read and its write.
	beforePut func()
}

func (a *faultyAPI) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if f := a.beforePut; f != nil {
		a.beforePut = nil
		f()
	}
	return a.Client.PutItem(ctx, in, optFns...)
}

var errInjected = errors.New("injected transport error")

func (a *faultyAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if a.failWrites.Load() {
		return nil, errInjected
	}
	out, err := a.Client.UpdateItem(ctx, in, optFns...)
	if err == nil && a.lostAnswers.Load() {
		return nil, errInjected
	}
	return out, err
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
