package doctor

import (
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/clocktest"
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
