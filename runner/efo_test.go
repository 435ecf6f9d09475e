package runner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/reshard"
	"github.com/kcltool/kcltool/runner/metrics"
	"github.com/kcltool/kcltool/runner/processor"
)

// fanOut is a test worker's fan-out setting through the EFOProxy (the
// harness makes up kinesis-local's missing initial-response event).
func fanOut(t *testing.T, max time.Duration) *FanOut {
	return &FanOut{API: emulator.KinesisEFO(t), ConsumerName: "efo-test", SubscriptionMax: max}
}

// countsOf reads a shard's counters from the worker's metrics.
func countsOf(w *Worker, shard string) (metrics.Counts, bool) { return w.metrics.Counts(shard) }

// TestFanOutResubscribesWithoutLossOrRepeat: subscriptions cut short
// (every 1.5 s, and kinesis-local then holds the shard for about 3 s) are
// continued from the last event's continuation sequence number: across at
// least five resubscriptions, with records put all along, every record is
// handled exactly once and in order.
func TestFanOutResubscribesWithoutLossOrRepeat(t *testing.T) {
	s := newStack(t, 1)
	out := outFile(t)
	cfg := s.config(t, "A", out)
	cfg.FanOut = fanOut(t, 1500*time.Millisecond)
	cfg.Metrics = metrics.New()
	r := start(t, s, cfg)

	const shard = "shardId-000000000000"
	resubs := func() int64 {
		if st, ok := countsOf(r.w, shard); ok {
			return st.Resubscriptions
		}
		return 0
	}
	n := 0
	deadline := time.Now().Add(90 * time.Second)
	for resubs() < 5 || n < 200 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d resubscriptions after 90s", resubs())
		}
		batch := make([]string, 10)
		for i := range batch {
			batch[i] = "k" + strconv.Itoa(n)
			n++
		}
		s.put(t, func(k string) string { return k }, batch...)
		time.Sleep(300 * time.Millisecond)
	}
	eventually(t, 30*time.Second, fmt.Sprintf("all %d records handled", n), func() bool { return len(readHandled(t, out)) >= n })
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	got := readHandled(t, out)
	if len(got) != n {
		t.Errorf("%d records handled, want %d (each once)", len(got), n)
	}
	for i, h := range got {
		if want := "k" + strconv.Itoa(i); h.text() != want {
			t.Fatalf("record %d is %q, want %q: lost, repeated or out of order", i, h.text(), want)
		}
	}
	st, _ := countsOf(r.w, shard)
	t.Logf("%d records, %d subscriptions, %d resubscriptions", n, st.Subscriptions, st.Resubscriptions)
	var sb strings.Builder
	if err := r.w.metrics.WritePrometheus(&sb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), `kcltool_shard_resubscriptions_total{`) || !strings.Contains(sb.String(), "kcltool_shard_delivery_seconds_count{") {
		t.Errorf("metrics lack the fan-out counters:\n%s", sb.String())
	}
}

// deregister removes the stream consumer the worker uses.
func deregister(t *testing.T, s stack, arn string) {
	t.Helper()
	if _, err := s.kin.DeregisterStreamConsumer(context.Background(), &kinesis.DeregisterStreamConsumerInput{ConsumerARN: aws.String(arn)}); err != nil {
		t.Fatal(err)
	}
}

