package runner

import (
	"context"

	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/runner/retrieval"
)

// shardReader is how a shardRun gets one shard's records: polling with
// GetRecords today (pollingReader), enhanced fan-out's SubscribeToShard
// next. A reader delivers pages in order, each with the records (after
// de-aggregation and the at-or-below-checkpoint filter) and
// MillisBehindLatest; the last page of a closed shard has end set and the
// children that continue it, when the reader learnt them (an empty list
// means unknown: the run finds them before SHARD_END, shardend.go).
type shardReader interface {
	// Pages is closed when the reader stops: after the last page of a
	// closed shard, when the run's context ends or the worker stops, or
	// when the shard is gone (Gone).
	Pages() <-chan retrieval.Page
	// Gone is the ResourceNotFound that stopped the reader early, or nil.
	// Read it once Pages is closed.
	Gone() error
	// Close stops the reader and waits until it has.
	Close()
}

// newReader starts the reader of one holding of the shard at start. hr
// filters KPL aggregates by the shard's hash range (shardranges.go).
func (r *shardRun) newReader(start leasecore.SequenceNumber, hr leasecore.HashRange) shardReader {
	if r.w.cfg.FanOut != nil {
		return r.startFanOut(start, hr)
	}
	return r.startPolling(start, hr)
}

// pollingConfig is what the polling reader takes from the worker's
// settings.
func (w *Worker) pollingConfig() retrieval.PollingConfig {
	c := w.cfg
	return retrieval.PollingConfig{MaxRecords: c.MaxRecords, AtTimestamp: c.Initial.Timestamp, Clock: c.Clock, Encoded: c.MultiLang}
}

// pollingReader reads ahead one page with a fetcher on its own goroutine,
// paced as fetch describes.
type pollingReader struct {
	pages   chan retrieval.Page
	fetched chan struct{}
	ctx     context.Context // ends with the run, or when the shard is gone
	stop    context.CancelCauseFunc
}

func (r *shardRun) startPolling(start leasecore.SequenceNumber, hr leasecore.HashRange) *pollingReader {
	// A shard Kinesis no longer has stops the fetch at once: its data
	// expired, and retrying cannot bring it back (shardend.go).
	fetchCtx, stopFetch := context.WithCancelCause(r.ctx)
	loop := r.w.health.Loop("reader "+r.name(), r.w.readerBound())
	fetchCtx = leasecore.WithLoop(fetchCtx, loop)
	f := retrieval.NewFetcher(expiryWatch{KinesisAPI: r.w.kin, expired: stopFetch}, r.stream, r.shardID, start, r.w.pollingConfig(), hr, r.stats, r.log)
	f.FromTrimHorizon = r.fromTrimHorizon
	p := &pollingReader{pages: make(chan retrieval.Page, 1), fetched: make(chan struct{}), ctx: fetchCtx, stop: stopFetch}
	go func() {
		defer close(p.fetched)
		defer close(p.pages)
		defer loop.Close()
		r.fetch(fetchCtx, f, p.pages)
	}()
	return p
}

func (p *pollingReader) Pages() <-chan retrieval.Page { return p.pages }
func (p *pollingReader) Gone() error                  { return expiredCause(p.ctx) }

func (p *pollingReader) Close() {
	p.stop(nil)
	<-p.fetched
}

// fetch reads pages until the shard ends or the run stops, pacing itself:
// at once while behind the tip or after a full page, after the idle time
// otherwise.
func (r *shardRun) fetch(ctx context.Context, f *retrieval.Fetcher, pages chan<- retrieval.Page) {
	for {
		leasecore.LoopOf(ctx).Beat()
		if r.stopping() {
			return
		}
		p, err := f.Next(ctx)
		if err != nil {
			return
		}
		r.stats.Read(p.MillisBehind)
		// Parked while the run has not taken the page: it waits for the
		// handler, which has its own limits.
		loop := leasecore.LoopOf(ctx)
		loop.Park()
		select {
		case pages <- p:
		case <-ctx.Done():
			return
		case <-r.halt:
			return
		}
		loop.Unpark()
		if p.End {
			return
		}
		if d := f.Pause(p, r.w.cfg.IdleBetweenReads); d > 0 {
			t := r.w.clock.NewTimer(d)
			select {
			case <-t.C():
			case <-ctx.Done():
				t.Stop()
				return
			case <-r.halt:
				t.Stop()
				return
			}
		}
	}
}
