package metrics

import (
	"sync"
	"time"

	"github.com/kcltool/kcltool/kinesisrec"
	"github.com/kcltool/kcltool/leasecore"
)

// Backlog is what one holding (tenure) of a shard's lease has read and not
// yet checkpointed, for the two gauges an alert on a stuck shard needs:
// kcltool_shard_last_checkpoint_age_seconds and
// kcltool_shard_oldest_unprocessed_record_age_seconds. Unlike
// millis_behind_latest, which is the last read's figure and stays put
// while the reader waits on a failing batch, both are computed at scrape
// time, so they grow while nothing moves.
//
// Each tenure has its own Backlog (ShardStats.StartTenure), so that a run
// still ending after its lease moved on does not touch the next one's.
type Backlog struct {
	mu sync.Mutex
	// since is the last checkpoint's time, or the tenure's start.
	since time.Time
	// behind: the last read said the shard is behind the tip of the stream.
	behind bool
	// chunks are the records read and not checkpointed, in shard order, as
	// runs of up to chunkRecords records: their last position and their
	// oldest time. Records themselves are not kept: a MultiLang child may
	// checkpoint seldom, and they would pile up in memory.
	chunks []chunk
}

type chunk struct {
	last   leasecore.SequenceNumber
	oldest time.Time
}

const (
	// chunkRecords bounds how far a checkpoint inside a chunk can leave
	// the oldest age reported too high: by the spread of 64 records.
	chunkRecords = 64
	// maxChunks bounds a Backlog's memory (a few tens of KB); past it a
	// read extends the newest chunk, which costs precision only once a
	// checkpoint reaches that far.
	maxChunks = 512
)

// StartTenure begins a holding of the shard's lease at now and makes its
// Backlog the one the gauges report.
func (s *ShardStats) StartTenure(now time.Time) *Backlog {
	b := &Backlog{since: now}
	s.backlog.Store(b)
	return b
}

// Read adds the records of a read answered at readAt, and whether that
// answer said the shard is behind. A record's time is its
// ApproximateArrivalTimestamp, or readAt when it has none. Records at or
// before the newest one already held (a reading restarted from the
// checkpoint reads them again) are not added twice.
func (b *Backlog) Read(records []kinesisrec.Record, millisBehind int64, readAt time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.behind = millisBehind > 0
	for len(records) > 0 {
		if n := len(b.chunks); n > 0 && leasecore.Compare(records[0].Position(), b.chunks[n-1].last) <= 0 {
			records = records[1:]
			continue
		}
		n := min(len(records), chunkRecords)
		c := chunk{last: records[n-1].Position(), oldest: readAt}
		for i := range records[:n] {
			if t := records[i].ApproximateArrivalTimestamp; !t.IsZero() && t.Before(c.oldest) {
				c.oldest = t
			}
		}
		if len(b.chunks) >= maxChunks {
			b.chunks[len(b.chunks)-1].last = c.last
		} else {
			b.chunks = append(b.chunks, c)
		}
		records = records[n:]
	}
}

// Checkpointed drops what a checkpoint at position at, written at now,
// covers; SHARD_END covers everything.
func (b *Backlog) Checkpointed(at leasecore.SequenceNumber, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.since = now
	if at.IsShardEnd() {
		b.chunks, b.behind = nil, false
		return
	}
	i := 0
	for i < len(b.chunks) && leasecore.Compare(b.chunks[i].last, at) <= 0 {
		i++
	}
	b.chunks = b.chunks[i:]
}

// ages are the two gauges at now: the time since the last checkpoint (or
// the tenure's start) and the age of the oldest record not checkpointed,
// both 0 when nothing waits. Records wait when some were read and not
// checkpointed, or when the last read said the shard is behind.
func (b *Backlog) ages(now time.Time) (checkpoint, oldest time.Duration) {
	if b == nil {
		return 0, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.chunks) == 0 && !b.behind {
		return 0, 0
	}
	checkpoint = max(now.Sub(b.since), 0)
	if len(b.chunks) > 0 {
		// A host clock behind AWS's would make a fresh record's age
		// negative.
		oldest = max(now.Sub(b.chunks[0].oldest), 0)
	}
	return checkpoint, oldest
}
