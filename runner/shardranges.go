package runner

import (
	"sync"
	"time"

	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// shardListings keeps each stream's latest full shard listing, so that a
// shard's reading filters KPL aggregates by the hash range Kinesis gives the
// shard. KCL's ProcessTask takes the range from the Shard its shard
// detector lists (KinesisShardDetector's cached shard map), never from the
// lease: leases written before KCL 2.3 carry no hash keys at all, and the
// shard's range is what decides which sub-records a reshard delivered here
// by mistake. The shard sync's listing fills it; a shard missing from it
// makes the reading list again (listedRange).
type shardListings struct {
	mu       sync.Mutex
	byStream map[reshard.Stream]*streamListing
}

// streamListing is one stream's listing; mu serialises the listings a miss
// makes, so that runs that miss together share one ListShards.
type streamListing struct {
	mu sync.Mutex
	// at is when the listing was asked for: a shard that existed then is
	// in it, unless its data has expired since.
	at time.Time
	g  *reshard.Graph
}

func (s *shardListings) stream(st reshard.Stream) *streamListing {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byStream == nil {
		s.byStream = map[reshard.Stream]*streamListing{}
	}
	l := s.byStream[st]
	if l == nil {
		l = &streamListing{}
		s.byStream[st] = l
	}
	return l
}

// store keeps g as the stream's listing unless a newer one is kept already.
func (s *shardListings) store(st reshard.Stream, at time.Time, g *reshard.Graph) {
	if g == nil {
		return
	}
	l := s.stream(st)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.g == nil || !at.Before(l.at) {
		l.at, l.g = at, g
	}
}

// shardRange is the hash range of the run's shard, for the KPL filter.
// found is false when Kinesis does not list the shard even in a listing
// asked for after the reading began: the reading then filters nothing, as
// KCL's ProcessTask does when its shard detector cannot find the shard. A
// failed listing is an error: KCL's task fails too, and is tried again,
// rather than hand over sub-records it could not check.
func (r *shardRun) shardRange(since time.Time) (hr leasecore.HashRange, found bool, err error) {
	l := r.w.listings.stream(r.stream)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.g != nil {
		if n, ok := l.g.Node(r.shardID); ok {
			return n.HashRange, true, nil
		}
		if !l.at.Before(since) {
			return leasecore.HashRange{}, false, nil
		}
	}
	// The shard is newer than the listing (a reshard since the last shard
	// sync), or there is no listing yet. KCL lists again on a miss only
	// once its listing is 30 s old, and leaves the batches before that
	// unfiltered; the first batches of a new child are the ones a reshard
	// makes misrouted, so kcltool lists at once.
	at := r.w.clock.Now()
	g, err := r.listing()
	if err != nil {
		return leasecore.HashRange{}, false, err
	}
	l.at, l.g = at, g
	n, ok := g.Node(r.shardID)
	return n.HashRange, ok, nil
}
