package doctor

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// put writes n records to the stream's first shard and returns their
// sequence numbers.
func (r *rig) put(n int) []string {
	r.t.Helper()
	var seqs []string
	for i := range n {
		out, err := r.kin.PutRecord(context.Background(), &kinesis.PutRecordInput{StreamName: aws.String(r.stream),
			PartitionKey: aws.String("k"), ExplicitHashKey: aws.String("0"), Data: fmt.Appendf(nil, "r%d", i)})
		if err != nil {
			r.t.Fatal(err)
		}
		seqs = append(seqs, aws.ToString(out.SequenceNumber))
	}
	return seqs
}

// splitFirst splits shard 0 in two: children 1 and 2.
func (r *rig) splitFirst() {
	r.t.Helper()
	emulator.SplitShard(r.t, r.kin, r.stream, shard(0), new(big.Int).Lsh(big.NewInt(1), 127))
}

// TestDoctorStuckShard is the poison record: the lease is renewed all
// window, the checkpoint never moves, and records wait after it. A record
// older than the window is critical; a younger one only a warning.
func TestDoctorStuckShard(t *testing.T) {
	for _, c := range []struct {
		name       string
		clockStart func() time.Time // when the doctor's clock starts, after the records are written
		sev        Severity
	}{
		{"record older than the window", func() time.Time { return time.Now() }, SeverityCritical},
		{"record younger than the window", func() time.Time { return time.Now().Add(-3 * time.Second) }, SeverityWarn},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, time.Second, 3*time.Second).withStream(1)
			seqs := r.put(3)
			r.clock = clocktest.New(c.clockStart())
			r.create(leasecore.Lease{LeaseKey: shard(0), LeaseOwner: "w1", LeaseCounter: 3, OwnerSwitchesSinceCheckpoint: 2,
				Checkpoint: leasecore.SequenceNumber{SequenceNumber: seqs[0]}})
			rep := r.run(func(i int) {
				if i > 0 {
					r.renewAll()
				}
			})
			f := want(t, rep, FindStuckShard, c.sev, "1 shard stuck", shard(0))
			line := f.Evidence.Lines[0]
			for _, w := range []string{"unchanged over 4 reads", "w1 renewed it 3 times", "2 owner switches since the last checkpoint"} {
				if !strings.Contains(line, w) {
					t.Errorf("evidence %q lacks %q", line, w)
				}
			}
			absent(t, rep, FindShardLag, FindDeadWorker)
			if rep.Cost.GetRecords != 1 || rep.Cost.ListShards < 1 {
				t.Errorf("cost %+v: want one GetRecords probe", rep.Cost)
			}
		})
	}
}

// TestDoctorStuckAtTrimHorizon: a worker that never checkpointed (the very
// first record is the poison) holds TRIM_HORIZON; the probe reads from the
// oldest record.
func TestDoctorStuckAtTrimHorizon(t *testing.T) {
	r := newRig(t, time.Second, 2*time.Second).withStream(1)
	r.put(1)
	r.clock = clocktest.New(time.Now())
	r.create(leasecore.Lease{LeaseKey: shard(0), LeaseOwner: "w1", LeaseCounter: 3})
	rep := r.run(func(i int) {
		if i > 0 {
			r.renewAll()
		}
	})
	want(t, rep, FindStuckShard, SeverityCritical, shard(0))
}

// TestDoctorIdleShardIsNotStuck: a checkpoint at the tip does not move
// because there is nothing to read.
func TestDoctorIdleShardIsNotStuck(t *testing.T) {
	r := newRig(t, time.Second, 2*time.Second).withStream(1)
	seqs := r.put(2)
	r.create(leasecore.Lease{LeaseKey: shard(0), LeaseOwner: "w1", LeaseCounter: 3, Checkpoint: leasecore.SequenceNumber{SequenceNumber: seqs[1]}})
	rep := r.run(func(i int) {
		if i > 0 {
			r.renewAll()
		}
	})
	absent(t, rep, FindStuckShard, FindShardLag, FindChecksSkipped)
	if w := rep.AtLeast(SeverityWarn); len(w) > 0 {
		t.Fatalf("warnings:\n%s", dump(rep))
	}
}

// TestDoctorBlockedChild: the parent shard was read to its end but its
// checkpoint was never set to SHARD_END (KCL #211): the children wait for
// ever, and doctor names the parent.
func TestDoctorBlockedChild(t *testing.T) {
	r := newRig(t, time.Second, 2*time.Second).withStream(1)
	seqs := r.put(2)
	r.splitFirst()
	r.create(leasecore.Lease{LeaseKey: shard(0), LeaseOwner: "w1", LeaseCounter: 5, Checkpoint: leasecore.SequenceNumber{SequenceNumber: seqs[1]}})
	for _, c := range []int{1, 2} {
		r.create(leasecore.Lease{LeaseKey: shard(c), LeaseOwner: "w1", LeaseCounter: 1, ParentShardIDs: []string{shard(0)}})
	}
	rep := r.run(func(i int) {
		if i > 0 {
			r.renewAll()
		}
	})
	f := want(t, rep, FindBlockedChild, SeverityCritical, "2 child shards waiting on 1 parent not at SHARD_END: "+shard(0))
	if !strings.Contains(f.Evidence.Lines[0], "waiting on "+shard(0)) || !strings.Contains(f.Evidence.Lines[0], "SHARD_END was never checkpointed") {
		t.Errorf("evidence %v", f.Evidence.Lines)
	}
	if !strings.Contains(f.Cause, "#211") || !strings.Contains(f.Fix, "shardEnded") {
		t.Errorf("cause %q fix %q", f.Cause, f.Fix)
	}
	absent(t, rep, FindStuckShard, FindMissingLease)
}

// TestDoctorBlockedChildWhileParentDrains is only information.
func TestDoctorBlockedChildWhileParentDrains(t *testing.T) {
	r := newRig(t, time.Second, 2*time.Second).withStream(1)
	seqs := r.put(3)
	r.splitFirst()
	r.create(leasecore.Lease{LeaseKey: shard(0), LeaseOwner: "w1", LeaseCounter: 5, Checkpoint: leasecore.SequenceNumber{SequenceNumber: seqs[0]}})
	r.create(leasecore.Lease{LeaseKey: shard(1), LeaseOwner: "w1", LeaseCounter: 1, ParentShardIDs: []string{shard(0)}})
	r.create(leasecore.Lease{LeaseKey: shard(2), LeaseOwner: "w1", LeaseCounter: 1, ParentShardIDs: []string{shard(0)}})
	rep := r.run(func(i int) {
		switch i {
		case 0:
		case 1:
			r.checkpoint(shard(0), seqs[1])
			r.renewAll()
		default:
			r.renewAll()
		}
	})
	want(t, rep, FindBlockedChild, SeverityInfo, shard(0))
}

// TestDoctorMissingLease: an open shard nobody has a lease for.
func TestDoctorMissingLease(t *testing.T) {
	r := newRig(t, time.Second, time.Second).withStream(2)
	r.create(leasecore.Lease{LeaseKey: shard(0), LeaseOwner: "w1", LeaseCounter: 1, Checkpoint: leasecore.SequenceNumber{SequenceNumber: leasecore.LATEST}})
	rep := r.run(func(i int) {
		if i > 0 {
			r.renewAll()
		}
	})
	want(t, rep, FindMissingLease, SeverityWarn, shard(1))
}
