package leasecore

import (
	"sync"
	"time"
)

// EventKind says what happened to a lease of this worker.
type EventKind int

// Lease events, delivered in the order they happened.
const (
	// LeaseGained: the worker took (or stole, or re-adopted) the lease and may
	// start processing its shard.
	LeaseGained EventKind = iota + 1
	// LeaseLost: the worker no longer holds the lease and must stop
	// processing the shard at once; checkpoints for it are refused.
	LeaseLost
	// LeaseReleased: the worker gave the lease up on graceful stop.
	LeaseReleased
	// LeaseHandoff (KCL 3.x): the leader asked this worker to hand the
	// lease to another (leaseOwner is the next owner, checkpointOwner this
	// worker). The lease stays held and renewed: stop reading the shard,
	// finish and checkpoint the batch in flight, then call
	// Coordinator.CompleteHandoff; after the handoff timeout stop the
	// handler first and call it anyway.
	LeaseHandoff
	// LeaseHandedOff (KCL 3.x): the transfer was written; the lease is no
	// longer held.
	LeaseHandedOff
)

func (k EventKind) String() string {
	switch k {
	case LeaseGained:
		return "gained"
	case LeaseLost:
		return "lost"
	case LeaseReleased:
		return "released"
	case LeaseHandoff:
		return "handoff"
	case LeaseHandedOff:
		return "handed-off"
	}
	return "unknown"
}

// LeaseEvent reports a change of the held set.
type LeaseEvent struct {
	Kind  EventKind
	Lease Lease // the lease as this worker last wrote or read it
	// Tenure numbers each holding of a lease by this coordinator; a lease
	// lost and taken again gets a new one. CheckpointTenure uses it so that a
	// processor of an earlier holding cannot checkpoint into a later one.
	Tenure uint64
	Err    error // why it was lost (LeaseLost only)
	// StolenFrom is the owner a gained lease was stolen from: it had not
	// expired and was not released, so that worker may still be running a
	// handler for the shard until it notices (LeaseGained only).
	StolenFrom string
	// NotBefore, when set, is the earliest time the shard's first batch may
	// start: by then the old owner of a stolen lease has noticed the steal
	// at its next renewal, or stopped its handler at its own deadline
	// (Config.StealWait after the take was answered). Zero: at once.
	NotBefore time.Time
}

// eventQueue delivers events to the callback from one goroutine, in order,
// without ever blocking the renewer or taker on a slow consumer.
type eventQueue struct {
	mu      sync.Mutex
	pending []LeaseEvent
	wake    chan struct{}
	closed  bool
	done    chan struct{}
}

func newEventQueue(deliver func(LeaseEvent)) *eventQueue {
	q := &eventQueue{wake: make(chan struct{}, 1), done: make(chan struct{})}
	go q.run(deliver)
	return q
}

func (q *eventQueue) push(e LeaseEvent) {
	q.mu.Lock()
	if !q.closed {
		q.pending = append(q.pending, e)
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// close delivers what is queued, then stops; it returns when done.
func (q *eventQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	<-q.done
}

func (q *eventQueue) run(deliver func(LeaseEvent)) {
	defer close(q.done)
	for range q.wake {
		q.mu.Lock()
		batch, closed := q.pending, q.closed
		q.pending = nil
		q.mu.Unlock()
		for _, e := range batch {
			if deliver != nil {
				deliver(e)
			}
		}
		if closed {
			return
		}
	}
}
