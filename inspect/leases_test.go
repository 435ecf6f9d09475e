package inspect

import (
	"testing"

	"github.com/kcltool/kcltool/leasecore"
)

// TestStateOrder checks that the first applicable state wins, in the
// documented order shard-end, handoff, waiting-on-parent, expired, owned,
// unassigned.
func TestStateOrder(t *testing.T) {
	seq := leasecore.SequenceNumber{SequenceNumber: "49590338271490256608559692538361571095921575989136588898"}
	end := leasecore.SequenceNumber{SequenceNumber: leasecore.SHARD_END}
	parent := leasecore.Lease{LeaseKey: "shardId-000000000000", Checkpoint: seq}
	zero, moved := int64(0), int64(4)
	cases := []struct {
		name    string
		lease   leasecore.Lease
		renewed *int64
		want    State
	}{
		{"shard end beats handoff", leasecore.Lease{LeaseKey: "a", Checkpoint: end, CheckpointOwner: "w1", LeaseOwner: "w2"}, nil, StateShardEnd},
		{"handoff beats waiting", leasecore.Lease{LeaseKey: "b", Checkpoint: seq, CheckpointOwner: "w1", LeaseOwner: "w2", ParentShardIDs: []string{parent.LeaseKey}}, nil, StateHandoff},
		{"waiting beats expired", leasecore.Lease{LeaseKey: "c", LeaseOwner: "w", ParentShardIDs: []string{parent.LeaseKey}}, &zero, StateWaitingOnParent},
		{"expired: owned, counter still", leasecore.Lease{LeaseKey: "d", LeaseOwner: "w"}, &zero, StateExpired},
		{"owned: counter moved", leasecore.Lease{LeaseKey: "e", LeaseOwner: "w"}, &moved, StateOwned},
		{"owned without sample", leasecore.Lease{LeaseKey: "f", LeaseOwner: "w"}, nil, StateOwned},
		{"unassigned never expires", leasecore.Lease{LeaseKey: "g"}, &zero, StateUnassigned},
		{"parent gone: not waiting", leasecore.Lease{LeaseKey: "h", ParentShardIDs: []string{"shardId-000000000099"}}, nil, StateUnassigned},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before map[string]leasecore.Lease
			if c.renewed != nil {
				prev := c.lease
				prev.LeaseCounter -= *c.renewed
				before = map[string]leasecore.Lease{c.lease.LeaseKey: prev}
			}
			rows := LeaseRows([]leasecore.Lease{parent, c.lease}, before)
			for _, r := range rows {
				if r.LeaseKey == c.lease.LeaseKey && r.State != c.want {
					t.Errorf("state %s, want %s", r.State, c.want)
				}
			}
		})
	}
}