// TestFanOutConsumerDeletedWhileRunning: a consumer deregistered under a
// running worker is registered again by name and reading goes on without
// loss; with a fixed consumer ARN the worker stops instead, with an error
// naming the ARN.
func TestFanOutConsumerDeletedWhileRunning(t *testing.T) {
	s := newStack(t, 1)
	out := outFile(t)
	cfg := s.config(t, "A", out)
	cfg.FanOut = fanOut(t, 2*time.Second)
	r := start(t, s, cfg)
	s.put(t, func(k string) string { return k }, "a0", "a1")
	eventually(t, 45*time.Second, "the first records", func() bool { return len(readHandled(t, out)) == 2 })
	old := r.w.consumerARN(r.w.streams[0])
	deregister(t, s, old)
	s.put(t, func(k string) string { return k }, "b0", "b1")
	// The subscription open at the deregistration may still deliver
	// (kinesis-local keeps it): the next one finds the consumer gone.
	eventually(t, 40*time.Second, "the consumer registered again", func() bool { return r.w.consumerARN(r.w.streams[0]) != old })
	s.put(t, func(k string) string { return k }, "b2")
	eventually(t, 40*time.Second, "the records after the consumer was registered again", func() bool { return len(readHandled(t, out)) == 5 })
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}

	// The same consumer name, now fixed by its ARN.
	cfg2 := s.config(t, "B", out)
	cfg2.FanOut = &FanOut{API: emulator.KinesisEFO(t), ConsumerARN: r.w.consumerARN(r.w.streams[0]), SubscriptionMax: 2 * time.Second}
	r2 := start(t, s, cfg2)
	s.put(t, func(k string) string { return k }, "c0")
	eventually(t, 45*time.Second, "B's first record", func() bool { return len(readHandled(t, out)) == 6 })
	deregister(t, s, cfg2.FanOut.ConsumerARN)
	select {
	case err := <-r2.done:
		r2.done <- err
		var gone *ConsumerGoneError
		if !errors.As(err, &gone) || !strings.Contains(err.Error(), cfg2.FanOut.ConsumerARN) {
			t.Fatalf("Run returned %v, want a ConsumerGoneError naming the ARN", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("the worker did not stop after its --consumer-arn was deregistered")
	}
}

// TestFanOutShardEndFromChildShards: a subscription event that carries
// ChildShards (made up by the harness's proxy, as kinesis-local never sends
// one) ends the shard: the children's leases come from it, the parent is
// checkpointed at SHARD_END, and the children's records are handled. The
// listing fallback is out of the way (an hour).
func TestFanOutShardEndFromChildShards(t *testing.T) {
	s := newStack(t, 1)
	out := outFile(t)
	cfg := s.config(t, "A", out)
	cfg.FanOut = fanOut(t, 0)
	cfg.FanOut.EndCheckEvery = time.Hour
	r := start(t, s, cfg)
	s.put(t, func(k string) string { return k }, keys("p", 20)...)
	eventually(t, 45*time.Second, "the parent's records", func() bool { return len(readHandled(t, out)) == 20 })

	const parent = "shardId-000000000000"
	shards, err := s.kin.ListShards(context.Background(), &kinesis.ListShardsInput{StreamName: aws.String(s.stream)})
	if err != nil {
		t.Fatal(err)
	}
	emulator.SplitShard(t, s.kin, s.stream, parent, emulator.MidHashKey(shards.Shards[0].HashKeyRange))
	shards, err = s.kin.ListShards(context.Background(), &kinesis.ListShardsInput{StreamName: aws.String(s.stream)})
	if err != nil {
		t.Fatal(err)
	}
	var children []kintypes.ChildShard
	for _, sh := range shards.Shards {
		if aws.ToString(sh.ParentShardId) == parent {
			children = append(children, kintypes.ChildShard{ShardId: sh.ShardId, ParentShards: []string{parent}, HashKeyRange: sh.HashKeyRange})
		}
	}
	if len(children) != 2 {
		t.Fatalf("children %v", children)
	}
	emulator.EFOProxyOf(t).EndShardWith(r.w.consumerARN(r.w.streams[0]), parent, children)
	s.put(t, func(k string) string { return k }, keys("c", 20)...)
	eventually(t, 60*time.Second, "the children's records", func() bool { return len(readHandled(t, out)) == 40 })
	ls := leases(t, s)
	if l, ok := ls[parent]; ok && !l.Checkpoint.IsShardEnd() {
		t.Errorf("parent checkpoint %s, want SHARD_END", l.Checkpoint.SequenceNumber)
	}
	for _, c := range children {
		l, ok := ls[aws.ToString(c.ShardId)]
		if !ok || len(l.ParentShardIDs) != 1 || l.ParentShardIDs[0] != parent {
			t.Errorf("child %s: lease %v %+v", aws.ToString(c.ShardId), ok, l.ParentShardIDs)
		}
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

// TestFanOutReadsOnlyAsFastAsTheHandler: with a handler far slower than
// the records arrive, the reader takes events off the subscription only as
// batches are handled: what it took and the handler has not yet had stays
// bounded (a batch, the page buffered, and the event in hand), however far
// behind the handler falls.
func TestFanOutReadsOnlyAsFastAsTheHandler(t *testing.T) {
	s := newStack(t, 1)
	out := outFile(t)
	cfg := s.config(t, "A", out, processor.ShellCommand(`sleep 0.5; cat >> "$OUT"`)...)
	cfg.BatchSize = 1
	var taken atomic.Int64
	eventTaken = func(records int) { taken.Add(int64(records)) }
	t.Cleanup(func() { eventTaken = nil })
	cfg.FanOut = &FanOut{API: emulator.KinesisEFO(t), ConsumerName: "efo-test"}
	r := start(t, s, cfg)
	eventually(t, 45*time.Second, "the first subscription", func() bool {
		st, ok := countsOf(r.w, "shardId-000000000000")
		return ok && st.Subscriptions > 0
	})
	maxAhead := int64(0)
	for i := range 12 {
		s.put(t, func(k string) string { return k }, keys(fmt.Sprintf("r%02d-", i), 5)...)
		time.Sleep(time.Second)
		ahead := taken.Load() - int64(len(readHandled(t, out)))
		maxAhead = max(maxAhead, ahead)
	}
	t.Logf("records taken off the subscription but not yet handled: at most %d; %d handled of 60", maxAhead, len(readHandled(t, out)))
	// Three events of five records at most: the batch being handled and
	// the rest of its page, the page in the reader's one-page buffer, and
	// the event the reader holds while the buffer is full; plus a record
	// handled between the two counts. (Before drain stopped at a full
	// batch, this grew with the backlog: 38 here.)
	if maxAhead > 16 {
		t.Errorf("the reader ran %d records ahead of the handler, want at most 16", maxAhead)
	}
}

// TestFanOutStartsAtTimestamp: a lease at the AT_TIMESTAMP sentinel
// subscribes AT_TIMESTAMP with the configured instant, so that only the
// records put after it are handled.
func TestFanOutStartsAtTimestamp(t *testing.T) {
	s := newStack(t, 1)
	s.put(t, func(k string) string { return k }, keys("before", 5)...)
	time.Sleep(1500 * time.Millisecond)
	ts := time.Now()
	time.Sleep(100 * time.Millisecond)
	s.put(t, func(k string) string { return k }, keys("after", 5)...)
	out := outFile(t)
	cfg := s.config(t, "A", out)
	cfg.Initial = reshard.AtTimestamp(ts)
	var logs *logBuffer
	cfg.Log, logs = recordedLogger(t, "A")
	cfg.FanOut = fanOut(t, 0)
	r := start(t, s, cfg)
	eventually(t, 45*time.Second, "the records put after the timestamp", func() bool { return len(readHandled(t, out)) >= 5 })
	s.put(t, func(k string) string { return k }, "later")
	eventually(t, 30*time.Second, "a record put while running", func() bool { return len(readHandled(t, out)) >= 6 })
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range readHandled(t, out) {
		got = append(got, h.text())
	}
	if want := append(keys("after", 5), "later"); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("handled %v, want only the records put after the timestamp: %v", got, want)
	}
	if !strings.Contains(logs.String(), "type=AT_TIMESTAMP") {
		t.Error("the first subscription did not start AT_TIMESTAMP")
	}
}
