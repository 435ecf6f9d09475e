package reset

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/leasecore"
)

// lineageWorld writes records in waves around a split and a merge:
//
//	A  t1  B  split(0→2,3)  C  t2  D  merge(2,3→4)  E  t3  F
//
// Only the leaf leases (1 and 4) exist: the parents' leases were cleaned
// up after SHARD_END, as KCL does.
type lineageWorld struct {
	*world
	t0, t1, t2, t3 time.Time
	a, b, c, e     map[string][]string // sequence numbers per shard and wave
}

func newLineageWorld(t *testing.T) *lineageWorld {
	w := &lineageWorld{world: newWorld(t, 2)}
	wave := func(shards ...int) map[string][]string {
		m := map[string][]string{}
		for _, s := range shards {
			m[shardID(s)] = w.put(shardID(s), 2)
		}
		return m
	}
	w.t0 = mark()
	w.a = wave(0, 1)
	w.t1 = mark()
	w.b = wave(0, 1)
	w.split(shardID(0))
	w.c = wave(1, 2, 3)
	w.t2 = mark()
	wave(1, 2, 3)
	w.merge(shardID(2), shardID(3))
	w.e = wave(1, 4)
	w.t3 = mark()
	wave(1, 4)
	w.lease(shardID(1), "", last(w.puts[shardID(1)]))
	w.lease(shardID(4), "", last(w.puts[shardID(4)]))
	return w
}

type want struct {
	action Action
	after  string
}

func checkPlan(t *testing.T, p *Plan, wants map[string]want) {
	t.Helper()
	if len(p.Changes) != len(wants) {
		t.Errorf("plan has %d rows, want %d: %+v", len(p.Changes), len(wants), p.Changes)
	}
	for key, w := range wants {
		c := changeOf(t, p, key)
		if c.Action != w.action || c.After == nil || c.After.SequenceNumber != w.after {
			t.Errorf("%s: %s → %v (%s), want %s → %s", key, c.Action, c.After, c.Reason, w.action, w.after)
		}
	}
}

func TestResetAtTimeFollowsTheLineage(t *testing.T) {
	w := newLineageWorld(t)
	th := leasecore.TRIM_HORIZON
	s0, s1, s2, s3, s4 := shardID(0), shardID(1), shardID(2), shardID(3), shardID(4)

	// Before every record: everything is replayed, the cleaned-up parents
	// first, so they are recreated.
	checkPlan(t, w.plan(ResetOptions{Target: Target{At: w.t0}}), map[string]want{
		s0: {ActionCreate, th}, s2: {ActionCreate, th}, s3: {ActionCreate, th},
		s1: {ActionUpdate, th}, s4: {ActionUpdate, th},
	})
	// Between A and B, before the split: shard 0 was open and is recreated
	// at its last A record; its children were created after the time.
	checkPlan(t, w.plan(ResetOptions{Target: Target{At: w.t1}}), map[string]want{
		s0: {ActionCreate, last(w.a[s0])}, s2: {ActionCreate, th}, s3: {ActionCreate, th},
		s1: {ActionUpdate, last(w.a[s1])}, s4: {ActionUpdate, th},
	})
	// Between C and D: shard 0 closed before the time (SHARD_END, no lease
	// needed); 2 and 3 were open and are recreated at their last C records.
	checkPlan(t, w.plan(ResetOptions{Target: Target{At: w.t2}}), map[string]want{
		s2: {ActionCreate, last(w.c[s2])}, s3: {ActionCreate, last(w.c[s3])},
		s1: {ActionUpdate, last(w.c[s1])}, s4: {ActionUpdate, th},
	})
	// Between E and F: every closed shard was closed before the time.
	p := w.plan(ResetOptions{Target: Target{At: w.t3}})
	checkPlan(t, p, map[string]want{s1: {ActionUpdate, last(w.e[s1])}, s4: {ActionUpdate, last(w.e[s4])}})
}

func TestResetAtTimeAppliesParentsFirst(t *testing.T) {
	w := newLineageWorld(t)
	s0, s1, s2, s3, s4 := shardID(0), shardID(1), shardID(2), shardID(3), shardID(4)
	p := w.plan(ResetOptions{Target: Target{At: w.t1}})
	pos := map[string]int{}
	for i, c := range p.Changes {
		pos[c.LeaseKey] = i
	}
	if !(pos[s0] < pos[s2] && pos[s0] < pos[s3] && pos[s2] < pos[s4] && pos[s3] < pos[s4]) {
		t.Fatalf("changes are not parents first: %v", pos)
	}
	x := w.execute(p, ExecOptions{})
	if n := x.Count(OutcomeApplied); n != 5 {
		t.Fatalf("applied %d of 5: %+v", n, x.Results)
	}
	ls := w.leases()
	for key, cp := range map[string]string{s0: last(w.a[s0]), s1: last(w.a[s1]), s2: leasecore.TRIM_HORIZON, s3: leasecore.TRIM_HORIZON, s4: leasecore.TRIM_HORIZON} {
		if got := ls[key].Checkpoint.SequenceNumber; got != cp {
			t.Errorf("%s checkpoint %s, want %s", key, got, cp)
		}
	}
	// Recreated as KCL's shard sync creates leases: parents, hash range,
	// counter 0, no owner.
	if l := ls[s2]; !slices.Equal(l.ParentShardIDs, []string{s0}) || l.StartingHashKey == "" || l.LeaseCounter != 0 || l.LeaseOwner != "" {
		t.Errorf("recreated lease %s: %+v", s2, l)
	}
	if l := ls[s4]; l.LeaseCounter != 8 || l.LeaseOwner != "" || l.OwnerSwitchesSinceCheckpoint != 0 {
		t.Errorf("reset lease %s: counter %d (want 7+1), owner %q", s4, l.LeaseCounter, l.LeaseOwner)
	}
}

