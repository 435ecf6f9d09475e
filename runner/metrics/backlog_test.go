package metrics

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/kinesisrec"
	"github.com/kcltool/kcltool/leasecore"
)

// records are n records from sequence number first, arriving every half
// second from arrived.
func records(first, n int, arrived time.Time) []kinesisrec.Record {
	out := make([]kinesisrec.Record, n)
	for i := range out {
		out[i] = kinesisrec.Record{SequenceNumber: strconv.Itoa(first + i), ApproximateArrivalTimestamp: arrived.Add(time.Duration(i) * time.Second / 2)}
	}
	return out
}

// The two gauges of a stuck shard, read from the worker's clock at scrape
// time: 0 while nothing waits, then the time since the last checkpoint (or
// the tenure's start) and the oldest waiting record's age, until
// checkpoints cover the records.
func TestBacklogGauges(t *testing.T) {
	start := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := clocktest.New(start)
	m := New()
	m.Bind("orders", "orders-stream", "worker-1", nil, nil, clock)
	s := m.Shard("shardId-000000000000")
	b := s.StartTenure(clock.Now())
	gauges := func() (checkpoint, oldest string) {
		t.Helper()
		var w strings.Builder
		if err := m.WritePrometheus(&w); err != nil {
			t.Fatal(err)
		}
		get := func(name string) string {
			prefix := name + `{app="orders",stream="orders-stream",shard="shardId-000000000000"} `
			for _, line := range strings.Split(w.String(), "\n") {
				if v, ok := strings.CutPrefix(line, prefix); ok {
					return v
				}
			}
			return "absent"
		}
		return get("kcltool_shard_last_checkpoint_age_seconds"), get("kcltool_shard_oldest_unprocessed_record_age_seconds")
	}
	check := func(what, wantCheckpoint, wantOldest string) {
		t.Helper()
		if c, o := gauges(); c != wantCheckpoint || o != wantOldest {
			t.Errorf("%s: checkpoint age %s, oldest record %s; want %s and %s", what, c, o, wantCheckpoint, wantOldest)
		}
	}

	clock.Advance(5 * time.Second)
	check("nothing read", "0", "0")
	b.Read(nil, 3000, clock.Now())
	check("an empty read behind the tip", "5", "0")
	b.Read(nil, 0, clock.Now())
	check("at the tip", "0", "0")

	// 100 records from 60 s before now, two a second: two chunks.
	b.Read(records(1000, 100, clock.Now().Add(-60*time.Second)), 0, clock.Now())
	clock.Advance(2 * time.Second)
	check("records read", "7", "62")
	// Read again after a reading restarted: not counted twice.
	b.Read(records(1000, 100, clock.Now().Add(-62*time.Second)), 0, clock.Now())
	b.Checkpointed(leasecore.SequenceNumber{SequenceNumber: "1063"}, clock.Now())
	clock.Advance(time.Second)
	// The second chunk (1064-1099) is the oldest waiting: 1064 arrived 32 s
	// after 1000, so 63-32 s ago.
	check("a checkpoint past the first chunk", "1", "31")
	// A checkpoint inside a chunk leaves its oldest time.
	b.Checkpointed(leasecore.SequenceNumber{SequenceNumber: "1070"}, clock.Now())
	check("a checkpoint inside the second chunk", "0", "31")
	b.Checkpointed(leasecore.SequenceNumber{SequenceNumber: "1099"}, clock.Now())
	clock.Advance(time.Second)
	check("all checkpointed", "0", "0")

	// A record without an arrival time is as old as its read.
	b.Read([]kinesisrec.Record{{SequenceNumber: "1100"}}, 0, clock.Now())
	clock.Advance(4 * time.Second)
	check("a record without an arrival time", "5", "4")
	b.Checkpointed(leasecore.SequenceNumber{SequenceNumber: leasecore.SHARD_END}, clock.Now())
	check("SHARD_END", "0", "0")

	// A new tenure starts afresh; a released shard is not reported.
	b.Read(records(2000, 1, clock.Now()), 0, clock.Now())
	s.StartTenure(clock.Now())
	check("a new tenure", "0", "0")
	s.Release()
	check("released", "absent", "absent")
}

// kcltool_build_info reports what the caller passed in.
func TestBuildInfo(t *testing.T) {
	m := New()
	m.SetBuild(Build{Version: "v1.2.3", Commit: "abc123", GoVersion: "go1.99"})
	var w strings.Builder
	if err := m.WritePrometheus(&w); err != nil {
		t.Fatal(err)
	}
	want := "# TYPE kcltool_build_info gauge\n" + `kcltool_build_info{version="v1.2.3",commit="abc123",goversion="go1.99"} 1` + "\n"
	if !strings.Contains(w.String(), want) {
		t.Fatalf("want %q in\n%s", want, w.String())
	}
}

// A processor that never checkpoints (a MultiLang child may checkpoint
// seldom) does not grow the backlog past maxChunks; the oldest record stays
// exact.
func TestBacklogIsBounded(t *testing.T) {
	now := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	b := &Backlog{since: now}
	for page := range 100 {
		b.Read(records(1000+page*1000, 1000, now.Add(-time.Hour)), 0, now)
	}
	if len(b.chunks) != maxChunks {
		t.Fatalf("%d chunks, want at most %d", len(b.chunks), maxChunks)
	}
	if last := b.chunks[maxChunks-1].last.SequenceNumber; last != "100999" {
		t.Fatalf("the newest chunk ends at %s, want the last record read, 100999", last)
	}
	if _, oldest := b.ages(now); oldest != time.Hour {
		t.Fatalf("oldest %s, want 1h", oldest)
	}
}
