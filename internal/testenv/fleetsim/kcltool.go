package fleetsim

import (
	"context"
	"github.com/kcltool/kcltool/internal/clock"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

// kcltoolWorker is leasecore's Coordinator, unchanged, as `kcltool run`
// starts it, plus (with Fleet.ShardSync) the table read of the runner's
// shard sync.
type kcltoolWorker struct {
	c      *leasecore.Coordinator
	cancel context.CancelFunc
}

func (f *Fleet) startKCLTool(id string, seed uint64) worker {
	cfg := f.Config
	cfg.WorkerID = id
	c, err := leasecore.NewCoordinator(f.Model, Table, cfg, f.Clock, leasecore.Options{Rand: rand.New(rand.NewPCG(seed, 7))})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	if err := c.Start(ctx); err != nil {
		panic(err)
	}
	if f.ShardSync {
		sctx, scancel := context.WithCancel(f.ctx)
		f.side[id] = scancel
		go f.shardSyncLoop(sctx, c)
	}
	return &kcltoolWorker{c: c, cancel: cancel}
}

// ShardSyncInterval is the runner's default (runner.DefaultShardSyncInterval,
// KCL's shardSyncIntervalMillis).
const ShardSyncInterval = time.Minute

// shardSyncLoop reads the table as the runner's shard sync does
// (runner/worker.go syncShards, reshard.SyncShards): every interval, the
// taker's latest scan when it is no older than the interval, else one
// strongly consistent scan. (A sync that finds a lease missing scans again
// before creating it; the simulated table has every lease, so none does.)
func (f *Fleet) shardSyncLoop(ctx context.Context, c *leasecore.Coordinator) {
	for clock.Sleep(ctx, f.Clock, ShardSyncInterval) == nil {
		if _, ok := c.LatestScan(ShardSyncInterval); ok {
			f.syncReuses.Add(1)
			continue
		}
		f.syncScans.Add(1)
		_, _ = leasecore.ScanTable(leasecore.WithCapacityOp(ctx, leasecore.OpShardSync), f.Model, Table, leasecore.ScanOptions{ConsistentRead: true,
			Sleep: func(ctx context.Context, d time.Duration) error { return clock.Sleep(ctx, f.Clock, d) }})
	}
}

func (w *kcltoolWorker) Held() int { return len(w.c.Held()) }

func (w *kcltoolWorker) Moves() int64 {
	s := w.c.Stats()
	return s.Taken + s.Stolen
}

func (w *kcltoolWorker) Lost() int64      { return w.c.Stats().Lost }
func (w *kcltoolWorker) Throttled() int64 { return w.c.Stats().Throttled }

func (w *kcltoolWorker) crash() {
	w.cancel()
	_ = w.c.Stop(context.Background(), false)
}

func sortBy[T any, K int | int64 | time.Duration](s []T, key func(T) K) {
	sort.SliceStable(s, func(i, j int) bool { return key(s[i]) < key(s[j]) })
}
