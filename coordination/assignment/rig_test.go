package assignment

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
	"github.com/kcltool/kcltool/leasecore"
)

// TestMain stops the local DynamoDB server the tests started.
func TestMain(m *testing.M) { os.Exit(emulator.Main(m)) }

// rig is a KCL 3.x application on dynalite led by a Manager, with
// Java-like followers (kcl3fleet.OtherWorker) driven step by step on a
// fake clock: no goroutine runs on its own, so every run sees a table in a
// known state.
type rig struct {
	t       *testing.T
	ctx     context.Context
	clk     *clocktest.Clock
	f       *kcl3fleet.Fleet
	m       *Manager
	st      coordination.State
	workers map[string]*kcl3fleet.OtherWorker
	dead    map[string]bool
	ticks   int
}

// tick is the followers' step: renewals every tick (the KCL's 3.3 s),
// discovery every 3 ticks (about its 9,975 ms), metrics every 9 (30 s).
const tick = 10 * time.Second / 3

func newRig(t *testing.T, kind kcl3fleet.Kind, cfg Config, leases int) *rig {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // ends the followers' handoff timers
	clk := clocktest.New(time.Unix(1_790_000_000, 0))
	f := kcl3fleet.Setup(t, emulator.DynamoDB(t), kcl3fleet.Layout{Kind: kind})
	f.Clock = clk
	keys := make([]string, leases)
	for i := range keys {
		keys[i] = fmt.Sprintf("shardId-%012d", i)
	}
	if err := f.CreateLeases(ctx, keys...); err != nil {
		t.Fatal(err)
	}
	st, err := coordination.Detect(ctx, f.DDB.(coordination.DetectAPI), f.Tables)
	if err != nil {
		t.Fatal(err)
	}
	api := f.DDB.(coordination.WriteAPI)
	return &rig{t: t, ctx: ctx, clk: clk, f: f, st: st, m: NewManager(api, f.Tables, cfg, clk, nil),
		workers: map[string]*kcl3fleet.OtherWorker{}, dead: map[string]bool{}}
}

// join adds followers that report their metrics at once.
func (r *rig) join(ids ...string) {
	for _, id := range ids {
		r.joinWith(kcl3fleet.WorkerConfig{ID: id})
	}
}

func (r *rig) joinWith(cfg kcl3fleet.WorkerConfig) {
	w := r.f.NewWorker(cfg)
	r.workers[cfg.ID] = w
	if err := w.ReportMetrics(r.ctx); err != nil {
		r.t.Fatal(err)
	}
}

// kill stops a follower dead: no renewal, no metrics, no handoff.
func (r *rig) kill(id string) {
	r.workers[id].Kill()
	r.dead[id] = true
}

// advance moves the clock by d in ticks, the live followers doing their
// work at each.
func (r *rig) advance(d time.Duration) {
	r.t.Helper()
	for end := r.clk.Now().Add(d); r.clk.Now().Before(end); {
		r.clk.Advance(tick)
		r.ticks++
		for _, id := range r.ids() {
			w := r.workers[id]
			if r.dead[id] {
				continue
			}
			if r.ticks%9 == 0 {
				if err := w.ReportMetrics(r.ctx); err != nil {
					r.t.Fatal(err)
				}
			}
			if r.ticks%3 == 0 {
				if err := w.Discover(r.ctx); err != nil {
					r.t.Fatal(err)
				}
			}
			if err := w.Renew(r.ctx); err != nil {
				r.t.Logf("%s renew: %v", id, err)
			}
		}
	}
}

func (r *rig) ids() []string {
	ids := make([]string, 0, len(r.workers))
	for id := range r.workers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// run is one assignment run; it fails the test on an error.
func (r *rig) run() Result {
	r.t.Helper()
	res, err := r.m.RunOnce(r.ctx, r.st)
	if err != nil {
		r.t.Fatalf("run: %v", err)
	}
	return res
}

// cycle is one assignment interval: a run, then the followers' work until
// the next.
func (r *rig) cycle() Result {
	res := r.run()
	r.advance(r.m.cfg.AssignmentInterval)
	return res
}

// owners counts the leases by leaseOwner as the table holds them, ""
// for unassigned, and the leases in handoff.
func (r *rig) owners() (by map[string]int, inHandoff int) {
	r.t.Helper()
	ls, err := r.f.Leases(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	by = map[string]int{}
	for _, l := range ls {
		by[l.LeaseOwner]++
		if l.CheckpointOwner != "" {
			inHandoff++
		}
	}
	return by, inHandoff
}

func (r *rig) leases() []leasecore.Lease {
	ls, err := r.f.Leases(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	return ls
}
