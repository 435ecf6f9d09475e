package reshard

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/kcltool/kcltool/leasecore"
)

// ShardEndAPI is what OnShardEnd calls on the lease table.
type ShardEndAPI interface {
	GetItemAPI
	PutItemAPI
	UpdateItemAPI
}

// ShardEndResult says what OnShardEnd wrote.
type ShardEndResult struct {
	Created       []leasecore.Lease // child leases this call created
	Existing      []string          // child lease keys that already existed
	ChildShardIDs []string          // written into the parent's childShardIds
}

// ErrMergeDeferred is returned (wrapped in *MergeDeferredError) when a merge
// child's two parent leases are not both present or both absent.
var ErrMergeDeferred = errors.New("merge child lease deferred")

// MergeDeferredError names the merge child whose lease creation was put off
// because only one of its parents has a lease. KCL defers it the same way:
// the missing parent's lease may be about to be created by shard sync, and a
// child created now would treat that parent as done and start early. Retry
// after the next shard sync.
type MergeDeferredError struct {
	Child           string
	Present, Absent []string // parent lease keys
}

func (e *MergeDeferredError) Error() string {
	return fmt.Sprintf("merge child %s: parent lease %s exists but %s does not; deferring its lease",
		e.Child, strings.Join(e.Present, ","), strings.Join(e.Absent, ","))
}

func (e *MergeDeferredError) Unwrap() error { return ErrMergeDeferred }

// OnShardEnd is the first half of KCL's ShutdownTask shard-end action, run by
// the holder of parent when reading reached the end of the shard (GetRecords
// returned ChildShards and no next iterator):
//
//  1. For a merge child both parent leases must exist or both be absent,
//     otherwise a *MergeDeferredError and nothing is written.
//  2. Each child without a lease gets one, always at TRIM_HORIZON whatever the
//     initial position (a child must be read from its start), with
//     parentShardId = the child's parents, its hash range, counter 0, no owner.
//  3. childShardIds is written on the parent (conditional on it existing, no
//     counter bump).
//
// The caller then writes the SHARD_END checkpoint with the leasecore
// checkpoint operation, conditional on its leaseCounter, so only the true
// holder finishes the shard. That order matters: see the package doc.
// Without children (the shard or stream is gone) it writes nothing.
func OnShardEnd(ctx context.Context, api ShardEndAPI, t Table, parent leasecore.Lease, children []types.ChildShard) (ShardEndResult, error) {
	var res ShardEndResult
	if len(children) == 0 {
		return res, nil
	}
	stream := streamOf(parent)
	for _, c := range children {
		if aws.ToString(c.ShardId) == "" || len(c.ParentShards) == 0 || c.HashKeyRange == nil {
			return res, fmt.Errorf("shard end of %s: child shard without id, parents or hash range", parent.LeaseKey)
		}
	}
	for _, c := range children {
		if len(c.ParentShards) < 2 {
			continue
		}
		var present, absent []string
		for _, p := range c.ParentShards {
			key := stream.LeaseKey(p)
			l, err := getLease(ctx, api, t, key)
			if err != nil {
				return res, fmt.Errorf("shard end of %s: %w", parent.LeaseKey, err)
			}
			if l == nil {
				absent = append(absent, key)
			} else {
				present = append(present, key)
			}
		}
		if len(present) > 0 && len(absent) > 0 {
			return res, &MergeDeferredError{Child: aws.ToString(c.ShardId), Present: present, Absent: absent}
		}
	}
	for _, c := range children {
		id := aws.ToString(c.ShardId)
		key := stream.LeaseKey(id)
		existing, err := getLease(ctx, api, t, key)
		if err != nil {
			return res, fmt.Errorf("shard end of %s: %w", parent.LeaseKey, err)
		}
		if existing == nil {
			hr, err := leasecore.ParseHashRange(aws.ToString(c.HashKeyRange.StartingHashKey), aws.ToString(c.HashKeyRange.EndingHashKey))
			if err != nil {
				return res, fmt.Errorf("shard end of %s: child %s: %w", parent.LeaseKey, id, err)
			}
			l := newLease(stream, id, leasecore.TRIM_HORIZON, append([]string(nil), c.ParentShards...), hr)
			created, err := createLease(ctx, api, t, l)
			if err != nil {
				return res, fmt.Errorf("shard end of %s: %w", parent.LeaseKey, err)
			}
			if created {
				res.Created = append(res.Created, l)
				continue
			}
		}
		res.Existing = append(res.Existing, key)
	}
	for _, c := range children {
		res.ChildShardIDs = append(res.ChildShardIDs, aws.ToString(c.ShardId))
	}
	if err := setChildShardIDs(ctx, api, t, parent.LeaseKey, res.ChildShardIDs); err != nil {
		return res, fmt.Errorf("shard end of %s: %w", parent.LeaseKey, err)
	}
	return res, nil
}

// streamOf recovers the multi-stream identifier of a lease, so that child
// leases get keys in the same format as their parent's.
func streamOf(l leasecore.Lease) Stream {
	if l.StreamName != "" {
		return Stream{ID: l.StreamName}
	}
	if id, _, ok := leasecore.ParseMultiStreamKey(l.LeaseKey); ok {
		return Stream{ID: id}
	}
	return Stream{}
}
