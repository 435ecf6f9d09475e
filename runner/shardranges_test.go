package runner

import (
	"context"
	"github.com/kcltool/kcltool/internal/clock"
	"math/big"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// listCounter counts the ListShards calls it passes to kinesis-local.
type listCounter struct {
	KinesisAPI
	lists atomic.Int64
}

func (c *listCounter) ListShards(ctx context.Context, in *kinesis.ListShardsInput, opts ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error) {
	c.lists.Add(1)
	return c.KinesisAPI.ListShards(ctx, in, opts...)
}

// The shard's range comes from the kept listing without a call; a shard
// the listing lacks makes one listing, unless the listing was made after
// the reading began (then the shard is not there to find, and the reading
// goes unfiltered); a listing that fails is an error.
func TestShardRangeListsAgainOnlyForAShardNewerThanTheListing(t *testing.T) {
	s := newStack(t, 1)
	kin := &listCounter{KinesisAPI: s.kin}
	w := &Worker{kin: kin, clock: clock.RealClock(), table: reshard.Table{Retry: reshard.Retry{MaxRetries: 1}}}
	stream := reshard.Stream{Name: s.stream}
	run := func(shardID string, since time.Time) (leasecore.HashRange, bool, error) {
		r := &shardRun{w: w, stream: stream, shardID: shardID, ctx: context.Background()}
		return r.shardRange(since)
	}
	shards, err := reshard.ListShards(context.Background(), s.kin, stream, reshard.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := reshard.NewGraph(shards)
	if err != nil {
		t.Fatal(err)
	}
	w.listings.store(stream, time.Now(), g)

	const parent = "shardId-000000000000"
	hr, found, err := run(parent, time.Now())
	if err != nil || !found || hr.Start.Sign() != 0 || hr.End.Cmp(leasecore.MaxHashKey) != 0 || kin.lists.Load() != 0 {
		t.Fatalf("parent: %v found=%v err=%v after %d listings; want the whole key space from the kept listing", hr, found, err, kin.lists.Load())
	}

	half := new(big.Int).Lsh(big.NewInt(1), 127)
	emulator.SplitShard(t, s.kin, s.stream, parent, half)
	began := time.Now()
	hr, found, err = run("shardId-000000000002", began)
	if err != nil || !found || hr.Start.Cmp(half) != 0 || kin.lists.Load() != 1 {
		t.Fatalf("new child: %v found=%v err=%v after %d listings; want %s.. after one listing", hr, found, err, kin.lists.Load(), half)
	}
	if _, found, _ = run("shardId-000000000001", began); !found || kin.lists.Load() != 1 {
		t.Fatalf("other child: found=%v after %d listings; want it from the new listing", found, kin.lists.Load())
	}

	if _, found, err = run("shardId-000000000099", began); err != nil || found || kin.lists.Load() != 1 {
		t.Fatalf("unknown shard, listing newer than the reading: found=%v err=%v after %d listings; want not found, no listing", found, err, kin.lists.Load())
	}
	if _, found, err = run("shardId-000000000099", time.Now()); err != nil || found || kin.lists.Load() != 2 {
		t.Fatalf("unknown shard, reading newer than the listing: found=%v err=%v after %d listings; want not found after one more listing", found, err, kin.lists.Load())
	}

	gone := reshard.Stream{Name: s.stream + "-missing"}
	r := &shardRun{w: w, stream: gone, shardID: parent, ctx: context.Background()}
	if _, _, err := r.shardRange(time.Now()); err == nil {
		t.Fatal("a failed listing gave no error")
	}
}
