package doctor

import (
	"strings"
	"testing"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// TestDoctorExpiredShard: the marks kcltool run leaves on a parent whose
// data expired, and on its children, are reported as lost records; the
// children's marks alone (the parent lease cleaned up) still are.
func TestDoctorExpiredShard(t *testing.T) {
	for _, withParent := range []bool{true, false} {
		t.Run(map[bool]string{true: "parent lease present", false: "parent lease cleaned up"}[withParent], func(t *testing.T) {
			r := newRig(t, time.Second, 2*time.Second)
			if withParent {
				r.create(leasecore.Lease{LeaseKey: shard(0), Checkpoint: leasecore.SequenceNumber{SequenceNumber: leasecore.SHARD_END},
					ChildShardIDs: []string{shard(1), shard(2)},
					Extra: map[string]ddbtypes.AttributeValue{reshard.AttrExpired: &ddbtypes.AttributeValueMemberS{
						Value: "2026-12-01T23:00:00Z GetShardIterator: ResourceNotFoundException: Shard shardId-000000000000 does not exist"}}})
			}
			for _, c := range []int{1, 2} {
				r.create(leasecore.Lease{LeaseKey: shard(c), LeaseOwner: "w1", LeaseCounter: 5, ParentShardIDs: []string{shard(0)},
					Extra: map[string]ddbtypes.AttributeValue{reshard.AttrParentExpired: &ddbtypes.AttributeValueMemberS{Value: shard(0) + " 2026-12-01T23:00:00Z"}}})
			}
			rep := r.run(func(int) { r.renewAll() })
			f := want(t, rep, FindExpiredShard, SeverityWarn, "1 shard expired", shard(0))
			if len(f.Evidence.Lines) != 1 || !contains(f.Evidence.Shards, shard(0)) {
				t.Fatalf("evidence %+v", f.Evidence)
			}
			line := f.Evidence.Lines[0]
			for _, s := range []string{shard(1), shard(2), "TRIM_HORIZON"} {
				if !containsStr(line, s) {
					t.Errorf("evidence line %q lacks %q", line, s)
				}
			}
			if withParent && !containsStr(line, "ResourceNotFoundException") {
				t.Errorf("evidence line %q lacks the error", line)
			}
		})
	}
	t.Run("no marks", func(t *testing.T) {
		r := newRig(t, time.Second, 2*time.Second)
		r.fleet("w1", "w1")
		absent(t, r.run(func(int) { r.renewAll() }), FindExpiredShard)
	})
}

func containsStr(s, sub string) bool { return strings.Contains(s, sub) }

// An expired shard without children: its lease is never cleaned up, so the
// finding gives the command that deletes it.
func TestDoctorExpiredShardWithoutChildren(t *testing.T) {
	r := newRig(t, time.Second, 2*time.Second)
	r.create(leasecore.Lease{LeaseKey: shard(0), Checkpoint: leasecore.SequenceNumber{SequenceNumber: leasecore.SHARD_END},
		Extra: map[string]ddbtypes.AttributeValue{reshard.AttrExpired: &ddbtypes.AttributeValueMemberS{Value: "2026-12-01T23:00:00Z GetRecords: ResourceNotFoundException"}}})
	f := want(t, r.run(func(int) {}), FindExpiredShard, SeverityWarn, shard(0))
	if line := f.Evidence.Lines[0]; !strings.Contains(line, "aws dynamodb delete-item --table-name "+r.table) || !strings.Contains(line, shard(0)) {
		t.Fatalf("evidence %q lacks the delete command", line)
	}
}

// TestDoctorTrimmedShard: the marks kcltool run leaves on a closed shard
// whose checkpoint was older than its trim horizon (read again from
// TRIM_HORIZON), and on its children, are reported under expired-shard as
// the records before the trim horizon being lost, not as the shard
// expiring; the children's marks alone still are, and no delete command is
// given for a parent that has children.
func TestDoctorTrimmedShard(t *testing.T) {
	const seq = "49680755103120446042339546623884282621398483941841698818"
	for _, withParent := range []bool{true, false} {
		t.Run(map[bool]string{true: "parent lease present", false: "parent lease cleaned up"}[withParent], func(t *testing.T) {
			r := newRig(t, time.Second, 2*time.Second)
			if withParent {
				r.create(leasecore.Lease{LeaseKey: shard(0), Checkpoint: leasecore.SequenceNumber{SequenceNumber: leasecore.SHARD_END},
					ChildShardIDs: []string{shard(1), shard(2)},
					Extra: map[string]ddbtypes.AttributeValue{reshard.AttrTrimmed: &ddbtypes.AttributeValueMemberS{
						Value: "2026-12-01T23:00:00Z " + seq + " GetShardIterator: api error InvalidArgumentException: StartingSequenceNumber " + seq + " is invalid"}}})
			}
			for _, c := range []int{1, 2} {
				r.create(leasecore.Lease{LeaseKey: shard(c), LeaseOwner: "w1", LeaseCounter: 5, ParentShardIDs: []string{shard(0)},
					Extra: map[string]ddbtypes.AttributeValue{reshard.AttrParentTrimmed: &ddbtypes.AttributeValueMemberS{Value: shard(0) + " 2026-12-01T23:00:00Z"}}})
			}
			f := want(t, r.run(func(int) { r.renewAll() }), FindExpiredShard, SeverityWarn, "checkpoint was older than its trim horizon", "records before the trim horizon were lost", shard(0))
			if strings.Contains(f.Summary, "expired") {
				t.Errorf("summary %q calls it expired", f.Summary)
			}
			if len(f.Evidence.Lines) != 1 || !contains(f.Evidence.Shards, shard(0)) || f.Evidence.Values["trimmedShards"] != 1 || f.Evidence.Values["shards"] != 1 {
				t.Fatalf("evidence %+v", f.Evidence)
			}
			line := f.Evidence.Lines[0]
			for _, s := range []string{shard(1), shard(2), "records before the trim horizon were lost", "read again from TRIM_HORIZON"} {
				if !containsStr(line, s) {
					t.Errorf("evidence line %q lacks %q", line, s)
				}
			}
			if withParent && (!containsStr(line, "refused checkpoint "+seq) || !containsStr(line, "InvalidArgumentException")) {
				t.Errorf("evidence line %q lacks the checkpoint or the error", line)
			}
			if containsStr(line, "delete-item") {
				t.Errorf("evidence line %q gives a delete command for a parent with children", line)
			}
		})
	}
}
