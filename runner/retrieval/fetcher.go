package retrieval

import (
	"context"
	"github.com/kcltool/kcltool/internal/clock"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/internal/backoff"
	"github.com/kcltool/kcltool/kinesisrec"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
	"github.com/kcltool/kcltool/runner/metrics"
)

// Fetcher reads one shard with GetRecords. It remembers the last sequence
// number it received, so that a lost or expired iterator resumes right after
// it (AFTER_SEQUENCE_NUMBER, as KCL reconnects): everything received has been
// handed on and will be handled or dropped with the lease.
type Fetcher struct {
	kin        GetRecordsAPI
	stream     reshard.Stream
	shardID    string
	maxRecords int32
	// start is the lease's checkpoint the reader begins at; atTimestamp is
	// the configured instant an AT_TIMESTAMP checkpoint stands for.
	start       leasecore.SequenceNumber
	atTimestamp time.Time
	hashRange   leasecore.HashRange
	clock       clock.Clock
	log         *slog.Logger
	stats       *metrics.ShardStats
	// FromTrimHorizon starts the reading at TRIM_HORIZON instead of at
	// start, which Kinesis refused as older than the trim horizon; records
	// at or below start are still dropped (runner/shardend.go, trimmedPosition).
	FromTrimHorizon bool
	// encoded: the records' data may be kept as base64 text (fastPage), for
	// the MultiLang protocol, whose records carry it so.
	encoded bool

	iterator  *string
	lastSeq   string    // last raw sequence number received
	lastCall  time.Time // of the last GetRecords, for the per-shard call limit
	filtering bool      // still dropping records at or below start
	failures  int       // consecutive failed calls
	// failingSince is when the current run of failed calls began, lastWarn
	// when the shard's reads were last logged at warn (kept across
	// recoveries: the rate limit is per shard, not per run of failures),
	// unlogged how many calls failed since that line, and warned whether
	// the current run has been logged at warn (its recovery is then logged).
	failingSince, lastWarn time.Time
	unlogged               int
	warned                 bool
}

// MaxGetRecordsPerSecond is Kinesis's per-shard read call limit; the
// reader never exceeds it, whatever the pacing says.
const MaxGetRecordsPerSecond = 5

// minCallSpacing keeps a reader under Kinesis's per-shard limit of five
// GetRecords calls per second, whatever the pacing asks for.
const minCallSpacing = time.Second / MaxGetRecordsPerSecond

// Backoff of failing Kinesis calls: exponential from fetchBackoffBase, full
// jitter, capped; a shard that keeps failing retries every fetchBackoffMax.
const (
	fetchBackoffBase = 200 * time.Millisecond
	fetchBackoffMax  = 10 * time.Second
	// MaxReadBackoff is the longest wait between a failed read and its
	// retry (the health bound of a reader, runner/health.go).
	MaxReadBackoff = fetchBackoffMax
	// refreshAfter: after this many failures in a row the iterator is
	// replaced, in case it is what the server chokes on.
	refreshAfter = 4
)

// FailingWarnEvery: a shard's failed reads, throttles included, are logged
// at warn at the first failure, then at most once per this interval, each
// line with the count of failures since the one before. A variable so that
// tests can shorten it.
var FailingWarnEvery = 30 * time.Second

// GetRecordsAPI is the part of the Kinesis client a Fetcher calls, with the
// SDK's own signatures so that *kinesis.Client satisfies it.
type GetRecordsAPI interface {
	GetShardIterator(ctx context.Context, params *kinesis.GetShardIteratorInput, optFns ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, params *kinesis.GetRecordsInput, optFns ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error)
}

// NoSDKRetries turns the SDK's retryer off for one Kinesis call: the fetch
// loop retries itself, with jitter, forever and within its context, and
// counts throttles. The SDK's standard retryer would also draw on a retry
// quota that sustained throttling empties, after which it fails fast.
func NoSDKRetries(o *kinesis.Options) { o.RetryMaxAttempts = 1 }

// PollingConfig is what a Fetcher takes from the worker's settings.
type PollingConfig struct {
	// MaxRecords is GetRecords' Limit.
	MaxRecords int32
	// AtTimestamp is the instant an AT_TIMESTAMP checkpoint stands for
	// (--initial-timestamp); zero when none is configured.
	AtTimestamp time.Time
	Clock       clock.Clock
	// Encoded lets the records' data be kept as base64 text, for the
	// MultiLang protocol, whose records carry it so.
	Encoded bool
}