func TestResetScopeAndOtherTargets(t *testing.T) {
	w := newLineageWorld(t)
	th := leasecore.TRIM_HORIZON
	s0, s1, s2, s3, s4 := shardID(0), shardID(1), shardID(2), shardID(3), shardID(4)

	// Only shard 4: its cleaned-up ancestors still come back.
	checkPlan(t, w.plan(ResetOptions{Shards: []string{s4}, Target: Target{At: w.t1}}), map[string]want{
		s0: {ActionCreate, last(w.a[s0])}, s2: {ActionCreate, th}, s3: {ActionCreate, th}, s4: {ActionUpdate, th},
	})
	checkPlan(t, w.plan(ResetOptions{Shards: []string{s1}, Target: Target{At: w.t1}}), map[string]want{
		s1: {ActionUpdate, last(w.a[s1])},
	})
	checkPlan(t, w.plan(ResetOptions{Target: Target{To: th}}), map[string]want{
		s0: {ActionCreate, th}, s2: {ActionCreate, th}, s3: {ActionCreate, th}, s1: {ActionUpdate, th}, s4: {ActionUpdate, th},
	})
	checkPlan(t, w.plan(ResetOptions{Target: Target{To: leasecore.LATEST}}), map[string]want{
		s1: {ActionUpdate, leasecore.LATEST}, s4: {ActionUpdate, leasecore.LATEST},
	})
	first := seq(w.a[s1][0])
	checkPlan(t, w.plan(ResetOptions{Shards: []string{s1}, Target: Target{Sequence: &first}}), map[string]want{
		s1: {ActionUpdate, w.a[s1][0]},
	})
	// The lease's own checkpoint: nothing to do.
	own := seq(last(w.puts[s1]))
	checkPlan(t, w.plan(ResetOptions{Shards: []string{s1}, Target: Target{Sequence: &own}}), map[string]want{
		s1: {ActionNone, own.SequenceNumber},
	})
}

func TestResetAtTimeOlderThanRetention(t *testing.T) {
	w := newLineageWorld(t)
	// Two days later, the time is past the 24h retention.
	clock := clocktest.New(time.Now().Add(48 * time.Hour))
	p := w.plan(ResetOptions{Target: Target{At: w.t1}, Clock: clock})
	th := leasecore.TRIM_HORIZON
	checkPlan(t, p, map[string]want{
		shardID(0): {ActionCreate, th}, shardID(2): {ActionCreate, th}, shardID(3): {ActionCreate, th},
		shardID(1): {ActionUpdate, th}, shardID(4): {ActionUpdate, th},
	})
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "older than the stream's retention (24h0m0s)") {
		t.Errorf("warnings %q", p.Warnings)
	}
}

// Bad input is refused while planning, before anything could be written.
func TestResetBadInput(t *testing.T) {
	w := newLineageWorld(t)
	before := w.items()
	future := time.Now().Add(time.Hour)
	other := seq(w.a[shardID(0)][0])
	bogus := seq("49000000000000000000000000000000000000000000000000000001")
	for name, opt := range map[string]ResetOptions{
		"future":                {Target: Target{At: future}},
		"unknown shard":         {Shards: []string{"shardId-000000000099"}, Target: Target{To: leasecore.TRIM_HORIZON}},
		"shard sans lease":      {Shards: []string{shardID(2)}, Target: Target{To: leasecore.TRIM_HORIZON}},
		"other shard's":         {Shards: []string{shardID(1)}, Target: Target{Sequence: &other}},
		"bogus sequence":        {Shards: []string{shardID(1)}, Target: Target{Sequence: &bogus}},
		"two targets":           {Target: Target{To: leasecore.LATEST, At: w.t1}},
		"sequence, 2 shards":    {Shards: []string{shardID(1), shardID(4)}, Target: Target{Sequence: &other}},
		"missing lease in file": {Target: Target{File: "f.csv", Positions: []Position{{LeaseKey: shardID(2), Checkpoint: seq(leasecore.TRIM_HORIZON)}}}},
		"no stream":             {Stream: "-", Target: Target{To: leasecore.LATEST}},
	} {
		t.Run(name, func(t *testing.T) {
			opt.Table = w.table
			switch opt.Stream {
			case "":
				opt.Stream = w.stream
			case "-":
				opt.Stream = ""
			}
			_, err := PlanReset(w.ctx, w.ddb, w.kin, opt)
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("err %v (%T), want an *InputError", err, err)
			}
			t.Log(err)
		})
	}
	if after := w.items(); len(after) != len(before) {
		t.Fatalf("items %d → %d", len(before), len(after))
	} else {
		for k, it := range before {
			if !EqualItems(it, after[k]) {
				t.Errorf("%s changed", k)
			}
		}
	}
}
