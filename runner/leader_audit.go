package runner

import (
	"context"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/kcltool/kcltool/coordination"
	"math/big"
	"sort"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

// The KCL 3.x shard sync is the leader's alone (PeriodicShardSyncManager,
// run on the worker whose DynamoDBLockBasedLeaderDecider holds the lock):
// every leasesRecoveryAuditorExecutionFrequencyMillis (2 minutes) it reads
// the whole lease table and runs a sync for a stream only when the stream
// has no lease, or when the same hole in its leases' hash ranges was seen
// in leasesRecoveryAuditorInconsistencyConfidenceThreshold (3) audits in a
// row. Followers never sync on a timer: a KCL 3.x follower reads only its
// own leases (the index), and before issue 26 every kcltool follower
// scanned the whole table at each shard sync interval for its sync, the
// read that 3.x's design removes.
const (
	// DefaultShardAuditInterval is leasesRecoveryAuditorExecutionFrequencyMillis.
	DefaultShardAuditInterval = 2 * time.Minute
	// holeConfidence is leasesRecoveryAuditorInconsistencyConfidenceThreshold.
	holeConfidence = 3
)

// shardAudit is the leader's memory between audits: per stream, the hole
// last seen and how many audits in a row saw it (HashRangeHoleTracker).
type shardAudit struct {
	holes map[string]holeSeen
}

type holeSeen struct {
	hole  string
	times int
}

// seeHole records this audit's hole for a stream ("" when none) and
// reports whether it has now been seen holeConfidence times in a row
// (HashRangeHoleTracker.hasHighConfidenceOfHoleWith; no hole clears it).
func (a *shardAudit) seeHole(stream, hole string) (sync bool, times int) {
	if a.holes == nil {
		a.holes = map[string]holeSeen{}
	}
	if hole == "" {
		delete(a.holes, stream)
		return false, 0
	}
	h := a.holes[stream]
	if h.hole == hole {
		h.times++
	} else {
		h = holeSeen{hole: hole, times: 1}
	}
	a.holes[stream] = h
	return h.times >= holeConfidence, h.times
}

// auditShards is one audit on the leader: one scan, then a sync of each
// stream the rules pick. The scan is handed to the sync, which reads the
// table again before it creates anything (reshard.SyncShards).
func (w *Worker) auditShards(ctx context.Context, a *shardAudit) error {
	ctx = leasecore.WithCapacityOp(ctx, leasecore.OpShardSync)
	res, err := leasecore.ScanTable(ctx, w.ddb, w.cfg.Table, leasecore.ScanOptions{})
	if err != nil {
		return err
	}
	byStream := map[string][]leasecore.Lease{}
	for _, l := range res.Leases {
		if s, ok := w.streamOfLease(l); ok {
			byStream[streamLabel(s)] = append(byStream[streamLabel(s)], l)
		}
	}
	w.syncs.Add(1)
	var errs []error
	for _, s := range w.streams {
		label := streamLabel(s)
		leases := byStream[label]
		var why string
		if len(leases) == 0 {
			why = "no leases"
			a.seeHole(label, "")
		} else {
			hole := hashRangeHole(leases)
			sync, times := a.seeHole(label, hole)
			if !sync {
				if hole != "" {
					w.log.Info("shard audit: hole in the leases' hash ranges; syncing when seen in 3 audits in a row", "stream", label, "hole", hole, "seen", times)
				}
				continue
			}
			why = "the same hash range hole in 3 audits in a row: " + hole
		}
		w.log.Info("shard audit: syncing the stream's shards", "stream", label, "why", why)
		if err := w.syncStream(ctx, s, &res); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// hashRangeHole is checkForHoleInHashKeyRanges: the leases not at
// SHARD_END, sorted by starting hash key, must cover 0 to 2^128-1 without
// a gap (overlaps merge). It names the first hole by the ranges around it,
// "" when there is none. Leases without a hash range are left out (the
// KCL fills them from ListShards first, and leaves out those it cannot).
func hashRangeHole(leases []leasecore.Lease) string {
	type rng struct{ start, end *big.Int }
	var rs []rng
	for _, l := range leases {
		if l.Checkpoint.IsShardEnd() || l.StartingHashKey == "" || l.EndingHashKey == "" {
			continue
		}
		hr, err := leasecore.ParseHashRange(l.StartingHashKey, l.EndingHashKey)
		if err != nil {
			continue
		}
		rs = append(rs, rng{hr.Start, hr.End})
	}
	if len(rs) == 0 {
		return "no lease with a hash range"
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].start.Cmp(rs[j].start) < 0 })
	name := func(a, b rng) string {
		return a.start.String() + ".." + a.end.String() + " / " + b.start.String() + ".." + b.end.String()
	}
	first, last := rs[0], rs[len(rs)-1]
	if first.start.Sign() != 0 || last.end.Cmp(leasecore.MaxHashKey) != 0 {
		return name(first, last)
	}
	left, leftEnd := rs[0], rs[0].end
	one := big.NewInt(1)
	for _, r := range rs[1:] {
		diff := new(big.Int).Sub(r.start, leftEnd)
		switch {
		case diff.Sign() <= 0: // overlap: merge
			if r.end.Cmp(leftEnd) > 0 {
				leftEnd = r.end
			}
		case diff.Cmp(one) != 0:
			return name(left, r)
		default:
			left, leftEnd = r, r.end
		}
	}
	return ""
}

// syncInterval is how long the sync loop waits: the audit's frequency in
// KCL 3.x mode, the shard sync interval otherwise.
func (w *Worker) syncInterval() time.Duration {
	if w.currentMode().Assignment == leasecore.AssignByLeader {
		if d := w.cfg.KCL3.ShardAuditInterval; d > 0 {
			return d
		}
		return DefaultShardAuditInterval
	}
	return w.cfg.ShardSyncInterval
}

// initialSync is the sync at start. In KCL 3.x mode a worker syncs only
// when the lease table holds no lease yet (Scheduler.initialize:
// shouldInitiateLeaseSync is true only for an empty table); otherwise the
// leader's audit finds what is missing. The KCL also asks for the lock
// there; kcltool lets any starting worker fill an empty table, whose
// lease creation is conditional and so safe to race, since no leader may
// be elected yet when the first workers start.
func (w *Worker) initialSync(ctx context.Context, mode coordination.State) error {
	if mode.Assignment == leasecore.AssignByLeader {
		has, err := w.tableHasLeases(ctx)
		if err != nil {
			return err
		}
		if has {
			w.log.Debug("KCL 3.x: the lease table has leases; the leader's audit syncs shards")
			return nil
		}
	}
	return w.syncShards(ctx)
}

// tableHasLeases reads one small page of the lease table (isLeaseTableEmpty
// reads one item; a 3.x table may also hold the lock and the Migration3.0
// item, so a few more). A page of only other items with more to read is
// taken as holding leases: the audit catches a wrong guess.
func (w *Worker) tableHasLeases(ctx context.Context) (bool, error) {
	out, err := w.ddb.Scan(leasecore.WithCapacityOp(ctx, leasecore.OpShardSync), &dynamodb.ScanInput{
		TableName: aws.String(w.cfg.Table), Limit: aws.Int32(10),
	})
	if err != nil {
		return false, err
	}
	for _, item := range out.Items {
		if _, err := leasecore.DecodeLease(item); err == nil {
			return true, nil
		}
	}
	return len(out.LastEvaluatedKey) > 0, nil
}