// NewFetcher reads shardID from start; hr filters KPL aggregates by the
// shard's hash range.
func NewFetcher(kin GetRecordsAPI, stream reshard.Stream, shardID string, start leasecore.SequenceNumber, cfg PollingConfig, hr leasecore.HashRange, stats *metrics.ShardStats, log *slog.Logger) *Fetcher {
	return &Fetcher{
		kin: kin, stream: stream, shardID: shardID, maxRecords: cfg.MaxRecords,
		start: start, atTimestamp: cfg.AtTimestamp, hashRange: hr,
		clock: cfg.Clock, log: log, stats: stats,
		// A numeric checkpoint restarts AT (not after) the sequence number,
		// then drops what it already covers, as KCL does: this is what
		// makes a checkpoint inside a KPL aggregate resume at the right
		// sub-record.
		filtering: !leasecore.IsSentinel(start.SequenceNumber),
		encoded:   cfg.Encoded,
	}
}

// ContinueAfter makes the next read continue after seq, as if the fetcher
// had received it, still dropping records at or below its start while
// filtering: the fan-out reader hands a closed shard's rest over to
// polling this way.
func (f *Fetcher) ContinueAfter(seq string, filtering bool) {
	f.lastSeq, f.filtering = seq, filtering
}

// Next makes GetRecords calls until one succeeds, backing off on throttling
// and faults; it fails only when ctx ends.
func (f *Fetcher) Next(ctx context.Context) (Page, error) {
	for {
		if wait := f.lastCall.Add(minCallSpacing).Sub(f.clock.Now()); wait > 0 {
			if err := clock.Sleep(ctx, f.clock, wait); err != nil {
				return Page{}, err
			}
		}
		if f.iterator == nil {
			if err := f.newIterator(ctx); err != nil {
				if ctx.Err() != nil {
					return Page{}, ctx.Err()
				}
				if err := f.failed(ctx, "GetShardIterator", err); err != nil {
					return Page{}, err
				}
				continue
			}
		}
		f.lastCall = f.clock.Now()
		fast := fastPage{shardID: f.shardID, encoded: f.encoded}
		in := &kinesis.GetRecordsInput{ShardIterator: f.iterator, Limit: aws.Int32(f.maxRecords)}
		if f.stream.ARN != "" {
			// As GetShardIterator names it, and as the KCL does: the SDK
			// sends a call to the endpoint of the stream's account when it
			// has the ARN, and to the credentials' account's otherwise, so
			// without it the two calls of one shard could go to two hosts.
			in.StreamARN = aws.String(f.stream.ARN)
		}
		out, err := f.kin.GetRecords(ctx, in, NoSDKRetries, fastGetRecords(&fast))
		f.stats.GetRecordsCall(err)
		switch {
		case err == nil:
			f.recovered()
			return f.page(out, &fast), nil
		case ctx.Err() != nil:
			return Page{}, ctx.Err()
		case awserr.ExpiredIterator(err):
			f.log.Info("shard iterator expired; resuming after the last record received", "after", f.lastSeq)
			f.iterator = nil
			continue
		}
		if err := f.failed(ctx, "GetRecords", err); err != nil {
			return Page{}, err
		}
	}
}

// failed logs a failed call and waits before the next one. A shard whose
// reads fail is stalled while its lease is kept, so nobody else reads it:
// that must show in the log at once and keep showing, with the error. That
// holds for throttling too: an on-call engineer looking at a lagging shard
// needs to see that Kinesis throttles it without turning on debug. The
// rate limit is per shard and spans recoveries, so that throttling that
// comes and goes writes one warning per interval (with the count of
// failures since the last one), not one per throttled call.
func (f *Fetcher) failed(ctx context.Context, op string, err error) error {
	f.failures++
	f.unlogged++
	now := f.clock.Now()
	if f.failures == 1 {
		f.failingSince = now
	}
	f.stats.ReadFailed(err, f.failingSince)
	failingFor := now.Sub(f.failingSince)
	level := slog.LevelDebug
	msg := "Kinesis call failed; retrying"
	failedSince := 0
	if f.lastWarn.IsZero() || now.Sub(f.lastWarn) >= FailingWarnEvery {
		level, msg = slog.LevelWarn, "reads of the shard are failing; retrying (the lease is kept)"
		if f.warned {
			msg = "reads of the shard are still failing; retrying (the lease is kept)"
		}
		if !awserr.RetryableRead(err) {
			level = slog.LevelError
		}
		failedSince = f.unlogged
		f.lastWarn, f.unlogged, f.warned = now, 0, true
	}
	args := []any{"op", op, "attempts", f.failures, "failingFor", failingFor.Round(time.Millisecond).String(),
		"throttled", awserr.Throttled(err), "timedOut", awserr.Timeout(err)}
	if failedSince > 0 {
		args = append(args, "failedSinceLastWarning", failedSince)
	}
	f.log.Log(ctx, level, msg, append(args, "err", err)...)
	if f.failures%refreshAfter == 0 {
		f.iterator = nil
	}
	return clock.Sleep(ctx, f.clock, ReadBackoff(f.failures))
}

