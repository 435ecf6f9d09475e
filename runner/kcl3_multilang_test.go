package runner

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
)

// A MultiLang child through a graceful handoff away: it gets
// shutdownRequested, as the KCL 3.x daemon sends it (ShutdownNotificationTask),
// and the checkpoint it writes then is kept: the lease goes to the new
// owner at the last record the child was given.
func TestKCL3MultiLangHandoff(t *testing.T) {
	s := newKCL3Stack(t, 1, kcl3fleet.Layout{Kind: kcl3fleet.NewApp})
	shard := s.shards[0]
	// The child checkpoints only when asked to shut down.
	// Each processRecords takes 300 ms and small pages are read ahead
	// meanwhile: none may be given to the child once the handoff is seen.
	times := filepath.Join(t.TempDir(), "times")
	cfg, su := mlConfig(t, s.stack, "kcltool-1", "MLCHILD_CHECKPOINT=shutdown", "MLCHILD_TIMES="+times, "MLCHILD_SLEEP=300ms")
	cfg.MaxRecords = 2
	cfg.App, cfg.Table, cfg.CreateTable = s.table, s.table, false
	cfg.Lease.FailoverTime = kcl3Failover
	cfg.KCL3.WorkerMetricsInterval = kcl3MetricsPeriod
	var lt *logTimes
	cfg.Log, lt, _ = timedLogger(t, "kcltool-1")
	r := start(t, s.stack, cfg)
	leader := s.leader(t)
	s.put(t, func(k string) string { return "v-" + k }, keys("a", 40)...)
	eventually(t, 30*time.Second, "the child handling records", func() bool { return len(readHandled(t, su.out)) >= 4 })
	before := s.lease(t, shard).Checkpoint

	java := s.javaWorker(t, "java-1", 0)
	leader.RequestHandoff(shard, "java-1")
	eventually(t, 20*time.Second, "java-1 processing the shard", func() bool { return len(java.Processing()) == 1 })
	seen := lt.first("graceful handoff asked by the leader")
	for _, sp := range readSpans(t, times) {
		if sp.start.After(seen) {
			t.Errorf("processRecords sent at %s, after the handoff was seen at %s", sp.start.Format(time.StampMicro), seen.Format(time.StampMicro))
		}
	}
	if n := len(readHandled(t, su.out)); n == 40 {
		t.Errorf("every record was handled before the handoff: nothing was read ahead")
	}

	var shutdowns int
	for _, e := range eventLines(t, su.events) {
		if strings.HasSuffix(e, " shutdownRequested") && strings.Contains(e, shard) {
			shutdowns++
		}
	}
	if shutdowns != 1 {
		t.Errorf("the child got shutdownRequested %d times, want 1; events:\n%s", shutdowns, strings.Join(eventLines(t, su.events), "\n"))
	}
	got := readHandled(t, su.out)
	l := s.lease(t, shard)
	if want := got[len(got)-1].SequenceNumber; l.Checkpoint.SequenceNumber != want || l.Checkpoint == before {
		t.Errorf("checkpoint after the handoff %s (before it %s), want the child's at the last record %s", l.Checkpoint.SequenceNumber, before.SequenceNumber, want)
	}
	if l.LeaseOwner != "java-1" || l.CheckpointOwner != "" {
		t.Errorf("lease after the handoff: owner %q checkpointOwner %q", l.LeaseOwner, l.CheckpointOwner)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}
