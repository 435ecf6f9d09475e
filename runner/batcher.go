package runner

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/kinesisrec"
	"github.com/kcltool/kcltool/runner/retrieval"
)

// batcher shapes the records of one shard into handler batches: at most
// size records each, and a short batch waits up to window (from its first
// record's arrival here) for more, unless the shard has ended. Records keep
// their shard order; a batch never holds two shards because a batcher
// serves one.
type batcher struct {
	size   int
	window time.Duration
	// perPage hands each non-empty page over as it came, whatever size and
	// window say: the MultiLang protocol's processRecords is one GetRecords
	// page, as the MLD sends it.
	perPage bool
	// emptyPages (with perPage) hands over pages without records too,
	// except a closed shard's empty last page (the KCL's ProcessTask).
	emptyPages bool
	pages      []retrieval.Page

	pending  []kinesisrec.Record
	since    time.Time // when the oldest pending record came
	received time.Time // when the read of the oldest pending record arrived
	// taken is the received time of the batch next returned.
	taken        time.Time
	millisBehind int64 // of the page the newest pending record came with
	end          bool  // the shard's last page has been added
	children     []types.ChildShard
}

// add appends a page's records.
func (b *batcher) add(p retrieval.Page, now time.Time) {
	if b.perPage {
		if len(p.Records) > 0 || (b.emptyPages && !p.End) {
			b.pages = append(b.pages, p)
		}
		if len(b.pages) == 0 {
			b.millisBehind = p.MillisBehind
		}
		if p.End {
			b.end, b.children = true, p.Children
		}
		return
	}
	if len(p.Records) > 0 {
		if len(b.pending) == 0 {
			// No copy: a page is never reused, and batches are cut from it.
			b.since, b.pending, b.received = now, p.Records, p.Received
		} else {
			b.pending = append(b.pending, p.Records...)
		}
	}
	b.millisBehind = p.MillisBehind
	if p.End {
		b.end, b.children = true, p.Children
	}
}

// next returns the next batch that is ready at now, if any. flush ships a
// short batch without waiting for its window (the reader has stopped).
func (b *batcher) next(now time.Time, flush bool) ([]kinesisrec.Record, bool) {
	if b.perPage {
		if len(b.pages) == 0 {
			return nil, false
		}
		p := b.pages[0]
		b.pages = b.pages[1:]
		b.millisBehind, b.taken = p.MillisBehind, p.Received
		return p.Records, true
	}
	n := len(b.pending)
	if n == 0 {
		return nil, false
	}
	if n >= b.size {
		return b.take(b.size), true
	}
	if flush || b.end || b.window <= 0 || !now.Before(b.since.Add(b.window)) {
		return b.take(n), true
	}
	return nil, false
}

func (b *batcher) take(n int) []kinesisrec.Record {
	b.taken = b.received
	out := b.pending[:n:n]
	b.pending = b.pending[n:]
	if len(b.pending) == 0 {
		// Nothing pending: the next record starts a new window. A rest
		// keeps the old one, since none of it is newer than that.
		b.pending = nil
	}
	return out
}

// wait is how long until the pending short batch is due; ok is false when
// nothing is pending.
func (b *batcher) wait(now time.Time) (time.Duration, bool) {
	if len(b.pending) == 0 {
		return 0, false
	}
	return max(b.since.Add(b.window).Sub(now), 0), true
}

// full reports that a whole batch is pending (in perPage mode, a page):
// more read now would only wait in memory.
func (b *batcher) full() bool {
	if b.perPage {
		return len(b.pages) > 0
	}
	return len(b.pending) >= b.size
}

// done reports that the shard ended and every record was taken.
func (b *batcher) done() bool { return b.end && len(b.pending) == 0 && len(b.pages) == 0 }
