package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
)

// A fleet whose leader died holding the lock (lock client 1.4.0, KCL issue
// #1803): no lease is assigned, and the lock's version stops moving. The
// worker warns once, with the evidence and the fix, only after both have
// lasted (two assignment intervals; the lock's leaseDuration), and not
// while the leader heartbeats.
func TestKCL3WarnsWithoutLiveLeader(t *testing.T) {
	s := newKCL3Stack(t, 1, kcl3fleet.Layout{Kind: kcl3fleet.SideTables})
	leader := s.fleet.NewLeader(kcl3fleet.LeaderConfig{WorkerID: "java-leader", HeartbeatPeriod: 300 * time.Millisecond, LockLeaseDuration: 2 * time.Second})
	if ok, err := leader.TakeLock(context.Background()); err != nil || !ok {
		t.Fatalf("take the lock: %v %v", ok, err)
	}
	t.Cleanup(leader.Stall)
	cfg := s.kcl3Config(t, "kcltool-1", outFile(t))
	var buf *logBuffer
	cfg.Log, buf = recordedLogger(t, "kcltool-1")
	r := start(t, s.stack, cfg)
	const warning = "no live KCL 3.x leader"
	// Two assignment intervals (3 s each) with a heartbeating leader that
	// assigns nothing: no warning.
	time.Sleep(8 * time.Second)
	if strings.Contains(buf.String(), warning) {
		t.Fatal("warned while the leader heartbeats")
	}
	leader.Stall()
	eventually(t, 15*time.Second, "the warning", func() bool { return strings.Contains(buf.String(), warning) })
	time.Sleep(7 * time.Second)
	logs := buf.String()
	if n := strings.Count(logs, warning); n != 1 {
		t.Errorf("warned %d times in one episode, want 1", n)
	}
	for _, want := range []string{"#1803", "lockOwner=java-leader", "lockVersion=", "delete the lock item", s.fleet.LockTable()} {
		if !strings.Contains(logs, want) {
			t.Errorf("the warning lacks %q", want)
		}
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}
