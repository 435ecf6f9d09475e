package leasecore

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/kcltool/kcltool/internal/clock"
)

// Health is what a worker's /livez and /readyz answer (runner/metrics
// serves them; docs/deploy.md, Health endpoints). It lives here because the
// loops it watches and the lease-table calls it judges are the
// coordinator's; the worker's own loops and its shard readers register too.
//
// Liveness: every loop registers with a bound (Loop) and beats whenever it
// goes round and whenever one of its AWS calls returns, failed or not (the
// call sites find the loop in the call's context, WithLoop). A failed call is
// progress: an unreachable DynamoDB must never make a probe restart the
// fleet. A loop is wedged when it has not beaten for longer than its bound,
// unless it is parked: waiting for something that has its own limits (a
// shard reader whose handler is still busy with the last batch).
//
// Readiness: whether the worker's lease-table calls succeed (renewals while
// it holds leases, the taker's scans or the 3.x discovery while it holds
// none), judged against the failover time.
type Health struct {
	clk      clock.Clock
	failover time.Duration

	mu       sync.Mutex
	loops    map[*Loop]struct{}
	held     func() int
	calls    [2]callState // callRenew, callAssign
	stopping bool
}

const (
	callRenew  = 0
	callAssign = 1
)

// callState is one kind of lease-table call's recent history.
type callState struct {
	lastOK       time.Time // last success; zero: never
	failingSince time.Time // first failure since the last success; zero while succeeding
	lastOp       string    // the operation of the last failure
	lastErr      string
}

func (s callState) seen() bool { return !s.lastOK.IsZero() || !s.failingSince.IsZero() }

// NewHealth returns a worker's health state; failover is the lease
// failover time, how long lease-table calls may fail before the worker is
// not ready.
func NewHealth(clk clock.Clock, failover time.Duration) *Health {
	if clk == nil {
		clk = clock.RealClock()
	}
	return &Health{clk: clk, failover: failover, loops: map[*Loop]struct{}{}}
}

// bindHeld gives the count of leases held; the coordinator calls it.
func (h *Health) bindHeld(held func() int) {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.held = held
	h.mu.Unlock()
}

// Stopping marks the worker as stopping: it is not ready from now on, so
// that a load balancer or a rollout stops counting on it.
func (h *Health) Stopping() {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.stopping = true
	h.mu.Unlock()
}

// LeaseCall records the outcome of one lease-table call of the
// coordinator: op is OpRenew for renewals, OpScan or OpDiscover for the
// taker's scans and the 3.x discovery. A call cut off because the worker
// stops is no outcome. ErrLeaseLost is a success here: the table answered.
func (h *Health) LeaseCall(ctx context.Context, op string, err error) {
	if h == nil || (err != nil && ctx.Err() != nil) {
		return
	}
	kind := callAssign
	if op == OpRenew {
		kind = callRenew
	}
	now := h.clk.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	s := &h.calls[kind]
	if err == nil || errors.Is(err, ErrLeaseLost) {
		s.lastOK, s.failingSince, s.lastOp, s.lastErr = now, time.Time{}, "", ""
		return
	}
	if s.failingSince.IsZero() {
		s.failingSince = now
	}
	s.lastOp, s.lastErr = op, err.Error()
}

// Readiness statuses (the "status" key of /readyz).
const (
	ReadyOK       = "ready"
	ReadyStarting = "starting"
	ReadyFailing  = "failing"
	ReadyStopping = "stopping"
)

// Readiness is /readyz's answer; the JSON keys are documented in
// docs/deploy.md and must not change.
type Readiness struct {
	Status string `json:"status"`
	Ready  bool   `json:"ready"`
	// LeasesHeld is the count of leases the worker holds now.
	LeasesHeld int `json:"leasesHeld"`
	// Reason says why the worker is not ready; empty when it is.
	Reason string `json:"reason,omitempty"`
	// Operation, Error and FailingSince describe the failing calls
	// (status failing, or starting after failures).
	Operation      string     `json:"operation,omitempty"`
	Error          string     `json:"error,omitempty"`
	FailingSince   *time.Time `json:"failingSince,omitempty"`
	FailingSeconds float64    `json:"failingSeconds,omitempty"`
	// FailoverSeconds is the failover time calls may fail for.
	FailoverSeconds float64 `json:"failoverSeconds"`
}

