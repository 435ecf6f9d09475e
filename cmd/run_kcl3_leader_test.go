package cmd

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
)

// leaderOwner is the Leader lock's ownerName, "" when there is none.
func leaderOwner(t *testing.T, f *kcl3fleet.Fleet) string {
	t.Helper()
	l, ok, err := f.ReadLock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return ""
	}
	return l.Owner
}

// A fleet of kcltool processes only, on a new 3.x application with the
// default leader settings (--failover-time 2s: the lock's leaseDuration
// 4 s, an assignment run every 4 s): one leads and assigns every lease;
// kill -9 of the leader's process leaves its lock and leases behind, and
// another worker takes the lock over after its leaseDuration and assigns
// the dead worker's leases. The time is logged beside the bound
// leader-lease + 2 × assignment interval + failover (14 s); the test
// waits generously and asserts none.
func TestRunKCL3LeaderKilled(t *testing.T) {
	t.Parallel() // its own stream, tables and leader, no process-wide state; mostly waiting on lease and leader timings
	s := newE2EStack(t, 4)
	f := kcl3App(t, s, kcl3fleet.NewApp)
	out := filepath.Join(t.TempDir(), "handled.jsonl")
	env := []string{"OUT=" + out}
	ws := map[string]*worker{}
	for _, id := range []string{"A", "B", "C"} {
		ws[id] = startWorker(t, id, env, runArgs(s, id, "--worker-metrics-interval", "1s", "--exec", fleetHandler)...)
	}
	ownedBy := func(ids ...string) bool {
		o := fleetOwners(t, f)
		n := 0
		for _, id := range ids {
			n += o[id]
		}
		return n == 4
	}
	eventuallyE2E(t, 60*time.Second, "a leader assigning every lease", func() bool {
		return ws[leaderOwner(t, f)] != nil && ownedBy("A", "B", "C")
	})
	leader := leaderOwner(t, f)
	if !strings.Contains(ws[leader].logs.String(), "this worker leads the KCL 3.x fleet") {
		t.Errorf("%s holds the lock but did not log its leadership", leader)
	}
	var live []string
	for id := range ws {
		if id != leader {
			live = append(live, id)
		}
	}
	killed := time.Now()
	if err := ws[leader].cmd.Process.Kill(); err != nil { // SIGKILL: the lock and leases stay
		t.Fatal(err)
	}
	<-ws[leader].done
	if o := leaderOwner(t, f); o != leader {
		t.Fatalf("lock owner %q right after kill -9 of %s: the lock should stay until its leaseDuration", o, leader)
	}
	eventuallyE2E(t, 120*time.Second, "a new leader assigning the dead leader's leases", func() bool {
		o := leaderOwner(t, f)
		return (o == live[0] || o == live[1]) && ownedBy(live...)
	})
	t.Logf("MEASURED e2e: kill -9 of leader %s -> its leases held by live workers after %s (bound leader-lease 4s + 2 x assignment interval 4s + failover 2s = 14s)",
		leader, time.Since(killed).Round(10*time.Millisecond))
	// A graceful stop of the new leader deletes the lock.
	newLeader := leaderOwner(t, f)
	ws[newLeader].signal(t, syscall.SIGTERM)
	if code := ws[newLeader].exitCode(t, 30*time.Second); code != 0 {
		t.Errorf("%s exit %d", newLeader, code)
	}
	if o := leaderOwner(t, f); o == newLeader {
		t.Errorf("the lock is still %s's after its graceful stop", newLeader)
	}
}
