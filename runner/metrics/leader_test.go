package metrics

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The leadership's Prometheus families carry the leader side's figures,
// and a handoff lands in the histogram.
func TestLeaderPrometheus(t *testing.T) {
	m := New()
	m.BindLeader(func() LeaderStats {
		return LeaderStats{Leader: true, Changes: 3, Runs: 7, RunFailures: 1, Assigned: 5, HandedOff: 2, Reassigned: 2, Expired: 4}
	})
	m.HandedOver(1500*time.Millisecond, true)
	var b bytes.Buffer
	if err := m.WritePrometheus(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		`kcltool_leader_is_leader{app="",worker=""} 1`,
		`kcltool_leader_changes_total{app="",worker=""} 3`,
		`kcltool_leader_assignment_runs_total{app="",worker=""} 7`,
		`kcltool_leader_assignment_run_failures_total{app="",worker=""} 1`,
		`kcltool_leader_leases_moved_total{app="",worker="",how="assign"} 5`,
		`kcltool_leader_leases_moved_total{app="",worker="",how="handoff"} 2`,
		`kcltool_leader_leases_reassigned_total{app="",worker=""} 2`,
		`kcltool_leader_expired_leases{app="",worker=""} 4`,
		`kcltool_worker_handoff_seconds_bucket{app="",worker="",le="2.5"} 1`,
		`kcltool_worker_handoff_seconds_count{app="",worker=""} 1`,
		`kcltool_worker_handoff_timeouts_total{app="",worker=""} 1`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("missing %s", want)
		}
	}
}

// The KCL's LeaseAssignmentManager names, with the Operation dimension
// only; NumOfLeasesReassignment only when step 2 ran.
func TestAssignmentRunCloudWatch(t *testing.T) {
	p := NewCloudWatch(nil, "app", "w1", nil, nil)
	p.AssignmentRun(AssignmentRun{Leases: 10, Active: 2, Expired: 3, Success: true, Duration: 40 * time.Millisecond})
	p.AssignmentRun(AssignmentRun{Leases: 10, Active: 2, Rebalanced: true, Reassigned: 4, Success: true})
	p.ForceLeaderRelease()
	got := map[string]float64{}
	for k, s := range p.data {
		if k.op != "LeaseAssignmentManager" || k.worker != "" || k.shard != "" {
			t.Errorf("datum %+v: want Operation LeaseAssignmentManager only", k)
		}
		got[k.name] = s.sum
	}
	for name, want := range map[string]float64{"TotalLeases": 20, "NumWorkers": 4, "ExpiredLeases": 3, "NumOfLeasesReassignment": 4, "Success": 2, "Time": 40, "ForceLeaderRelease": 1, "FailedAssignmentCount": 0} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", name, v, ok, want)
		}
	}
}
