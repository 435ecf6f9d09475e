package processor

import "context"

// Slots bounds how many handler processes run at once across all shards of
// a worker (--max-parallel). A shard takes a slot for each handler run, not
// for a whole batch: one that backs off between retries leaves its slot to
// the others.
type Slots struct{ c chan struct{} }

// NewSlots allows n handler runs at once.
func NewSlots(n int) *Slots { return &Slots{c: make(chan struct{}, max(n, 1))} }

// acquire waits for a slot. It gives up with ErrStopped when stop closes
// first (a graceful stop starts nothing new) and with ctx's cause when ctx
// ends. A nil *Slots is unbounded.
func (s *Slots) acquire(ctx context.Context, stop <-chan struct{}) (release func(), err error) {
	if s == nil {
		return func() {}, nil
	}
	select {
	case s.c <- struct{}{}:
		return func() { <-s.c }, nil
	default:
	}
	select {
	case s.c <- struct{}{}:
		return func() { <-s.c }, nil
	case <-stop:
		return nil, ErrStopped
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// InUse reports how many slots are taken.
func (s *Slots) InUse() int {
	if s == nil {
		return 0
	}
	return len(s.c)
}
