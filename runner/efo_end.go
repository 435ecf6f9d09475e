package runner

import (
	"time"

	"github.com/kcltool/kcltool/runner/processor"
	"github.com/kcltool/kcltool/runner/retrieval"
)

// A fan-out subscription ends its shard with an event that carries
// ChildShards. A subscription that stays open at the end of a closed shard
// without them (kinesis-local never sends them) would hold the shard, and
// its children, for good. So while a subscription brings no records, the
// reader asks the shard listing now and then whether its shard is closed;
// once it is, and no ChildShards have come within as long again, it stops
// the subscription and reads on from the last event with GetRecords, as
// polling does, to the last page, whose ChildShards (or else the listing,
// shardend.go) name the children. The shard is never ended without them.

// endDue says whether to confirm the end with GetRecords now; records says
// the event (if any) brought records.
func (f *fanOutReader) endDue(records bool) bool {
	w := f.r.w
	every := w.cfg.FanOut.EndCheckEvery
	now := w.clock.Now()
	if records || f.lastRecords.IsZero() {
		// Records still flow: the shard's end, if it is closed, is still
		// ahead, and the subscription will bring it.
		f.lastRecords = now
		return false
	}
	if now.Sub(f.lastRecords) < every {
		return false
	}
	if f.closedSince.IsZero() {
		if now.Sub(f.lastEndCheck) < every {
			return false
		}
		f.lastEndCheck = now
		g, err := f.r.listing()
		if err != nil {
			f.log.Debug("shard listing for the end check failed; asking again later", "err", err)
			return false
		}
		if n, listed := g.Node(f.r.shardID); !listed || n.Open {
			return false
		}
		f.closedSince = now
		f.log.Debug("the shard listing shows the shard closed; waiting for ChildShards on the subscription")
		return false
	}
	return now.Sub(f.closedSince) >= every
}

// confirmEnd reads the rest of a closed shard with GetRecords from the
// last event on, delivering what it finds, up to the last page.
func (f *fanOutReader) confirmEnd() (ended bool, err error) {
	r := f.r
	f.log.Info("shard closed and no ChildShards came on its subscription; confirming its end with GetRecords", "after", f.cont,
		"closedFor", r.w.clock.Now().Sub(f.closedSince).Round(time.Millisecond).String())
	ft := retrieval.NewFetcher(expiryWatch{KinesisAPI: r.w.kin, expired: f.stop}, r.stream, r.shardID, f.start, r.w.pollingConfig(), f.hashRange, r.stats, f.log)
	ft.ContinueAfter(f.cont, f.filtering)
	for {
		p, err := ft.Next(f.ctx)
		if err != nil {
			return false, err
		}
		r.stats.Read(p.MillisBehind)
		select {
		case f.pages <- p:
		case <-f.ctx.Done():
			return false, f.ctx.Err()
		case <-r.halt:
			return false, processor.ErrStopped
		}
		if p.End {
			return true, nil
		}
	}
}
