package runner

import "context"

// MaxReadsInFlight bounds the shard reads (GetRecords and GetShardIterator)
// one worker has open at once. Each shard's reader would otherwise send its
// read whenever it is due, so a worker holding hundreds of shards at the tip
// puts hundreds of requests in flight at every idle interval: the HTTP
// client opens a connection for each (more than it keeps idle, so many are
// dialled again every round), and a server that cannot answer them all at
// once answers them all later, past the request timeout. A reader waits for
// a slot before its request's deadline starts; slots are handed out in
// arrival order, so every shard keeps its turn. At a region's tens of
// milliseconds a read, 32 slots allow about a thousand reads a second,
// more than 500 shards at the tip ask for (docs/run.md, Many shards).
const MaxReadsInFlight = 32

// readSlots is a counting semaphore for the reads in flight.
type readSlots chan struct{}

func newReadSlots(n int) readSlots { return make(readSlots, n) }

// acquire waits for a slot, or fails when ctx ends first.
func (s readSlots) acquire(ctx context.Context) error {
	if s == nil {
		return nil
	}
	select {
	case s <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s readSlots) release() {
	if s != nil {
		<-s
	}
}
