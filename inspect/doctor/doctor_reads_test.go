package doctor

import (
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// TestDoctorStuckShardWithFailingReads: the same stuck pattern as a poison
// record (lease renewed, checkpoint still, records waiting), but the
// worker's own metric says its GetRecords calls fail: doctor names Kinesis
// as the cause, not the handler.
func TestDoctorStuckShardWithFailingReads(t *testing.T) {
	r := newRig(t, time.Second, 3*time.Second).withStream(2).withCloudWatch()
	seqs := r.put(3)
	r.clock = clocktest.New(time.Now())
	r.create(leasecore.Lease{LeaseKey: shard(0), LeaseOwner: "w1", LeaseCounter: 3,
		Checkpoint: leasecore.SequenceNumber{SequenceNumber: seqs[0]}})
	at := r.clock.Now().Add(-time.Minute)
	// kcltool run publishes 0 for each failed GetRecords, 1 for each success.
	success := map[string]string{"Operation": "ProcessTask", "ShardId": shard(0)}
	r.cw.Add(r.table, "KinesisDataFetcher.getRecords.Success", success, at, 0)
	r.cw.Add(r.table, "KinesisDataFetcher.getRecords.Success", success, at.Add(-time.Minute), 0.1)
	rep := r.run(func(i int) {
		if i > 0 {
			r.renewAll()
		}
	})
	f := want(t, rep, FindStuckShard, SeverityCritical, "1 shard stuck: Kinesis reads failing", shard(0))
	if !strings.Contains(f.Cause, "GetRecords calls on these shards fail or time out") || strings.Contains(f.Cause, "poison") {
		t.Errorf("cause %q does not name the failing reads", f.Cause)
	}
	if !strings.Contains(f.Fix, "--kinesis-timeout") {
		t.Errorf("fix %q", f.Fix)
	}
	if !strings.Contains(f.Evidence.Lines[0], "getRecords.Success averaged 0.05 (95% of its reads failed)") {
		t.Errorf("evidence %q", f.Evidence.Lines[0])
	}
}

// stuckBehindProxy is the stuck pattern (lease renewed, checkpoint still,
// records waiting) with doctor reading Kinesis through a fault proxy that
// fails shard 0's reads with fault, and no CloudWatch.
func stuckBehindProxy(t *testing.T, fault emulator.Fault, rate float64) *Report {
	r := newRig(t, time.Second, 3*time.Second).withStream(2)
	seqs := r.put(3)
	proxy := emulator.NewFaultProxy(t, emulator.KinesisEndpoint(t), fault, rate, "", 1)
	proxy.MatchShard(shard(0))
	r.kinVia = proxy.URL
	r.opt.ProbeTimeout = 2 * time.Second
	r.clock = clocktest.New(time.Now())
	r.create(leasecore.Lease{LeaseKey: shard(0), LeaseOwner: "w1", LeaseCounter: 3,
		Checkpoint: leasecore.SequenceNumber{SequenceNumber: seqs[0]}})
	rep := r.run(func(i int) {
		if i > 0 {
			r.renewAll()
		}
	})
	if rate > 0 && proxy.Injected.Load() == 0 {
		t.Fatalf("the proxy failed none of doctor's reads")
	}
	return rep
}

// Without CloudWatch, doctor probes a stuck shard itself: when its own
// GetShardIterator at the checkpoint fails, times out or is refused, it
// names Kinesis, with the error class, not the handler. Before, a probe
// that failed failed the whole run (and one never answered hung it).
func TestDoctorStuckShardKinesisFailingWithoutCloudWatch(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault emulator.Fault
		class string
		sev   Severity
	}{
		{"never answered", emulator.Hang, "timeout", SeverityWarn},
		{"throttled", emulator.Throttle, "throttled", SeverityWarn},
		{"not found", emulator.NotFound, "not found", SeverityCritical},
		// A checkpoint older than the trim horizon: kcltool run retries an
		// open shard for ever, as the KCL does; doctor says why.
		{"trimmed position", emulator.TrimmedPosition, "invalid position", SeverityCritical},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := stuckBehindProxy(t, c.fault, 1)
			f := want(t, rep, FindStuckShard, c.sev, "1 shard stuck: Kinesis calls failing or timing out ("+c.class+")", shard(0))
			if strings.Contains(f.Cause, "poison") || !strings.Contains(f.Cause, "The handler is not what holds it up") {
				t.Errorf("cause %q names the handler", f.Cause)
			}
			if line := f.Evidence.Lines[0]; !strings.Contains(line, "doctor's read at the checkpoint failed ("+c.class+"): GetShardIterator: ") {
				t.Errorf("evidence %q lacks the failed call and its class", line)
			}
			if len(f.Evidence.Workers) != 1 || f.Evidence.Workers[0] != "w1" {
				t.Errorf("workers %v", f.Evidence.Workers)
			}
			for _, other := range rep.Findings {
				if other.ID == FindStuckShard && other.Summary != f.Summary {
					t.Errorf("a second stuck-shard finding: %s", other.Summary)
				}
				if other.ID == FindOrphanLease {
					t.Errorf("the listed shard reported as an orphan: %s", other.Summary)
				}
			}
		})
	}
}

// The same stuck shard when Kinesis answers doctor's read: the handler is
// named, and the evidence says Kinesis answered.
func TestDoctorStuckShardHandlerWhenKinesisAnswers(t *testing.T) {
	rep := stuckBehindProxy(t, emulator.Hang, 0)
	f := want(t, rep, FindStuckShard, SeverityCritical, "1 shard stuck: leases renewed", shard(0))
	if strings.Contains(f.Summary, "Kinesis") || !strings.Contains(f.Cause, "poison") {
		t.Errorf("summary %q / cause %q do not name the handler", f.Summary, f.Cause)
	}
	if !strings.Contains(f.Evidence.Lines[0], "Kinesis answered doctor's read at the checkpoint") {
		t.Errorf("evidence %q", f.Evidence.Lines[0])
	}
}