// Ready judges readiness now.
//
//   - Stopping: not ready, whatever the calls do.
//   - Before the first lease-table call of the coordinator succeeds: not
//     ready (starting). A new worker that cannot reach its table must not
//     count as a replacement in a rollout.
//   - Holding leases: not ready once the renewals have failed, with no
//     success in between, for longer than the failover time. Holding none:
//     the same with the taker's scans (2.x) or the discovery query (3.x),
//     each failed page counted as it happens (ScanOptions.OnRetry). A
//     renewals' failing spell with no scan or discovery success since it
//     began goes on counting, so that a worker whose leases expired during
//     an outage is not ready again until a scan succeeds.
//   - Otherwise ready, leases or none: a worker among more workers than
//     shards, or a 3.x worker waiting for the leader, is ready.
func (h *Health) Ready() Readiness {
	if h == nil {
		return Readiness{Status: ReadyStarting, Reason: "the worker has not started"}
	}
	now := h.clk.Now()
	h.mu.Lock()
	held, stopping, calls, failover := h.held, h.stopping, h.calls, h.failover
	h.mu.Unlock()
	n := 0
	if held != nil {
		n = held()
	}
	r := Readiness{LeasesHeld: n, FailoverSeconds: failover.Seconds()}
	if stopping {
		r.Status, r.Reason = ReadyStopping, "the worker is stopping"
		return r
	}
	renew, assign := calls[callRenew], calls[callAssign]
	var spell callState // the calls that decide, and their failing spell
	if (n > 0 && renew.seen()) || (n == 0 && !assign.seen()) {
		spell = renew
	} else {
		spell = assign
		// Leases that expired while their renewals failed: that spell
		// goes on until a scan or discovery succeeds after it began.
		if f := renew.failingSince; !f.IsZero() && !assign.lastOK.After(f) &&
			(spell.failingSince.IsZero() || f.Before(spell.failingSince)) {
			if spell.failingSince.IsZero() {
				spell.lastOp, spell.lastErr = renew.lastOp, renew.lastErr
			}
			spell.failingSince = f
		}
	}
	if !spell.failingSince.IsZero() {
		since := spell.failingSince
		r.Operation, r.Error, r.FailingSince, r.FailingSeconds = spell.lastOp, spell.lastErr, &since, now.Sub(since).Seconds()
	}
	switch {
	case calls[callRenew].lastOK.IsZero() && calls[callAssign].lastOK.IsZero():
		r.Status, r.Reason = ReadyStarting, "no lease-table call of the lease coordinator has succeeded yet"
	case !spell.failingSince.IsZero() && now.Sub(spell.failingSince) > failover:
		r.Status, r.Reason = ReadyFailing, "lease-table calls have failed for longer than the failover time"
	default:
		r.Status, r.Ready = ReadyOK, true
	}
	return r
}

// Loop is one loop's heartbeat. A nil *Loop ignores every call, so that code
// run without a Health (tests, tools) needs no checks.
type Loop struct {
	h     *Health
	name  string
	bound time.Duration

	mu     sync.Mutex
	last   time.Time
	parked int
}

// Loop registers a loop named name that must beat at least every bound
// while not parked; it counts as just beaten. Close unregisters it.
func (h *Health) Loop(name string, bound time.Duration) *Loop {
	if h == nil {
		return nil
	}
	l := &Loop{h: h, name: name, bound: bound, last: h.clk.Now()}
	h.mu.Lock()
	h.loops[l] = struct{}{}
	h.mu.Unlock()
	return l
}

// Beat records progress: the loop went round, or one of its calls returned.
func (l *Loop) Beat() {
	if l == nil {
		return
	}
	now := l.h.clk.Now()
	l.mu.Lock()
	l.last = now
	l.mu.Unlock()
}

// Park marks the loop as waiting on something with limits of its own until
// Unpark; it cannot be wedged meanwhile.
func (l *Loop) Park() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.parked++
	l.mu.Unlock()
}

// Unpark ends a Park and counts as progress.
func (l *Loop) Unpark() {
	if l == nil {
		return
	}
	now := l.h.clk.Now()
	l.mu.Lock()
	l.parked--
	l.last = now
	l.mu.Unlock()
}