// recovered ends a run of failed calls, saying so at info if the run was
// logged at warn.
func (f *Fetcher) recovered() {
	if f.failures > 0 && f.warned {
		f.log.Info("reads of the shard recovered", "failedAttempts", f.failures,
			"failedFor", f.clock.Now().Sub(f.failingSince).Round(time.Millisecond).String())
	}
	if f.failures > 0 {
		f.stats.ReadOK()
	}
	f.failures, f.warned = 0, false
}

// ReadBackoff is full jitter under an exponential ceiling: shards that were
// throttled together spread apart.
func ReadBackoff(failures int) time.Duration {
	return backoff.Policy{Base: fetchBackoffBase, Max: fetchBackoffMax, Min: minCallSpacing}.Delay(failures-1, nil)
}

// newIterator positions the reader: after the last record received, or else
// at the lease's checkpoint.
func (f *Fetcher) newIterator(ctx context.Context) error {
	in := &kinesis.GetShardIteratorInput{ShardId: aws.String(f.shardID)}
	if f.stream.ARN != "" {
		in.StreamARN = aws.String(f.stream.ARN)
	} else {
		in.StreamName = aws.String(f.stream.Name)
	}
	switch cp := f.start.SequenceNumber; {
	case f.lastSeq != "":
		in.ShardIteratorType, in.StartingSequenceNumber = types.ShardIteratorTypeAfterSequenceNumber, aws.String(f.lastSeq)
	case cp == leasecore.TRIM_HORIZON, f.FromTrimHorizon:
		in.ShardIteratorType = types.ShardIteratorTypeTrimHorizon
	case cp == leasecore.LATEST:
		in.ShardIteratorType = types.ShardIteratorTypeLatest
	case cp == leasecore.AT_TIMESTAMP && !f.atTimestamp.IsZero():
		in.ShardIteratorType, in.Timestamp = types.ShardIteratorTypeAtTimestamp, aws.Time(f.atTimestamp)
	case cp == leasecore.AT_TIMESTAMP:
		// The lease does not carry the timestamp (docs/kcl-compat.md, Sentinel
		// checkpoints): KCL would fail on a null one. Reading from the start
		// loses nothing.
		f.log.Warn("lease checkpoint is AT_TIMESTAMP but no --initial-timestamp is configured; reading from TRIM_HORIZON")
		in.ShardIteratorType = types.ShardIteratorTypeTrimHorizon
	default:
		in.ShardIteratorType, in.StartingSequenceNumber = types.ShardIteratorTypeAtSequenceNumber, aws.String(cp)
	}
	out, err := f.kin.GetShardIterator(ctx, in, NoSDKRetries)
	if err != nil {
		return err
	}
	f.iterator = out.ShardIterator
	f.log.Debug("shard iterator", "type", in.ShardIteratorType, "at", aws.ToString(in.StartingSequenceNumber))
	return nil
}

// page turns a GetRecords answer into records: fast's, when the fast
// decoder read the answer, else the SDK's.
func (f *Fetcher) page(out *kinesis.GetRecordsOutput, fast *fastPage) Page {
	all := fast.records
	if !fast.ok {
		all = kinesisrec.FromKinesis(f.shardID, out.Records)
	}
	p := Page{Raw: len(all), MillisBehind: aws.ToInt64(out.MillisBehindLatest)}
	if f.clock != nil { // a fetcher built by a test may have none
		p.Received = f.clock.Now()
	}
	if n := len(all); n > 0 {
		f.lastSeq = all[n-1].SequenceNumber
	}
	f.iterator = out.NextShardIterator
	if f.iterator == nil {
		p.End, p.Children = true, out.ChildShards
	}
	p.Records, p.Bytes = PageRecords(all, f.hashRange, f.start, &f.filtering, f.log)
	return p
}

// Pause is how long to wait before the next read after p: none while the
// reader is behind the tip or got a full page (the rate limit still
// applies), the idle time otherwise.
func (f *Fetcher) Pause(p Page, idle time.Duration) time.Duration {
	if p.MillisBehind > 0 || p.Raw >= int(f.maxRecords) {
		return 0
	}
	return idle
}
