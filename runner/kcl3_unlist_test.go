package runner

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
	"github.com/kcltool/kcltool/leasecore"
)

// metricsItemOf is worker id's metrics item in the fleet, or nil.
func metricsItemOf(t *testing.T, s kcl3Stack, id string) *kcl3fleet.WorkerMetricsReport {
	t.Helper()
	reps, err := s.fleet.WorkerMetricsReports(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := range reps {
		if reps[i].WorkerID == id {
			return &reps[i]
		}
	}
	return nil
}

// A crash-like stop (the context ends) deletes nothing, as a killed
// process would not: the metrics item stays for the leader to expire.
func TestKCL3StopNowKeepsMetricsItem(t *testing.T) {
	for _, kind := range []kcl3fleet.Kind{kcl3fleet.NewApp, kcl3fleet.SideTables} {
		t.Run(kind.String(), func(t *testing.T) {
			s := newKCL3Stack(t, 1, kcl3fleet.Layout{Kind: kind})
			r := start(t, s.stack, s.kcl3Config(t, "kcltool-1", outFile(t)))
			eventually(t, 30*time.Second, "the metrics item written", func() bool { return metricsItemOf(t, s, "kcltool-1") != nil })
			r.kill()
			<-r.done
			r.done <- nil // for the cleanup
			if metricsItemOf(t, s, "kcltool-1") == nil {
				t.Fatal("the metrics item was deleted at a crash-like stop")
			}
		})
	}
}

// writeOrder records, in order, the DeleteItem calls and the evict writes
// (an UpdateItem that REMOVEs checkpointOwner, EvictLease3's mark) sent.
type writeOrder struct {
	*dynamodb.Client
	mu  sync.Mutex
	log []string
}

func (w *writeOrder) add(s string) {
	w.mu.Lock()
	w.log = append(w.log, s)
	w.mu.Unlock()
}

func (w *writeOrder) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	w.add("delete")
	return w.Client.DeleteItem(ctx, in, opts...)
}

func (w *writeOrder) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	expr := aws.ToString(in.UpdateExpression)
	if r := strings.Index(expr, "REMOVE"); r >= 0 && strings.Contains(expr[r:], leasecore.AttrCheckpointOwner) {
		w.add("evict")
	}
	return w.Client.UpdateItem(ctx, in, opts...)
}

// The graceful stop deletes the metrics item before the evict writes, so
// that the leader never sees the evicted leases while it still counts the
// worker active (with the item still there, the test's leader, every
// 500 ms, gives them straight back to it).
func TestKCL3UnlistBeforeEvict(t *testing.T) {
	s := newKCL3Stack(t, 2, kcl3fleet.Layout{Kind: kcl3fleet.NewApp})
	ddb := &writeOrder{Client: s.ddb}
	r := startWith(t, s.stack, s.kcl3Config(t, "kcltool-1", outFile(t)), ddb)
	s.leader(t)
	eventually(t, 30*time.Second, "every lease held by kcltool-1", func() bool {
		return len(r.w.heldRuns()) == len(s.shards)
	})
	ddb.add("stop")
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	ddb.mu.Lock()
	got := strings.Join(ddb.log, " ")
	ddb.mu.Unlock()
	if want := "stop delete evict evict"; !strings.HasSuffix(got, want) {
		t.Errorf("writes %q, want them to end with %q", got, want)
	}
	if mine := metricsItemOf(t, s, "kcltool-1"); mine != nil {
		t.Errorf("metrics item left: %+v", *mine)
	}
}
