package runner

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"

	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
)

// A graceful handoff away from kcltool, asked while a batch is in flight:
// no batch of the shard starts after kcltool learns of it, the batch in
// flight finishes and is checkpointed (the checkpoint is the last handled
// record), the transfer is written, and the Java-like new owner starts
// only once checkpointOwner is gone: its processing never overlaps
// kcltool's batches.
func TestKCL3HandoffAway(t *testing.T) {
	s := newKCL3Stack(t, 1, kcl3fleet.Layout{Kind: kcl3fleet.NewApp})
	shard := s.shards[0]
	out := outFile(t)
	cfg := s.kcl3Config(t, "kcltool-1", out)
	cfg.BatchSize = 5
	times := timedHandler(t, &cfg, "1")
	var lt *logTimes
	cfg.Log, lt, _ = timedLogger(t, "kcltool-1")
	r := start(t, s.stack, cfg)
	leader := s.leader(t)
	s.put(t, func(k string) string { return "v-" + k }, keys("a", 40)...)
	eventually(t, 30*time.Second, "kcltool handling batches", func() bool { return len(readSpans(t, times)) >= 2 })

	java := s.javaWorker(t, "java-1", 0)
	eventually(t, 10*time.Second, "java-1 active", func() bool {
		reps, _ := s.fleet.WorkerMetricsReports(context.Background())
		for _, rep := range reps {
			if rep.WorkerID == "java-1" {
				return true
			}
		}
		return false
	})
	leader.RequestHandoff(shard, "java-1")
	eventually(t, 20*time.Second, "java-1 processing the shard", func() bool { return len(java.Processing()) == 1 })
	seen := lt.first("graceful handoff asked by the leader")
	if seen.IsZero() {
		t.Fatal("kcltool never logged the handoff")
	}
	spans := readSpans(t, times)
	var lastEnd time.Time
	for _, sp := range spans {
		if sp.start.After(seen) {
			t.Errorf("a batch started at %s, after the handoff was seen at %s", sp.start.Format(time.StampMicro), seen.Format(time.StampMicro))
		}
		if sp.end.IsZero() {
			t.Errorf("batch started at %s never finished", sp.start.Format(time.StampMicro))
		}
		if sp.end.After(lastEnd) {
			lastEnd = sp.end
		}
	}
	got := readHandled(t, out)
	l := s.lease(t, shard)
	if want := got[len(got)-1].SequenceNumber; l.Checkpoint.SequenceNumber != want {
		t.Errorf("checkpoint %s after the handoff, want the last handled record %s", l.Checkpoint.SequenceNumber, want)
	}
	if l.LeaseOwner != "java-1" || l.CheckpointOwner != "" {
		t.Errorf("lease after the handoff: owner %q checkpointOwner %q", l.LeaseOwner, l.CheckpointOwner)
	}
	for _, iv := range java.Intervals() {
		if iv.Key == shard && iv.From.Before(lastEnd) {
			t.Errorf("java-1 started at %s, before kcltool's last batch ended at %s", iv.From.Format(time.StampMicro), lastEnd.Format(time.StampMicro))
		}
	}
	// The handoff's duration is in the metrics (kcltool_worker_handoff_seconds).
	var prom strings.Builder
	if err := r.w.metrics.WritePrometheus(&prom); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(prom.String(), `kcltool_worker_handoff_seconds_count{app="`+cfg.App+`",worker="kcltool-1"} 1`) {
		t.Error("the handoff is not in kcltool_worker_handoff_seconds")
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	if l := s.lease(t, shard); l.LeaseOwner != "java-1" {
		t.Errorf("kcltool's stop changed the handed-over lease: owner %q", l.LeaseOwner)
	}
}

// A handler that does not finish within the handoff timeout is stopped
// (its process killed) before the transfer is written, so the new owner
// never runs beside it; the Java KCL writes at the timeout without
// stopping its record processor.
func TestKCL3HandoffTimeoutKillsFirst(t *testing.T) {
	s := newKCL3Stack(t, 1, kcl3fleet.Layout{Kind: kcl3fleet.NewApp})
	shard := s.shards[0]
	cfg := s.kcl3Config(t, "kcltool-1", outFile(t))
	cfg.KCL3.HandoffTimeout = 2 * time.Second
	times := timedHandler(t, &cfg, "3600")
	var buf *logBuffer
	cfg.Log, _, buf = timedLogger(t, "kcltool-1")
	// At the transfer write (the only write that removes checkpointOwner
	// before the stop), the handler's process must be gone.
	var mu sync.Mutex
	var transfers []error // kill(pid, 0) at each transfer write
	ddb := watchedDDB{Client: s.ddb, before: func(in *dynamodb.UpdateItemInput) {
		if !strings.Contains(aws.ToString(in.UpdateExpression), "checkpointOwner") || !strings.Contains(aws.ToString(in.ConditionExpression), "checkpointOwner") {
			return
		}
		spans := readSpans(t, times)
		if len(spans) == 0 {
			return
		}
		mu.Lock()
		transfers = append(transfers, syscall.Kill(spans[0].pid, 0))
		mu.Unlock()
	}}
	r := startWith(t, s.stack, cfg, ddb)
	leader := s.leader(t)
	s.put(t, func(k string) string { return "v-" + k }, keys("a", 3)...)
	eventually(t, 30*time.Second, "a batch in flight", func() bool { return len(readSpans(t, times)) == 1 })
	before := s.lease(t, shard).Checkpoint

	s.javaWorker(t, "java-1", 0)
	leader.RequestHandoff(shard, "java-1")
	eventually(t, 30*time.Second, "the transfer", func() bool {
		l := s.lease(t, shard)
		return l.LeaseOwner == "java-1" && l.CheckpointOwner == ""
	})
	mu.Lock()
	if len(transfers) == 0 {
		t.Error("no transfer write seen")
	}
	for _, err := range transfers {
		if !errors.Is(err, syscall.ESRCH) {
			t.Errorf("the transfer was written while the handler still ran: kill(0) = %v", err)
		}
	}
	mu.Unlock()
	if l := s.lease(t, shard); l.Checkpoint != before {
		t.Errorf("the killed batch was checkpointed: %+v, want %+v", l.Checkpoint, before)
	}
	if !strings.Contains(buf.String(), "graceful handoff timed out") {
		t.Error("the forced handoff is not logged")
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

// A handoff to kcltool: it starts reading only once the old owner has
// cleared checkpointOwner, from the checkpoint that owner left.
func TestKCL3HandoffToKcltool(t *testing.T) {
	s := newKCL3Stack(t, 1, kcl3fleet.Layout{Kind: kcl3fleet.SideTables})
	shard := s.shards[0]
	seqs := s.put(t, func(k string) string { return "v-" + k }, keys("a", 10)...)
	leader := s.leader(t)
	// The old owner takes 5 s to finish its batch: several discovery
	// runs of kcltool see the lease while it is still in handoff.
	java := s.javaWorker(t, "java-1", 5*time.Second)
	eventually(t, 20*time.Second, "java-1 processing", func() bool { return len(java.Processing()) == 1 })
	// The old owner's checkpoint, as its record processor would have
	// written it: after the fifth record.
	oldCP := seqs["a004"]
	setCheckpoint(t, s, shard, oldCP)

	out := outFile(t)
	cfg := s.kcl3Config(t, "kcltool-1", out)
	times := timedHandler(t, &cfg, "0")
	r := start(t, s.stack, cfg)
	eventually(t, 10*time.Second, "kcltool active", func() bool {
		reps, _ := s.fleet.WorkerMetricsReports(context.Background())
		for _, rep := range reps {
			if rep.WorkerID == "kcltool-1" {
				return true
			}
		}
		return false
	})
	// The last time the lease was seen still in handoff: the old owner
	// had not finished then, so kcltool must not have started.
	var mu sync.Mutex
	var lastInHandoff time.Time
	watchCtx, stopWatch := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for watchCtx.Err() == nil {
			if l, err := s.fleet.Lease(watchCtx, shard); err == nil && l.CheckpointOwner == "java-1" {
				mu.Lock()
				lastInHandoff = time.Now()
				mu.Unlock()
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	leader.RequestHandoff(shard, "kcltool-1")
	eventually(t, 30*time.Second, "kcltool handled the rest", func() bool { return len(readHandled(t, out)) == 5 })
	stopWatch()
	<-watched
	if lastInHandoff.IsZero() {
		t.Fatal("the handoff was never seen in the table")
	}
	if first := readSpans(t, times)[0].start; first.Before(lastInHandoff) {
		t.Errorf("kcltool's first batch at %s, while java-1 still held the handoff at %s", first.Format(time.StampMicro), lastInHandoff.Format(time.StampMicro))
	}
	if got := readHandled(t, out); got[0].text() != "v-a005" {
		t.Errorf("kcltool started at %q, want the record after the old owner's checkpoint (v-a005)", got[0].text())
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

// refusingDDB refuses every handoff transfer write (HandoffLease's, the
// only write conditioned on the next owner) with a definite error.
type refusingDDB struct {
	*dynamodb.Client
}

func (d refusingDDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if strings.Contains(aws.ToString(in.ConditionExpression), ":nextOwner") {
		return nil, &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "injected: the transfer write is refused"}
	}
	return d.Client.UpdateItem(ctx, in, opts...)
}

// A transfer write that fails while the lease is still held: the shard no
// longer runs, so the worker gives the lease up (the 3.x evict, which
// leaves it to the next owner) instead of renewing it on in handoff, where
// the next owner would wait for ever.
func TestKCL3HandoffTransferRefusedReleases(t *testing.T) {
	s := newKCL3Stack(t, 1, kcl3fleet.Layout{Kind: kcl3fleet.NewApp})
	shard := s.shards[0]
	cfg := s.kcl3Config(t, "kcltool-1", outFile(t))
	var buf *logBuffer
	cfg.Log, _, buf = timedLogger(t, "kcltool-1")
	r := startWith(t, s.stack, cfg, refusingDDB{Client: s.ddb})
	leader := s.leader(t)
	// Held and run: the leader's write alone is not enough, kcltool must
	// have discovered it.
	eventually(t, 30*time.Second, "kcltool runs the shard", func() bool { return slices.Contains(r.w.heldRuns(), shard) })
	s.javaWorker(t, "java-1", 0)
	leader.RequestHandoff(shard, "java-1")
	// Before the stop, whose evict would end the handoff anyway.
	eventually(t, 30*time.Second, "the handoff ended by the release", func() bool {
		l := s.lease(t, shard)
		return l.LeaseOwner == "java-1" && l.CheckpointOwner == ""
	})
	if !strings.Contains(buf.String(), "released it instead") {
		t.Errorf("the release is not logged:\n%s", buf.String())
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}
