package fleetsim

import (
	"fmt"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/ddbmodel"
	"github.com/kcltool/kcltool/leasecore"
)

// Point is one grid point: a table of Leases leases and a fleet of Workers.
type Point struct{ Leases, Workers int }

func (p Point) String() string { return fmt.Sprintf("%d leases x %d workers", p.Leases, p.Workers) }

// Options set up one measurement.
type Options struct {
	Warmup     time.Duration // before the steady window (default 1 min)
	Steady     time.Duration // the steady-state window (default 10 min)
	CrashLimit time.Duration // how long to wait for a crashed worker's leases (default 5 min)
	JoinLimit  time.Duration // how long to follow a new worker before extrapolating (default 10 min)
	ShardSync  bool          // see Fleet.ShardSync
	Model      ddbmodel.Config
	Config     leasecore.Config // kcltool's coordinator settings
	Seed       uint64
	// SkipCrash and SkipJoin leave those phases out.
	SkipCrash, SkipJoin bool
}

func (o Options) withDefaults() Options {
	if o.Warmup <= 0 {
		o.Warmup = time.Minute
	}
	if o.Steady <= 0 {
		o.Steady = 10 * time.Minute
	}
	if o.CrashLimit <= 0 {
		o.CrashLimit = 5 * time.Minute
	}
	if o.JoinLimit <= 0 {
		o.JoinLimit = 10 * time.Minute
	}
	if o.Seed == 0 {
		o.Seed = 2026
	}
	return o
}

// Result is what one engine did at one point.
type Result struct {
	Engine Engine
	Point  Point
	Steady time.Duration
	// Units per lease per minute in the steady window.
	ReadPerLeaseMin, WritePerLeaseMin float64
	// Split of the read units per lease per minute by operation.
	ReadByOp map[string]float64
	// MovesPerMin: takes and steals per minute in the steady window.
	MovesPerMin float64
	// PeakReadPerSec: most read units consumed in one second of the window.
	PeakReadPerSec float64
	// Takeover: from a worker's crash until none of its leases is its own
	// in the table. TakeoverDone is false if CrashLimit passed first.
	Takeover     time.Duration
	TakeoverDone bool
	// Join: from a new worker's start until it holds its fair share
	// (leases / workers, rounded down). Extrapolated when JoinLimit passed
	// first: the limit times fair share over leases gained.
	Join             time.Duration
	JoinExtrapolated bool
	JoinGained, Fair int
	Throttled        int64
	// SyncScans and SyncReuses: kcltool's shard syncs in the steady window
	// (with Options.ShardSync) that scanned the table, and those that used
	// the taker's latest scan instead.
	SyncScans, SyncReuses int64
	Wall                  time.Duration
}

// Total is read plus write units per lease per minute.
func (r Result) Total() float64 { return r.ReadPerLeaseMin + r.WritePerLeaseMin }

