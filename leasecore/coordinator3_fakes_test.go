package leasecore

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Cases dynalite cannot show by itself: its index is never behind the
// table, and its renewals never fail. A thin wrapper of the real client
// makes them.

// laggingIndex answers the index query with extra keys, as DynamoDB's
// eventually consistent index does right after the leader moved a lease.
type laggingIndex struct {
	*dynamodb.Client
	extra []string
}

func (l laggingIndex) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := l.Client.Query(ctx, in, opts...)
	if err != nil {
		return out, err
	}
	for _, k := range l.extra {
		out.Items = append(out.Items, map[string]types.AttributeValue{AttrLeaseKey: sAV(k), AttrLeaseOwner: in.ExpressionAttributeValues[valOwner]})
	}
	return out, nil
}

func TestDiscovererSkipsWhatTheIndexStillShows(t *testing.T) {
	ddb, table := newKCL3Table(t, 2, "a", "b")
	a := startWorker3(t, laggingIndex{Client: ddb, extra: []string{shardKey(1)}}, table, "a", fastConfig, AssignByLeader)
	waitFor(t, discoveryWait, "a holds its lease", func() bool { return a.c.IsHeld(shardKey(0)) })
	time.Sleep(2 * fastConfig.DiscoveryInterval())
	if a.c.IsHeld(shardKey(1)) {
		t.Fatal("a gained b's lease from a lagging index")
	}
	if n := strings.Count(a.logs.String(), "owned by another worker"); n != 1 {
		t.Fatalf("the skip was logged %d times over 3 runs, want once", n)
	}
}

// failingRenewals fails every renewal (an UpdateItem that writes no
// checkpoint) while on, the way a network fault would.
type failingRenewals struct {
	*dynamodb.Client
	on atomic.Bool
}

func (f *failingRenewals) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if f.on.Load() && !strings.Contains(aws.ToString(in.UpdateExpression), "#checkpoint =") {
		return nil, errors.New("injected: connection reset")
	}
	return f.Client.UpdateItem(ctx, in, opts...)
}

// TestCheckpointReportsHandoff: a checkpoint that reaches the table before
// the renewer has seen the leader's handoff gets the handoff back in its
// ALL_NEW answer. The renewals after it carry no checkpointOwner
// condition, so only the checkpoint can report it.
func TestCheckpointReportsHandoff(t *testing.T) {
	ddb, table := newKCL3Table(t, 1, "a")
	key := shardKey(0)
	api := &failingRenewals{Client: ddb}
	a := startWorker3(t, api, table, "a", fastConfig, AssignByLeader)
	waitFor(t, discoveryWait, "a holds the lease", func() bool { return a.c.IsHeld(key) })
	api.on.Store(true)
	leaderHandoff(t, ddb, table, key, "b")
	if err := a.c.Checkpoint(context.Background(), key, SequenceNumber{SequenceNumber: "42"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, slack, "LeaseHandoff after the checkpoint", func() bool { return a.eventCount(LeaseHandoff) == 1 })
	api.on.Store(false)
	time.Sleep(2 * renewFast)
	if n := a.eventCount(LeaseHandoff); n != 1 || !a.c.IsHeld(key) {
		t.Fatalf("%d LeaseHandoff events, held %v", n, a.c.IsHeld(key))
	}
	if err := a.c.CompleteHandoff(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if l := mustGet(t, ddb, table, key); l.LeaseOwner != "b" || l.CheckpointOwner != "" || l.Checkpoint.SequenceNumber != "42" {
		t.Fatalf("after the handoff: %+v", l)
	}
}

// loseHandoffAnswer applies the first handoff write (assignLease) but
// loses its answer, as a reset connection does.
type loseHandoffAnswer struct {
	*dynamodb.Client
	lost atomic.Bool
}

func (l *loseHandoffAnswer) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := l.Client.UpdateItem(ctx, in, opts...)
	if err == nil && strings.Contains(aws.ToString(in.UpdateExpression), "REMOVE #checkpointOwner") &&
		strings.Contains(aws.ToString(in.UpdateExpression), "SET #leaseOwner") && l.lost.CompareAndSwap(false, true) {
		return nil, errors.New("injected: answer lost")
	}
	return out, err
}

// TestCompleteHandoffAfterLostAnswer: the retry's condition fails, and the
// read shows the transfer made: done, not lost.
func TestCompleteHandoffAfterLostAnswer(t *testing.T) {
	ddb, table := newKCL3Table(t, 1, "a")
	key := shardKey(0)
	api := &loseHandoffAnswer{Client: ddb}
	a := startWorker3(t, api, table, "a", fastConfig, AssignByLeader)
	waitFor(t, discoveryWait, "a holds the lease", func() bool { return a.c.IsHeld(key) })
	leaderHandoff(t, ddb, table, key, "b")
	waitFor(t, renewFast+slack, "LeaseHandoff", func() bool { return a.eventCount(LeaseHandoff) == 1 })
	if err := a.c.CompleteHandoff(context.Background(), key); err != nil {
		t.Fatalf("CompleteHandoff: %v", err)
	}
	if !api.lost.Load() {
		t.Fatal("no answer was lost")
	}
	waitFor(t, slack, "LeaseHandedOff", func() bool { return a.eventCount(LeaseHandedOff) == 1 })
	if a.eventCount(LeaseLost) != 0 || a.c.Stats().Retries == 0 {
		t.Fatalf("events %v, stats %+v", a.eventsOf(key), a.c.Stats())
	}
}
