package runner

import (
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/reshard"
)

// errNoChildrenYet: the listing does not name a child of a shard that ended.
var errNoChildrenYet = errors.New("the shard listing names no child shard of it yet")

// childWarnEvery spaces the warnings of a shard end waiting for its
// children: the first attempt warns, then every this many.
const childWarnEvery = 10

// awaitChildren finds the children of a shard whose last page came without
// ChildShards, trying until they are known. SHARD_END written without them
// would leave the children without leases (OnShardEnd creates them), and
// shard sync only creates leases for shards whose ancestors it can see, so
// their data could expire unread. The KCL retries such a page the same way
// (DataRetrievalUtil.isValidResult); the listing is a second source.
func (r *shardRun) awaitChildren() ([]types.ChildShard, error) {
	for attempt := 1; ; attempt++ {
		children, err := r.childrenFromListing()
		if err == nil && len(children) > 0 {
			if attempt > 1 {
				r.log.Info("child shards found in the shard listing; finishing the shard", "attempts", attempt)
			}
			return children, nil
		}
		if err == nil {
			err = errNoChildrenYet
		}
		if attempt == 1 || attempt%childWarnEvery == 0 {
			r.log.Warn("shard ended, but its child shards are not known; SHARD_END waits until they are", "attempt", attempt, "err", err)
		}
		if err := r.sleep(min(r.w.cfg.ParentPollInterval, fetchBackoff(attempt)+time.Second)); err != nil {
			return nil, err
		}
	}
}

// childrenFromListing finds a shard's children in the shard listing: the
// shards that name it as a parent, whether or not it is still listed itself
// (a shard past the retention period is not).
func (r *shardRun) childrenFromListing() ([]types.ChildShard, error) {
	shards, err := reshard.ListShards(r.ctx, r.w.kin, r.w.cfg.Stream, reshard.ListOptions{Retry: r.w.table.Retry})
	if err != nil {
		return nil, err
	}
	g, err := reshard.NewGraph(shards)
	if err != nil {
		return nil, fmt.Errorf("the shard listing is unusable: %w", err)
	}
	return childrenOf(g, r.shardID), nil
}

func childrenOf(g *reshard.Graph, shardID string) []types.ChildShard {
	var out []types.ChildShard
	for _, n := range g.Nodes() {
		parents := n.ParentShardIDs()
		for _, p := range parents {
			if p != shardID {
				continue
			}
			out = append(out, types.ChildShard{
				ShardId: aws.String(n.ShardID), ParentShards: parents,
				HashKeyRange: &types.HashKeyRange{StartingHashKey: aws.String(n.HashRange.Start.String()), EndingHashKey: aws.String(n.HashRange.End.String())},
			})
			break
		}
	}
	return out
}
