package reshard

import (
	"context"
	"fmt"

	"github.com/kcltool/kcltool/leasecore"
)

// Blocker is a parent lease a child shard is waiting for.
type Blocker struct {
	ShardID    string // raw parent shard id
	LeaseKey   string
	Checkpoint leasecore.SequenceNumber
}

// String reads "waiting on shardId-000000000000 (checkpoint 4959…, not
// SHARD_END)", the text operator views print for an idle child.
func (b Blocker) String() string {
	return fmt.Sprintf("waiting on %s (checkpoint %s, not SHARD_END)", b.ShardID, shorten(b.Checkpoint.SequenceNumber))
}

func shorten(cp string) string {
	if len(cp) > 12 {
		return cp[:4] + "…" + cp[len(cp)-4:]
	}
	return cp
}

// ParentsDone is KCL's BlockOnParentShardTask check, made before a worker
// processes a lease: for each parentShardId it reads the parent lease (key
// rebuilt with the stream prefix in a multi-stream table). A missing parent
// lease counts as done (cleaned up after SHARD_END, or trimmed); a present
// one must be at SHARD_END. It returns the parents still blocking; none
// means the child may start. Callers poll it every
// parentShardPollIntervalMillis (10 s in KCL) while holding the child lease.
func ParentsDone(ctx context.Context, api GetItemAPI, t Table, lease leasecore.Lease) ([]Blocker, error) {
	var blocking []Blocker
	for i, key := range lease.ParentLeaseKeys() {
		parent, err := getLease(ctx, api, t, key)
		if err != nil {
			return nil, fmt.Errorf("parents of %s: %w", lease.LeaseKey, err)
		}
		if parent != nil && !parent.Checkpoint.IsShardEnd() {
			blocking = append(blocking, Blocker{ShardID: lease.ParentShardIDs[i], LeaseKey: key, Checkpoint: parent.Checkpoint})
		}
	}
	return blocking, nil
}

// BlockingParents applies the ParentsDone rule to leases already read, keyed
// by lease key (a table scan), for views that explain every idle child
// without one GetItem per parent.
func BlockingParents(lease leasecore.Lease, byKey map[string]leasecore.Lease) []Blocker {
	var blocking []Blocker
	for i, key := range lease.ParentLeaseKeys() {
		if parent, ok := byKey[key]; ok && !parent.Checkpoint.IsShardEnd() {
			blocking = append(blocking, Blocker{ShardID: lease.ParentShardIDs[i], LeaseKey: key, Checkpoint: parent.Checkpoint})
		}
	}
	return blocking
}

// ByKey indexes leases by lease key.
func ByKey(leases []leasecore.Lease) map[string]leasecore.Lease {
	m := make(map[string]leasecore.Lease, len(leases))
	for _, l := range leases {
		m[l.LeaseKey] = l
	}
	return m
}
