package doctor

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/leasecore"
)

func TestRepairLeaseItemConvertsRecoverableValues(t *testing.T) {
	base := func() map[string]types.AttributeValue {
		return leasecore.EncodeLease(leasecore.Lease{LeaseKey: "shardId-000000000001", LeaseCounter: 4,
			Checkpoint: leasecore.SequenceNumber{SequenceNumber: "123"}})
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	cases := []struct {
		name  string
		edit  func(map[string]types.AttributeValue)
		check func(leasecore.Lease) bool
		bad   string // when set: unrecoverable, and the reason mentions it
	}{
		{name: "counter as S", edit: func(m map[string]types.AttributeValue) { m["leaseCounter"] = s("7") },
			check: func(l leasecore.Lease) bool { return l.LeaseCounter == 7 }},
		{name: "checkpoint as N", edit: func(m map[string]types.AttributeValue) { m["checkpoint"] = n("98765") },
			check: func(l leasecore.Lease) bool { return l.Checkpoint.SequenceNumber == "98765" }},
		{name: "children as a list", edit: func(m map[string]types.AttributeValue) {
			m["childShardIds"] = &types.AttributeValueMemberL{Value: []types.AttributeValue{s("shardId-2"), s("shardId-3")}}
		}, check: func(l leasecore.Lease) bool { return strings.Join(l.ChildShardIDs, ",") == "shardId-2,shardId-3" }},
		{name: "owner as a one-member set", edit: func(m map[string]types.AttributeValue) {
			m["leaseOwner"] = &types.AttributeValueMemberSS{Value: []string{"w1"}}
		}, check: func(l leasecore.Lease) bool { return l.LeaseOwner == "w1" }},
		{name: "owner switches missing", edit: func(m map[string]types.AttributeValue) { delete(m, "ownerSwitchesSinceCheckpoint") },
			check: func(l leasecore.Lease) bool { return l.OwnerSwitchesSinceCheckpoint == 0 }},
		{name: "throughput as S", edit: func(m map[string]types.AttributeValue) { m["throughputKBps"] = s("1.5") },
			check: func(l leasecore.Lease) bool { return l.ThroughputKBps != nil && *l.ThroughputKBps == 1.5 }},
		{name: "two faults at once", edit: func(m map[string]types.AttributeValue) {
			m["leaseCounter"], m["checkpointSubSequenceNumber"] = s("9"), s("2")
		}, check: func(l leasecore.Lease) bool { return l.LeaseCounter == 9 && l.Checkpoint.SubSequenceNumber == 2 }},
		{name: "streamName without account and epoch", edit: func(m map[string]types.AttributeValue) {
			m["leaseKey"], m["streamName"] = s("123456789012:orders:1700000000:shardId-000000000001"), s("orders")
		}, check: func(l leasecore.Lease) bool { return l.StreamName == "123456789012:orders:1700000000" }},
		{name: "streamName of a plain key", edit: func(m map[string]types.AttributeValue) { m["streamName"] = s("orders") }, bad: "streamName"},
		{name: "counter not an integer", edit: func(m map[string]types.AttributeValue) { m["leaseCounter"] = s("seven") }, bad: "leaseCounter"},
		{name: "checkpoint missing", edit: func(m map[string]types.AttributeValue) { delete(m, "checkpoint") }, bad: "checkpoint is missing"},
		{name: "checkpoint not a sequence number", edit: func(m map[string]types.AttributeValue) { m["checkpoint"] = n("1.5") }, bad: "checkpoint"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			item := base()
			c.edit(item)
			if _, err := leasecore.DecodeLease(item); err == nil {
				t.Fatal("the test item is not malformed")
			}
			r := RepairLeaseItem("orders", item)
			if c.bad != "" {
				if r.Repaired != nil || !strings.Contains(r.Unrecoverable, c.bad) || !strings.HasPrefix(r.Command, "aws dynamodb delete-item --table-name orders ") {
					t.Fatalf("repair %+v, want unrecoverable (%s) and a delete", r, c.bad)
				}
				return
			}
			if r.Repaired == nil {
				t.Fatalf("not repaired: %s", r.Unrecoverable)
			}
			l, err := leasecore.DecodeLease(r.Repaired)
			if err != nil || !c.check(l) {
				t.Fatalf("repaired item decodes to %+v, %v", l, err)
			}
			if !strings.HasPrefix(r.Command, "aws dynamodb put-item --table-name orders --item '") || !strings.Contains(r.Command, "attribute_exists(#k)") {
				t.Errorf("command %s", r.Command)
			}
		})
	}
}
