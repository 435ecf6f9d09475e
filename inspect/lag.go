package inspect

import (
	"context"
	"errors"
	"fmt"
	"github.com/kcltool/kcltool/internal/clock"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// StreamAPI is the part of the Kinesis client the lag view uses.
type StreamAPI interface {
	reshard.KinesisAPI
	GetShardIterator(ctx context.Context, params *kinesis.GetShardIteratorInput, optFns ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, params *kinesis.GetRecordsInput, optFns ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error)
}

// LagState is the state of one row of `checkpoint diff`.
type LagState string

// The lag states, decided in this order.
const (
	LagOrphanLease     LagState = "orphan-lease"     // lease for a shard the stream does not have
	LagDrained         LagState = "drained"          // SHARD_END
	LagBlocked         LagState = "blocked"          // child waiting on a parent not at SHARD_END
	LagClosedUndrained LagState = "closed-undrained" // closed shard, checkpoint not SHARD_END
	LagMissingLease    LagState = "missing-lease"    // data nobody consumes
	LagNotStarted      LagState = "not-started"      // sentinel checkpoint, no reads yet
	LagBehind          LagState = "behind"
	LagAtTip           LagState = "at-tip"
)

// LagStates lists every state, for --fail-on validation and summaries.
var LagStates = []LagState{LagAtTip, LagBehind, LagNotStarted, LagDrained, LagClosedUndrained, LagBlocked, LagMissingLease, LagOrphanLease}

// LagRow is one shard or lease of `checkpoint diff`.
type LagRow struct {
	Stream  string // stream name
	ShardID string
	// Lease is nil for a shard without a lease.
	Lease *leasecore.Lease
	// Shard is nil for a lease whose shard the stream does not have.
	Shard *reshard.Node
	State LagState
	// MillisBehindLatest is measured for open shards with a numeric
	// checkpoint; nil where not measured.
	MillisBehindLatest *int64
	BlockedBy          []reshard.Blocker
	// Note explains orphans and missing leases in a few words.
	Note string
	// ProbeErr is why the probe of this row failed ("GetShardIterator: …"
	// or "GetRecords: …"), kept with LagOptions.KeepProbeErrors; the row
	// is then unmeasured.
	ProbeErr error
}

// Lag is the result of CheckpointDiff.
type Lag struct {
	Table string
	Rows  []LagRow
	// Reads counts the GetRecords calls made; at most one per shard.
	Reads     int
	Malformed []error
}

// LagOptions tunes CheckpointDiff.
type LagOptions struct {
	// Stream is the stream of a single-stream lease table, or a filter on
	// the streams of a multi-stream table.
	Stream string
	// Concurrency bounds the shards probed at once; 0 chooses it from the
	// number of shards to read (ProbeConcurrency).
	Concurrency int
	// Retry applies to ListShards.
	Retry reshard.Retry
	// Clock ages the first unread record; the real clock when nil.
	Clock clock.Clock
	// Progress, when set, hears of each shard probed: done of total. It may
	// be called from several goroutines at once.
	Progress func(done, total int)
	// ProbeTimeout bounds each shard's probe (its GetShardIterator and
	// GetRecords together); none when 0.
	ProbeTimeout time.Duration
	// KeepProbeErrors keeps a shard's failed probe on its row (ProbeErr)
	// instead of failing the whole diff, for callers that diagnose it.
	KeepProbeErrors bool
}

// Probe concurrency: with Concurrency 0 (the default, --concurrency auto)
// ProbeConcurrency chooses it from the number of shards to read. A probe is
// two calls (GetShardIterator, GetRecords), about 40 ms at a region's 20 ms
// round trip, so one lane per ShardsPerProbeLane shards keeps the round
// trips of the whole walk near a second at any stream size, up to the cap.
// Small streams keep the floor: against a busy server more requests in
// flight only make every call dearer (make bench, docs/benchmarks.md). The
// cap bounds what one command puts in flight: Kinesis limits GetRecords per
// shard, not per stream, and each shard is read once, but a client with
// hundreds of calls open competes with the consumers for the connection
// pool and the network, and beyond it the walk is bound by the server.
const (
	MinProbeConcurrency = 8
	MaxProbeConcurrency = 64
	ShardsPerProbeLane  = 25
)

// ProbeConcurrency is the number of shards probed at once for a walk of n
// shards: one per ShardsPerProbeLane, between MinProbeConcurrency and
// MaxProbeConcurrency, and never more than n.
func ProbeConcurrency(n int) int {
	c := min(max((n+ShardsPerProbeLane-1)/ShardsPerProbeLane, MinProbeConcurrency), MaxProbeConcurrency)
	return max(min(c, n), 1)
}

// CheckpointDiff joins the stream's shards with the lease table: one row per
// shard or lease, with how far each open shard's checkpoint is behind the
// tip. It reads each shard at most once (one iterator, one GetRecords with
// Limit 1), a bounded number at a time.
func CheckpointDiff(ctx context.Context, kin StreamAPI, ddb TableAPI, table string, opt LagOptions) (*Lag, error) {
	if _, err := ddb.DescribeTable(ctx, describe(table)); err != nil {
		return nil, err
	}
	scan, err := leasecore.ScanTable(ctx, ddb, table, leasecore.ScanOptions{})
	if err != nil {
		return nil, fmt.Errorf("scan lease table %q: %w", table, err)
	}
	return DiffLeases(ctx, kin, table, scan, opt)
}

// DiffLeases is CheckpointDiff over a table read already: doctor joins its
// last sample with the stream instead of scanning once more.
func DiffLeases(ctx context.Context, kin StreamAPI, table string, scan leasecore.ScanResult, opt LagOptions) (*Lag, error) {
	streams, err := StreamsOf(scan.Leases, opt.Stream)
	if err != nil {
		return nil, err
	}
	res := &Lag{Table: table, Malformed: scan.Malformed}
	byKey := reshard.ByKey(scan.Leases)
	for _, s := range streams {
		shards, err := reshard.ListShards(ctx, kin, reshard.Stream{Name: s.Name}, reshard.ListOptions{Retry: opt.Retry})
		if err != nil {
			return nil, fmt.Errorf("list shards of stream %q: %w", s.Name, err)
		}
		g, err := reshard.NewGraph(shards)
		if err != nil {
			return nil, fmt.Errorf("stream %q: %w", s.Name, err)
		}
		res.Rows = append(res.Rows, streamRows(g, s, reshard.LeasesOfStream(scan.Leases, s), byKey)...)
	}
	if opt.Clock == nil {
		opt.Clock = clock.RealClock()
	}
	n, err := probeLag(ctx, kin, res.Rows, opt)
	res.Reads = n
	if err != nil {
		return nil, err
	}
	for i := range res.Rows {
		finishState(&res.Rows[i])
	}
	return res, nil
}

// ErrStreamRequired is StreamsOf's answer for a single-stream lease table
// and no stream given: its leases do not say which stream they are of.
// Callers tell it with errors.Is (cmd asks for --stream; doctor skips its
// stream checks).
var ErrStreamRequired = errors.New("a single-stream lease table needs the stream's name: its leases do not name it")

// StreamsOf decides which streams to look at. A single-stream table needs
// the stream named (ErrStreamRequired); a multi-stream table names its
// streams in its leases.
func StreamsOf(leases []leasecore.Lease, filter string) ([]reshard.Stream, error) {
	all, err := reshard.TableStreams(leases)
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		if filter == "" {
			return nil, ErrStreamRequired
		}
		return []reshard.Stream{{Name: filter}}, nil
	}
	var out []reshard.Stream
	for _, s := range all {
		if filter == "" || filter == s.Name || filter == s.ID {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no leases of stream %q in this multi-stream lease table", filter)
	}
	return out, nil
}

// streamRows builds one row per shard (in lineage order) and one per lease
// whose shard the stream lacks, with every state that needs no read.
func streamRows(g *reshard.Graph, s reshard.Stream, leases []leasecore.Lease, byKey map[string]leasecore.Lease) []LagRow {
	leased := map[string]*leasecore.Lease{}
	for i := range leases {
		leased[leases[i].ShardIDOrKey()] = &leases[i]
	}
	var rows []LagRow
	for _, id := range g.TopoOrder() {
		node, _ := g.Node(id)
		row := LagRow{Stream: s.Name, ShardID: id, Shard: &node, Lease: leased[id]}
		if row.Lease == nil {
			row.State, row.Note = stateWithoutLease(g, node, leased)
		} else {
			row.BlockedBy = reshard.BlockingParents(*row.Lease, byKey)
			row.State = stateWithLease(row)
		}
		rows = append(rows, row)
	}
	for _, o := range reshard.FindOrphans(g, s, leases) {
		l := leased[o.ShardID]
		rows = append(rows, LagRow{Stream: s.Name, ShardID: o.ShardID, Lease: l, State: LagOrphanLease,
			Note: "the stream has no such shard: trimmed past retention, or a deleted or recreated stream"})
	}
	return rows
}

// stateWithoutLease: a closed shard whose descendants are leased was
// drained and its lease cleaned up after SHARD_END; any other shard without a
// lease holds data no worker will read.
func stateWithoutLease(g *reshard.Graph, n reshard.Node, leased map[string]*leasecore.Lease) (LagState, string) {
	if !n.Open {
		for _, d := range g.Descendants(n.ShardID) {
			if leased[d] != nil {
				return LagDrained, "lease cleaned up after SHARD_END"
			}
		}
	}
	return LagMissingLease, "no lease: no worker reads this shard"
}

func stateWithLease(r LagRow) LagState {
	cp := r.Lease.Checkpoint
	switch {
	case cp.IsShardEnd():
		return LagDrained
	case len(r.BlockedBy) > 0:
		return LagBlocked
	case !r.Shard.Open:
		return LagClosedUndrained
	case leasecore.IsSentinel(cp.SequenceNumber):
		return LagNotStarted
	case startsAfter(r.Shard.StartingSequenceNumber, cp):
		// A checkpoint older than the shard itself was written for another
		// shard of the same id: the stream was deleted and recreated.
		return LagOrphanLease
	}
	return "" // decided by the probe
}

func startsAfter(start string, cp leasecore.SequenceNumber) bool {
	if start == "" {
		return false
	}
	return leasecore.Compare(leasecore.SequenceNumber{SequenceNumber: start}, leasecore.SequenceNumber{SequenceNumber: cp.SequenceNumber}) > 0
}

// probeLag measures millisBehindLatest for the rows still undecided: one
// GetShardIterator after the checkpoint and one GetRecords with Limit 1 per
// shard, on opt.Concurrency lanes (chosen from the number of shards when
// 0), each taking the next shard when it is done.
func probeLag(ctx context.Context, kin StreamAPI, rows []LagRow, opt LagOptions) (int, error) {
	var todo []*LagRow
	for i := range rows {
		if rows[i].State == "" {
			todo = append(todo, &rows[i])
		}
	}
	conc := opt.Concurrency
	if conc <= 0 {
		conc = ProbeConcurrency(len(todo))
	}
	var (
		wg    sync.WaitGroup
		next  = make(chan *LagRow)
		mu    sync.Mutex
		reads int
		errs  []error
		done  int
	)
	for range min(conc, len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range next {
				behind, read, err := ProbeWithin(ctx, kin, r, opt.Clock, opt.ProbeTimeout)
				mu.Lock()
				if read {
					reads++
				}
				if err != nil && opt.KeepProbeErrors {
					r.ProbeErr = ProbeError(read, err)
				}
				switch {
				case err != nil && IsStaleCheckpoint(err):
					r.State, r.Note = LagOrphanLease, "checkpoint is not in this shard: the stream was recreated"
				case err != nil && (!opt.KeepProbeErrors || ctx.Err() != nil):
					errs = append(errs, fmt.Errorf("read shard %s of %s: %w", r.ShardID, r.Stream, err))
				case err != nil:
				default:
					r.MillisBehindLatest = &behind
				}
				if done++; opt.Progress != nil {
					opt.Progress(done, len(todo))
				}
				mu.Unlock()
			}
		}()
	}
	for _, r := range todo {
		next <- r
	}
	close(next)
	wg.Wait()
	return reads, errors.Join(errs...)
}

