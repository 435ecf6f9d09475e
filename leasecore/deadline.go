package leasecore

import "time"

// One handler per shard at a time. The lease protocol alone does not
// promise it: another worker takes a lease once its counter has not moved
// for the failover time, and steals one whenever the balance says so, while
// the old owner learns either only at its next renewal. So each side keeps
// a margin:
//
//   - the holder stops its shard's handler at its handler deadline, the last
//     write it knows was applied plus the failover time minus StopMargin, by
//     a timer rather than at the renewal loop's pace. No taker can judge the
//     lease expired before that write plus the failover time (it sees the
//     counter move no earlier than the write was sent).
//   - a worker that steals a lease waits StealWait before the shard's first
//     batch: by then the old owner has seen its next renewal fail and
//     stopped, or, if its renewals are failing, has reached its handler
//     deadline, give or take the bound below.
//
// A stolen lease whose old owner cannot renew overlaps by at most
// FailoverTime - RenewInterval - 2*StopMargin plus the time the handler
// takes to die (75ms plus that at the defaults): its last applied write was
// sent before the steal was answered.

// StopMargin is how long before its lease deadline a holder stops the
// shard's handler: one renew interval (3.308s at the defaults, so a handler
// is stopped after 6.69s without a renewal known applied), but never more
// than half of what separates a renewal from the failover time, so that a
// renewal on time always moves the deadline before it passes.
func (c Config) StopMargin() time.Duration {
	c = c.WithDefaults()
	return min(c.RenewInterval, (c.FailoverTime-c.RenewInterval)/2)
}

// StealWait is how long a stolen lease's shard waits before its first
// batch, counted from the take's answer: one renew interval, within which
// the old owner's next renewal finds the lease gone and stops its handler,
// plus StopMargin for that renewal's round trip and the handler's exit
// (6.6s at the defaults). Leases taken because they expired, or released,
// start at once.
func (c Config) StealWait() time.Duration {
	c = c.WithDefaults()
	return c.RenewInterval + c.StopMargin()
}

// HandlerDeadline is when this worker must have stopped the handler of its
// holding (tenure) of the lease, unless a write known to be applied comes
// first: the send time of the last such renewal, take or checkpoint, plus
// the failover time, minus StopMargin. It moves with every renewal. ok is
// false once that holding is over (lost, released, or lost and taken again).
// It never waits for a renewal in flight.
func (c *Coordinator) HandlerDeadline(key string, tenure uint64) (deadline time.Time, ok bool) {
	hl := c.lookup(key)
	if hl == nil || hl.tenure != tenure {
		return time.Time{}, false
	}
	renewed := hl.renewed.Load()
	return renewed.Add(c.cfg.FailoverTime - c.cfg.StopMargin()), true
}
