package runner

import (
	"fmt"
	"testing"
	"time"

	"github.com/kcltool/kcltool/kinesisrec"
	"github.com/kcltool/kcltool/runner/retrieval"
)

func recs(from, to int) []kinesisrec.Record {
	var out []kinesisrec.Record
	for i := from; i < to; i++ {
		out = append(out, kinesisrec.Record{SequenceNumber: fmt.Sprint(1000 + i)})
	}
	return out
}

func seqRange(b []kinesisrec.Record) string {
	if len(b) == 0 {
		return "-"
	}
	return b[0].SequenceNumber + ".." + b[len(b)-1].SequenceNumber
}

// Batches never exceed the size, keep order, wait for the window only while
// short, and flush at the end of the shard.
func TestBatcherShapesBatches(t *testing.T) {
	t0 := time.Unix(0, 0)
	b := &batcher{size: 4, window: time.Second}
	b.add(retrieval.Page{Records: recs(0, 10)}, t0)
	var got []string
	for {
		batch, ok := b.next(t0, false)
		if !ok {
			break
		}
		got = append(got, seqRange(batch))
	}
	if fmt.Sprint(got) != "[1000..1003 1004..1007]" {
		t.Fatalf("full batches %v", got)
	}
	// Two left: not due before the window.
	if _, ok := b.next(t0.Add(999*time.Millisecond), false); ok {
		t.Fatal("a short batch went out before its window")
	}
	if d, ok := b.wait(t0.Add(500 * time.Millisecond)); !ok || d != 500*time.Millisecond {
		t.Fatalf("wait %v %v, want 500ms", d, ok)
	}
	b.add(retrieval.Page{Records: recs(10, 11)}, t0.Add(900*time.Millisecond))
	batch, ok := b.next(t0.Add(time.Second), false)
	if !ok || seqRange(batch) != "1008..1010" {
		t.Fatalf("due batch %v %v, want 1008..1010", seqRange(batch), ok)
	}
	// A window of zero ships what is there; the end of the shard ships a
	// short batch at once and then reports done.
	b.window = 0
	b.add(retrieval.Page{Records: recs(11, 12)}, t0)
	if batch, ok := b.next(t0, false); !ok || seqRange(batch) != "1011..1011" {
		t.Fatalf("zero window: %v %v", seqRange(batch), ok)
	}
	b.window = time.Hour
	b.add(retrieval.Page{Records: recs(12, 14), End: true}, t0)
	if b.done() {
		t.Fatal("done with records pending")
	}
	if batch, ok := b.next(t0, false); !ok || seqRange(batch) != "1012..1013" {
		t.Fatalf("end of shard: %v %v", seqRange(batch), ok)
	}
	if !b.done() {
		t.Fatal("not done after the last page")
	}
}

// Per page (--multilang): each page as it came; empty pages only with
// emptyPages (callProcessRecordsEvenForEmptyRecordList), and never a closed
// shard's empty last page, as the KCL's ProcessTask.
func TestBatcherPerPage(t *testing.T) {
	t0 := time.Unix(0, 0)
	for _, empty := range []bool{false, true} {
		b := &batcher{size: 1, perPage: true, emptyPages: empty}
		b.add(retrieval.Page{Records: recs(0, 3), MillisBehind: 30}, t0)
		b.add(retrieval.Page{MillisBehind: 20}, t0)
		b.add(retrieval.Page{Records: recs(3, 4), MillisBehind: 10}, t0)
		b.add(retrieval.Page{End: true}, t0)
		var got []string
		for {
			batch, ok := b.next(t0, false)
			if !ok {
				break
			}
			got = append(got, fmt.Sprintf("%s@%d", seqRange(batch), b.millisBehind))
		}
		want := "[1000..1002@30 1003..1003@10]"
		if empty {
			want = "[1000..1002@30 -@20 1003..1003@10]"
		}
		if fmt.Sprint(got) != want || !b.done() {
			t.Errorf("emptyPages %v: %v (done %v), want %s", empty, got, b.done(), want)
		}
	}
}