// Probe measures how far the checkpoint is behind the tip: the age of the
// first record after it, or Kinesis's MillisBehindLatest when that is larger.
// Any unread record makes the shard at least 1 ms behind: MillisBehindLatest
// alone reads 0 when the unread records arrived within the same moment.
func Probe(ctx context.Context, kin StreamAPI, r *LagRow, clk clock.Clock) (behind int64, read bool, err error) {
	in := &kinesis.GetShardIteratorInput{
		StreamName: aws.String(r.Stream), ShardId: aws.String(r.ShardID),
		ShardIteratorType:      types.ShardIteratorTypeAfterSequenceNumber,
		StartingSequenceNumber: aws.String(r.Lease.Checkpoint.SequenceNumber),
	}
	if r.Lease.Checkpoint.SequenceNumber == leasecore.TRIM_HORIZON {
		// A worker that never checkpointed starts at the oldest record.
		in.ShardIteratorType, in.StartingSequenceNumber = types.ShardIteratorTypeTrimHorizon, nil
	}
	it, err := kin.GetShardIterator(ctx, in)
	if err != nil {
		return 0, false, err
	}
	out, err := kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it.ShardIterator, Limit: aws.Int32(1)})
	if err != nil {
		return 0, true, err
	}
	behind = aws.ToInt64(out.MillisBehindLatest)
	if len(out.Records) > 0 {
		age := int64(0)
		if ts := out.Records[0].ApproximateArrivalTimestamp; ts != nil {
			age = clk.Now().Sub(*ts).Milliseconds()
		}
		behind = max(behind, age, 1)
	}
	return behind, true, nil
}

// ProbeWithin is Probe under a deadline of timeout (none when 0).
func ProbeWithin(ctx context.Context, kin StreamAPI, r *LagRow, clk clock.Clock, timeout time.Duration) (behind int64, read bool, err error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return Probe(ctx, kin, r, clk)
}

// ProbeError names the call of a failed probe: read is Probe's (the
// iterator was had, GetRecords failed).
func ProbeError(read bool, err error) error {
	if read {
		return fmt.Errorf("GetRecords: %w", err)
	}
	return fmt.Errorf("GetShardIterator: %w", err)
}

// IsStaleCheckpoint recognises a sequence number the shard does not know.
func IsStaleCheckpoint(err error) bool {
	return awserr.BadSequence(err) || awserr.NotFound(err)
}

func finishState(r *LagRow) {
	if r.State != "" || r.MillisBehindLatest == nil {
		return
	}
	if *r.MillisBehindLatest > 0 {
		r.State = LagBehind
	} else {
		r.State = LagAtTip
	}
}

// Counts returns the number of rows per state.
func (l *Lag) Counts() map[LagState]int {
	m := map[LagState]int{}
	for _, r := range l.Rows {
		m[r.State]++
	}
	return m
}