// Close unregisters the loop: it ended.
func (l *Loop) Close() {
	if l == nil {
		return
	}
	l.h.mu.Lock()
	delete(l.h.loops, l)
	l.h.mu.Unlock()
}

type loopKey struct{}

// WithLoop returns ctx carrying l, so that the AWS calls made with it beat
// l when they return (the coordinator's metered client, the runner's
// deadline wrappers).
func WithLoop(ctx context.Context, l *Loop) context.Context {
	if l == nil {
		return ctx
	}
	return context.WithValue(ctx, loopKey{}, l)
}

// LoopOf is the loop ctx carries, or nil.
func LoopOf(ctx context.Context) *Loop {
	l, _ := ctx.Value(loopKey{}).(*Loop)
	return l
}

// LoopNames are the loops watched now, sorted.
func (h *Health) LoopNames() []string {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.loops))
	for l := range h.loops {
		out = append(out, l.name)
	}
	sort.Strings(out)
	return out
}

// Liveness statuses (the "status" key of /livez).
const (
	LiveOK     = "ok"
	LiveWedged = "wedged"
)

// Liveness is /livez's answer; the JSON keys are documented in
// docs/deploy.md and must not change.
type Liveness struct {
	Status string `json:"status"`
	Live   bool   `json:"live"`
	// Loops is the count of loops watched.
	Loops int `json:"loops"`
	// Wedged lists the loops past their bound, by name.
	Wedged []WedgedLoop `json:"wedged,omitempty"`
}

// WedgedLoop is one loop that has not made progress within its bound.
type WedgedLoop struct {
	Loop                 string  `json:"loop"`
	SinceProgressSeconds float64 `json:"sinceProgressSeconds"`
	BoundSeconds         float64 `json:"boundSeconds"`
}

// Live judges liveness now. Nothing registered (before the worker runs, or
// without a Health) is live.
func (h *Health) Live() Liveness {
	if h == nil {
		return Liveness{Status: LiveOK, Live: true}
	}
	now := h.clk.Now()
	h.mu.Lock()
	loops := make([]*Loop, 0, len(h.loops))
	for l := range h.loops {
		loops = append(loops, l)
	}
	h.mu.Unlock()
	out := Liveness{Status: LiveOK, Live: true, Loops: len(loops)}
	for _, l := range loops {
		l.mu.Lock()
		age, parked := now.Sub(l.last), l.parked > 0
		l.mu.Unlock()
		if !parked && age > l.bound {
			out.Wedged = append(out.Wedged, WedgedLoop{Loop: l.name, SinceProgressSeconds: age.Seconds(), BoundSeconds: l.bound.Seconds()})
		}
	}
	if len(out.Wedged) > 0 {
		sort.Slice(out.Wedged, func(i, j int) bool { return out.Wedged[i].Loop < out.Wedged[j].Loop })
		out.Status, out.Live = LiveWedged, false
	}
	return out
}

// healthMargin is added to every loop's bound: scheduling delays, a
// garbage collection, a slow machine must not count as a wedged loop.
const healthMargin = 30 * time.Second

// Staleness bounds of the coordinator's loops (docs/deploy.md): the longest
// a loop can go without beating when it works, plus healthMargin.
//
//   - renewer: a round starts every RenewInterval and retries until the
//     next round's start (roundEnd), so a round lasts at most two renew
//     intervals; its calls end within ItemTimeout, and a renewal may first
//     wait for a checkpoint call on the same lease (ItemTimeout again).
//   - taker: waits at most the KCL taker interval (or the fixed one, or the
//     failover time in 3.x mode); a scan page ends within ScanTimeout, a
//     take within ItemTimeout, and retries back off less than a renew
//     interval.
//   - discoverer: runs every DiscoveryInterval; its query pages end within
//     ScanTimeout, its reads within ItemTimeout.
func (c Config) renewerBound() time.Duration {
	return 2*c.RenewInterval + 2*c.ItemTimeout() + healthMargin
}

func (c Config) takerBound() time.Duration {
	wait := max(c.KCLTakerInterval(), c.TakerInterval, c.FailoverTime)
	return wait + 2*c.ScanTimeout() + c.RenewInterval + healthMargin
}

func (c Config) discovererBound() time.Duration {
	return c.DiscoveryInterval() + 2*c.ScanTimeout() + healthMargin
}