// Measure runs one engine at one point: a fleet of p.Workers on a table of
// p.Leases leases they already own (round-robin), started within 20s, then
// warm-up, the steady window, a crash of one worker, and a new worker
// joining. It must run inside a synctest bubble.
func Measure(engine Engine, p Point, o Options) Result {
	o = o.withDefaults()
	wall := time.Now()
	ids := WorkerIDs("w", p.Workers)
	f := NewFleet(engine, o.Model, p.Leases, ids, o.Seed)
	f.ShardSync, f.Config = o.ShardSync, o.Config
	defer f.Stop()
	res := Result{Engine: engine, Point: p, Steady: o.Steady}

	f.StartAll(ids)
	f.Run(o.Warmup, nil)
	moves := f.Moves()
	f.Model.ResetStats()
	scans, reuses := f.syncScans.Load(), f.syncReuses.Load()
	f.Run(o.Steady, nil)
	st := f.Model.Stats()
	res.SyncScans, res.SyncReuses = f.syncScans.Load()-scans, f.syncReuses.Load()-reuses
	minutes := o.Steady.Minutes() * float64(p.Leases)
	res.ReadPerLeaseMin, res.WritePerLeaseMin = st.ReadUnits/minutes, st.WriteUnits/minutes
	res.ReadByOp = map[string]float64{}
	for op, u := range st.ReadUnitsByOp {
		res.ReadByOp[op] = u / minutes
	}
	res.MovesPerMin = float64(f.Moves()-moves) / o.Steady.Minutes()
	res.PeakReadPerSec = st.PeakReadPerSecond
	for _, n := range st.Throttled {
		res.Throttled += n
	}

	if !o.SkipCrash && p.Workers > 1 {
		victim := ids[len(ids)-1]
		f.Crash(victim)
		res.Takeover, res.TakeoverDone = f.Run(o.CrashLimit, func() bool { return f.Model.OwnerCounts()[victim] == 0 })
		f.Run(30*time.Second, nil)
	}
	if !o.SkipJoin {
		workers := len(f.workers) + 1
		res.Fair = p.Leases / workers
		f.Start("joiner")
		var ok bool
		res.Join, ok = f.Run(o.JoinLimit, func() bool { return f.Held("joiner") >= res.Fair })
		res.JoinGained = f.Held("joiner")
		if !ok {
			res.JoinExtrapolated = true
			if res.JoinGained > 0 {
				res.Join = time.Duration(float64(res.Join) * float64(res.Fair) / float64(res.JoinGained))
			} else {
				res.Join = 0
			}
		}
	}
	res.Wall = time.Since(wall)
	return res
}

// Limits is a provisioned table's capacity for MeasureThrottled.
type Limits struct {
	ReadCapacity, WriteCapacity float64 // units per second
	// OtherWrites and OtherReads are the table's other traffic, in one-unit
	// requests per second (ddbmodel.Model.SetOtherTraffic): the handlers'
	// checkpoints and anything else that shares the table.
	OtherReads, OtherWrites float64
}

// ThrottleResult is what a fleet did on a table too small for its demand.
type ThrottleResult struct {
	Engine Engine
	Point  Point
	Limits Limits
	Window time.Duration
	// Lost, Moves: leases lost by the workers holding them, and takes and
	// steals, during the window (goal: 0 and 0).
	Lost, Moves int64
	// Throttled is the throttles the workers counted; ModelThrottled those
	// the table answered to the lease protocol, by operation.
	Throttled      int64
	ModelThrottled map[string]int64
	// OtherWriteServed and OtherWriteThrottled: the other traffic's fate.
	OtherWriteServed, OtherWriteThrottled int64
	// RenewalWritesPerSec is the write units the renewals need.
	RenewalWritesPerSec float64
	WriteUnitsPerSec    float64
}

// MeasureThrottled runs a fleet on demand until it is steady, then holds the
// table to lim for window and counts what moved, what was lost and what was
// throttled. It must run inside a synctest bubble.
func MeasureThrottled(engine Engine, p Point, lim Limits, window time.Duration, o Options) ThrottleResult {
	o = o.withDefaults()
	ids := WorkerIDs("w", p.Workers)
	f := NewFleet(engine, o.Model, p.Leases, ids, o.Seed)
	f.ShardSync, f.Config = o.ShardSync, o.Config
	defer f.Stop()
	f.StartAll(ids)
	f.Run(o.Warmup, nil)
	f.Model.SetCapacity(lim.ReadCapacity, lim.WriteCapacity)
	f.Model.SetOtherTraffic(lim.OtherReads, lim.OtherWrites)
	f.Model.ResetStats()
	lost, moves, throttled := f.Lost(), f.Moves(), f.Throttled()
	f.Run(window, nil)
	st := f.Model.Stats()
	_, _, served, rejected := f.Model.OtherTraffic()
	return ThrottleResult{Engine: engine, Point: p, Limits: lim, Window: window,
		Lost: f.Lost() - lost, Moves: f.Moves() - moves, Throttled: f.Throttled() - throttled,
		ModelThrottled: st.Throttled, OtherWriteServed: served, OtherWriteThrottled: rejected,
		RenewalWritesPerSec: float64(p.Leases) / (leasecore.Config{}).WithDefaults().RenewInterval.Seconds(),
		WriteUnitsPerSec:    st.WriteUnits / window.Seconds()}
}
