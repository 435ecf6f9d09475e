package fleetsim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/kcltool/kcltool/coordination/assignment"
	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
)

// LedOptions set up MeasureLed; zero fields take the defaults.
type LedOptions struct {
	Warmup     time.Duration          // after every lease is held (1 min)
	Steady     time.Duration          // the window the units are counted in (5 min)
	CrashLimit time.Duration          // how long to follow a crash (5 min)
	JoinLimit  time.Duration          // how long to follow a joining worker (10 min)
	KillLimit  time.Duration          // how long to follow the leader's kill (10 min)
	Batch      time.Duration          // a follower's batch in flight at a handoff (1 s)
	Assign     assignment.Config      // the kcltool lead's
	Java       kcl3fleet.LeaderConfig // the Java leads'
	// ContendPeriod is the kcltool lead's LeaderLockConfig.ContendPeriod.
	ContendPeriod time.Duration
	Seed          uint64
	// SkipCrash, SkipJoin and SkipKill leave those phases out.
	SkipCrash, SkipJoin, SkipKill bool
}

func (o LedOptions) withDefaults() LedOptions {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Warmup, time.Minute)
	def(&o.Steady, 5*time.Minute)
	def(&o.CrashLimit, 5*time.Minute)
	def(&o.JoinLimit, 10*time.Minute)
	def(&o.KillLimit, 10*time.Minute)
	def(&o.Batch, time.Second)
	if o.Seed == 0 {
		o.Seed = 2026
	}
	return o
}

// LedResult is what one led KCL 3.x fleet did.
type LedResult struct {
	Lead   Lead
	Engine Engine
	Point  Point
	Steady time.Duration
	// Assign: from the first start until every lease is held.
	Assign time.Duration
	// Units per lease per minute in the steady window, and their split by
	// operation (ddbmodel's op names; "Index" is the index's writes).
	ReadPerLeaseMin, WritePerLeaseMin float64
	ReadByOp, WriteByOp               map[string]float64
	PeakReadPerSec, PeakWritePerSec   float64
	// MovesPerMin: successful assignment writes per minute in the window.
	MovesPerMin float64
	// Crash: a follower killed until none of its leases is its own in the
	// table; CrashDone false when CrashLimit passed first.
	Crash     time.Duration
	CrashDone bool
	// Join: a new worker's start until it holds its fair share (JoinFair:
	// see MeasureLed); JoinRuns is that in assignment intervals, rounded up.
	Join     time.Duration
	JoinDone bool
	JoinRuns int
	JoinHeld int
	JoinFair int
	// Kill: the leader (a worker) killed with kill -9 until none of its
	// leases is its own in the table; NewLeader until another member
	// holds the lock. Done false when KillLimit passed first.
	Kill          time.Duration
	KillDone      bool
	NewLeader     time.Duration
	NewLeaderDone bool
	KillLeases    int
}

// Total is read plus write units per lease per minute.
func (r LedResult) Total() float64 { return r.ReadPerLeaseMin + r.WritePerLeaseMin }

// MeasureLed runs a KCL 3.x fleet whose workers all contend for
// leadership: p.Workers members of engine's followers with lead's leader
// side start within StartSpread on a table of unowned leases; the leader
// assigns them all; after a warm-up, the steady window; then a follower
// crashes, a new worker joins, and last the leader is killed. It must run
// inside a synctest bubble.
func MeasureLed(lead Lead, engine Engine, p Point, o LedOptions) LedResult {
	o = o.withDefaults()
	f := NewFleet3(engine, p.Leases, o.Batch, kcl3fleet.LeaderConfig{})
	f.Lead, f.AssignConfig, f.JavaLeader, f.ContendPeriod = lead, o.Assign, o.Java, o.ContendPeriod
	defer f.Stop()
	res := LedResult{Lead: lead, Engine: engine, Point: p, Steady: o.Steady}
	ids := WorkerIDs("w", p.Workers)
	rng := rand.New(rand.NewPCG(o.Seed, 11))
	start := f.Now()
	for i, id := range ids {
		f.StartMember(id, o.Seed+uint64(i))
		f.Run(time.Duration(rng.Int64N(int64(StartSpread)/int64(p.Workers))), nil)
	}
	if _, ok := f.Run(15*time.Minute, func() bool { return f.HeldTotal() == p.Leases }); !ok {
		panic(fmt.Sprintf("%s led by %s: %d of %d leases held after 15 minutes", p, lead, f.HeldTotal(), p.Leases))
	}
	res.Assign = f.Now().Sub(start)
	f.Run(o.Warmup, nil)

	f.Model.ResetStats()
	moves := f.LeaderMoves()
	f.Run(o.Steady, nil)
	st := f.Model.Stats()
	per := o.Steady.Minutes() * float64(p.Leases)
	res.ReadPerLeaseMin, res.WritePerLeaseMin = st.ReadUnits/per, st.WriteUnits/per
	res.ReadByOp, res.WriteByOp = map[string]float64{}, map[string]float64{}
	for op, u := range st.ReadUnitsByOp {
		res.ReadByOp[op] = u / per
	}
	for op, u := range st.WriteUnitsByOp {
		res.WriteByOp[op] = u / per
	}
	res.PeakReadPerSec, res.PeakWritePerSec = st.PeakReadPerSecond, st.PeakWritePerSecond
	res.MovesPerMin = float64(f.LeaderMoves()-moves) / o.Steady.Minutes()

	interval := KCL3AssignmentInterval
	if lead == LeadKCLTool && f.AssignConfig.AssignmentInterval > 0 {
		interval = f.AssignConfig.AssignmentInterval
	}
	if !o.SkipCrash && p.Workers >= 2 {
		leader := f.LeaderMember()
		victim := ""
		for _, id := range f.Members() {
			if id != leader {
				victim = id
			}
		}
		f.Kill(victim)
		res.Crash, res.CrashDone = f.Run(o.CrashLimit, func() bool { return f.Model.OwnerCounts()[victim] == 0 })
		f.Run(30*time.Second, nil)
	}
	if !o.SkipJoin {
		// Its fair share: what a balanced fleet leaves the least loaded
		// worker when the others hold ceil(leases / workers) each, the
		// lease-count strategy's target (floor(leases / workers) when
		// that is less: 1,000 over 11 workers).
		w := len(f.Members()) + 1
		res.JoinFair = min(p.Leases/w, max(1, p.Leases-(w-1)*((p.Leases+w-1)/w)))
		f.StartMember("joiner", o.Seed+999)
		res.Join, res.JoinDone = f.Run(o.JoinLimit, func() bool { return f.Held("joiner") >= res.JoinFair })
		res.JoinHeld = f.Held("joiner")
		res.JoinRuns = int((res.Join + interval - 1) / interval)
		f.Run(30*time.Second, nil)
	}
	if !o.SkipKill {
		leader := f.LeaderMember()
		if leader == "" {
			panic(fmt.Sprintf("%s led by %s: no leader to kill", p, lead))
		}
		res.KillLeases = f.Model.OwnerCounts()[leader]
		f.Kill(leader)
		killed := f.Now()
		res.Kill, res.KillDone = f.Run(o.KillLimit, func() bool {
			if !res.NewLeaderDone && f.LeaderMember() != "" {
				res.NewLeader, res.NewLeaderDone = f.Now().Sub(killed), true
			}
			return f.Model.OwnerCounts()[leader] == 0
		})
	}
	return res
}
