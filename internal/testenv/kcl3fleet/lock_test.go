package kcl3fleet

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// waitFor polls cond every 10 ms for up to 20 s (a bound for a loaded
// machine, not a speed assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLockHeartbeatStallRelease checks the lock client's writes: one
// holder at a time; each heartbeat replaces recordVersionNumber (and only
// with the version and owner the holder knows); Stall keeps the item and
// its version unchanged and nobody takes it over (#1803); Release deletes
// it and the lock can be taken again.
func TestLockHeartbeatStallRelease(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []Kind{NewApp, Pending} {
		t.Run(kind.String(), func(t *testing.T) {
			f := Setup(t, emulator.DynamoDB(t), Layout{Kind: kind})
			a := f.NewLeader(LeaderConfig{WorkerID: "leader-a", HeartbeatPeriod: 30 * time.Millisecond})
			b := f.NewLeader(LeaderConfig{WorkerID: "leader-b", HeartbeatPeriod: 30 * time.Millisecond})
			defer b.Stall()
			if ok, err := a.TakeLock(ctx); err != nil || !ok {
				t.Fatalf("a.TakeLock = %v, %v", ok, err)
			}
			first, _, _ := f.ReadLock(ctx)
			if ok, err := b.TakeLock(ctx); err != nil || ok {
				t.Fatalf("b.TakeLock while a holds the lock = %v, %v; want false", ok, err)
			}

			waitFor(t, "two heartbeats", func() bool { return a.Heartbeats() >= 2 })
			a.Stall()
			stalled, ok, err := f.ReadLock(ctx)
			if err != nil || !ok {
				t.Fatalf("lock after heartbeats: %v, %v", ok, err)
			}
			if stalled.Version == first.Version {
				t.Errorf("heartbeats did not change recordVersionNumber (%s)", first.Version)
			}
			mustEqual(t, "version known to the leader", a.LockVersion(), stalled.Version)
			mustEqual(t, "owner", stalled.Owner, "leader-a")
			mustEqual(t, "leaseDuration", stalled.LeaseDuration, "120000")

			// A stalled leader: the item stays, its version never moves.
			beats := a.Heartbeats()
			time.Sleep(10 * 30 * time.Millisecond)
			later, ok, _ := f.ReadLock(ctx)
			if !ok || later.Version != stalled.Version || a.Heartbeats() != beats {
				t.Errorf("stalled lock changed: %+v -> %+v (heartbeats %d -> %d)", stalled, later, beats, a.Heartbeats())
			}
			if ok, err := b.TakeLock(ctx); err != nil || ok {
				t.Errorf("b took a stalled lock over (%v, %v); lock client 1.4.0 never does", ok, err)
			}
			if err := a.Heartbeat(ctx); err == nil {
				t.Errorf("a stalled leader sent a heartbeat")
			}
			// The heartbeat's condition: a version other than the item's fails.
			table, keyAttr := f.lockLocation()
			if _, err := sendHeartbeat(ctx, f.DDB, table, keyAttr, "leader-a", first.Version, time.Minute); !errors.Is(err, ErrConditionFailed) {
				t.Errorf("heartbeat with an old version: %v, want ErrConditionFailed", err)
			}
			if _, err := sendHeartbeat(ctx, f.DDB, table, keyAttr, "leader-b", stalled.Version, time.Minute); !errors.Is(err, ErrConditionFailed) {
				t.Errorf("heartbeat by another owner: %v, want ErrConditionFailed", err)
			}

			if err := a.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if _, ok, _ := f.ReadLock(ctx); ok {
				t.Errorf("lock still there after Release")
			}
			if ok, err := b.TakeLock(ctx); err != nil || !ok {
				t.Errorf("b.TakeLock after release = %v, %v", ok, err)
			}
			if err := releaseLock(ctx, f.DDB, table, keyAttr, "leader-a", b.LockVersion()); !errors.Is(err, ErrConditionFailed) {
				t.Errorf("release by a non-owner: %v, want ErrConditionFailed", err)
			}
		})
	}
}
