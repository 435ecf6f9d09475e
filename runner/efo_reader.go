package runner

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kinschemas "github.com/aws/aws-sdk-go-v2/service/kinesis/schemas"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go/transport/http/protocol/awsjson"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/internal/backoff"
	"github.com/kcltool/kcltool/kinesisrec"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/runner/processor"
	"github.com/kcltool/kcltool/runner/retrieval"
)

// fanOutReader reads one shard with enhanced fan-out: one subscription at
// a time (SubscribeToShard), each event a page. A subscription ends after
// 5 minutes, or on an error; the next one continues after the last event's
// ContinuationSequenceNumber (AFTER_SEQUENCE_NUMBER), never from the
// checkpoint, so that nothing is skipped or read twice, as the KCL's
// FanOutRecordsPublisher does. The first starts from the lease: AT a
// numeric checkpoint (records at or below it dropped, as polling does) or
// at its sentinel.
//
// Flow control: the next event is taken off the stream only once the
// page of the previous one has gone into the one-page buffer, so a slow
// handler holds the subscription back (the SDK's event channel is
// unbuffered, and HTTP/2 flow control does the rest) instead of growing
// memory.
type fanOutReader struct {
	r     *shardRun
	pages chan retrieval.Page
	done  chan struct{}
	ctx   context.Context
	stop  context.CancelCauseFunc
	log   *slog.Logger

	start     leasecore.SequenceNumber
	hashRange leasecore.HashRange
	filtering bool
	// cont is the last event's ContinuationSequenceNumber: where the next
	// subscription continues.
	cont string
	// subscribed: a subscription has delivered before (the next one is a
	// resubscription).
	subscribed bool
	lastCall   time.Time
	failures   int
	failingAt  time.Time
	lastWarn   time.Time

	// The shard-end check (efo_end.go): when the listing was last asked,
	// and since when it has shown the shard closed.
	lastEndCheck time.Time
	closedSince  time.Time
	lastRecords  time.Time // when an event last brought records

	// loop is the reader's /livez entry (runner/health.go): it beats at
	// every subscription, event, end check and retry, and is parked while
	// the shard's handler has not taken the page, or while the consumer is
	// registered again.
	loop *leasecore.Loop
}

// Subscription pacing. Kinesis allows one SubscribeToShard per second per
// shard and consumer; ResourceInUse (the shard's previous holder, or our
// own ended subscription, still counts as subscribed for a few seconds)
// and throttles back off with jitter, so that a fleet's retries spread.
var (
	subscribeSpacing = time.Second
	subscribeBackoff = backoff.Policy{Base: 500 * time.Millisecond, Max: 10 * time.Second, Min: subscribeSpacing, Jitter: backoff.Equal}
)

func (r *shardRun) startFanOut(start leasecore.SequenceNumber, hr leasecore.HashRange) *fanOutReader {
	ctx, stop := context.WithCancelCause(r.ctx)
	f := &fanOutReader{
		r: r, pages: make(chan retrieval.Page, 1), done: make(chan struct{}), ctx: ctx, stop: stop, log: r.log,
		start: start, hashRange: hr, filtering: !leasecore.IsSentinel(start.SequenceNumber),
	}
	f.loop = r.w.health.Loop("reader "+r.name(), r.w.fanOutReaderBound())
	go func() {
		defer close(f.done)
		defer close(f.pages)
		defer f.loop.Close()
		f.run()
	}()
	return f
}

func (f *fanOutReader) Pages() <-chan retrieval.Page { return f.pages }
func (f *fanOutReader) Gone() error                  { return expiredCause(f.ctx) }

func (f *fanOutReader) Close() {
	f.stop(nil)
	<-f.done
}

// ownEventCodec gives one subscription an event-stream codec of its own.
// The SDK's JSON protocol keeps one codec per client, with one payload
// buffer, and concurrent subscriptions decoding through it race on that
// buffer (the race detector shows it with two shards): records of one
// shard could be decoded into another's bytes.
func ownEventCodec(o *kinesis.Options) { o.Protocol = awsjson.New11(kinschemas.Kinesis_20131202) }

// eventTaken, when set (by a test), is told of each event taken off a
// subscription.
var eventTaken func(records int)

// errSubscriptionCut: the test hook ended a subscription early.
var errSubscriptionCut = errors.New("subscription ended by the test hook")

func (f *fanOutReader) stopping() bool { return f.ctx.Err() != nil || f.r.stopping() }

func (f *fanOutReader) run() {
	for !f.stopping() {
		f.loop.Beat()
		if wait := f.lastCall.Add(subscribeSpacing).Sub(f.r.w.clock.Now()); wait > 0 {
			if f.sleep(wait) != nil {
				return
			}
		}
		ended, err := f.subscribe()
		if ended || f.stopping() {
			return
		}
		if err == nil || errors.Is(err, errSubscriptionCut) {
			continue // the subscription ran its course: continue at once
		}
		if err := f.failed(err); err != nil {
			return
		}
	}
}

// position is where the next subscription starts.
func (f *fanOutReader) position() *types.StartingPosition {
	if f.cont != "" {
		return &types.StartingPosition{Type: types.ShardIteratorTypeAfterSequenceNumber, SequenceNumber: aws.String(f.cont)}
	}
	switch cp := f.start.SequenceNumber; cp {
	case leasecore.TRIM_HORIZON:
		return &types.StartingPosition{Type: types.ShardIteratorTypeTrimHorizon}
	case leasecore.LATEST:
		return &types.StartingPosition{Type: types.ShardIteratorTypeLatest}
	case leasecore.AT_TIMESTAMP:
		if ts := f.r.w.cfg.Initial.Timestamp; !ts.IsZero() {
			return &types.StartingPosition{Type: types.ShardIteratorTypeAtTimestamp, Timestamp: aws.Time(ts)}
		}
		// As polling does (fetcher.newIterator): reading from the start
		// loses nothing.
		f.log.Warn("lease checkpoint is AT_TIMESTAMP but no --initial-timestamp is configured; reading from TRIM_HORIZON")
		return &types.StartingPosition{Type: types.ShardIteratorTypeTrimHorizon}
	default:
		return &types.StartingPosition{Type: types.ShardIteratorTypeAtSequenceNumber, SequenceNumber: aws.String(cp)}
	}
}

// subscribe makes one subscription and reads it until it ends. ended says
// the shard's last page was delivered.
func (f *fanOutReader) subscribe() (ended bool, err error) {
	w := f.r.w
	arn := w.consumerARN(f.r.stream)
	pos := f.position()
	f.lastCall = w.clock.Now()
	counted := false
	f.log.Debug("subscribing to the shard", "type", pos.Type, "at", aws.ToString(pos.SequenceNumber))

	sctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	// The call returns once the initial response came; bound that wait.
	answered := make(chan struct{})
	go func() {
		t := w.clock.NewTimer(w.cfg.KinesisTimeout)
		defer t.Stop()
		select {
		case <-t.C():
			cancel()
		case <-answered:
		}
	}()
	out, err := w.cfg.FanOut.API.SubscribeToShard(sctx, &kinesis.SubscribeToShardInput{
		ConsumerARN: aws.String(arn), ShardId: aws.String(f.r.shardID), StartingPosition: pos,
	}, retrieval.NoSDKRetries, ownEventCodec)
	close(answered)
	f.loop.Beat()
	if err != nil {
		return false, f.classify(sctx, arn, err)
	}
	es := out.GetStream()
	defer es.Close()

	var cut <-chan time.Time
	if d := w.cfg.FanOut.SubscriptionMax; d > 0 {
		t := w.clock.NewTimer(d)
		defer t.Stop()
		cut = t.C()
	}
	// A subscription that goes silent (a connection stuck in the network)
	// is replaced: Kinesis sends an event at least every few seconds.
	idle := w.clock.NewTimer(w.cfg.KinesisTimeout)
	defer func() { idle.Stop() }()
	// The end check also runs between events, in case they stop coming.
	checkEvery := max(w.cfg.FanOut.EndCheckEvery/2, time.Second)
	check := w.clock.NewTimer(checkEvery)
	defer func() { check.Stop() }()
	events := es.Events()
	for {
		f.loop.Beat()
		select {
		case ev, ok := <-events:
			if !ok {
				if err := es.Err(); err != nil {
					return false, f.classify(sctx, arn, err)
				}
				f.log.Debug("subscription ended; resubscribing", "after", f.cont)
				return false, nil
			}
			idle.Stop()
			idle = w.clock.NewTimer(w.cfg.KinesisTimeout)
			e, isEvent := ev.(*types.SubscribeToShardEventStreamMemberSubscribeToShardEvent)
			if !isEvent {
				continue
			}
			if !counted {
				// Counted at its first event: a refused subscription
				// (ResourceInUse) comes as an exception instead.
				counted = true
				f.r.stats.Subscribed(f.subscribed)
				f.subscribed = true
			}
			ended, err := f.event(&e.Value)
			if ended || err != nil {
				return ended, err
			}
			if f.endDue(len(e.Value.Records) > 0) {
				es.Close()
				return f.confirmEnd()
			}
		case <-check.C():
			check = w.clock.NewTimer(checkEvery)
			if f.endDue(false) {
				es.Close()
				return f.confirmEnd()
			}
		case <-cut:
			return false, errSubscriptionCut
		case <-idle.C():
			return false, errors.New("no event on the subscription for " + w.cfg.KinesisTimeout.String())
		case <-f.ctx.Done():
			return false, f.ctx.Err()
		case <-f.r.halt:
			return false, processor.ErrStopped
		}
	}
}

// event delivers one event's records as a page, and ends the shard when it
// names the children.
func (f *fanOutReader) event(ev *types.SubscribeToShardEvent) (ended bool, err error) {
	w := f.r.w
	if eventTaken != nil {
		eventTaken(len(ev.Records))
	}
	if f.failures > 0 {
		f.recovered()
	}
	p := retrieval.Page{Raw: len(ev.Records), MillisBehind: aws.ToInt64(ev.MillisBehindLatest), Received: w.clock.Now()}
	p.Records, p.Bytes = retrieval.PageRecords(kinesisrec.FromKinesis(f.r.shardID, ev.Records), f.hashRange, f.start, &f.filtering, f.log)
	if len(ev.ChildShards) > 0 {
		p.End, p.Children = true, ev.ChildShards
	}
	f.r.stats.Read(p.MillisBehind)
	// Parked while the run has not taken the page: it waits for the
	// handler, which has its own limits.
	f.loop.Park()
	select {
	case f.pages <- p:
	case <-f.ctx.Done():
		return false, f.ctx.Err()
	case <-f.r.halt:
		return false, processor.ErrStopped
	}
	f.loop.Unpark()
	// Only once the page is handed on: a continuation past records that
	// were never delivered would skip them.
	if c := aws.ToString(ev.ContinuationSequenceNumber); c != "" {
		f.cont = c
	} else if n := len(ev.Records); n > 0 {
		f.cont = aws.ToString(ev.Records[n-1].SequenceNumber)
	}
	return p.End, nil
}

// classify turns a failed subscription into what the loop does next. A
// ResourceNotFound is the consumer gone (registered again, or with
// --consumer-arn the worker stops) or else the shard gone (Gone).
func (f *fanOutReader) classify(ctx context.Context, arn string, err error) error {
	if f.stopping() {
		return err
	}
	if !awserr.NotFound(err) {
		return err
	}
	// Registering the consumer again waits for it to be ACTIVE, shared by
	// every shard's reader: parked, as its calls have their own deadlines.
	f.loop.Park()
	consumerGone, cerr := f.r.w.consumerGone(f.ctx, f.r.stream, arn)
	f.loop.Unpark()
	switch {
	case cerr != nil:
		var gone *ConsumerGoneError
		if errors.As(cerr, &gone) {
			f.stop(cerr)
		}
		return cerr
	case consumerGone:
		return errConsumerRenewed
	}
	// The consumer is there: the shard (or its data) is what is gone.
	f.stop(&expiredError{op: "SubscribeToShard", err: err})
	return err
}

// errConsumerRenewed: the consumer was registered again; subscribe anew.
var errConsumerRenewed = errors.New("the stream consumer was registered again")

// failed logs a failed subscription and waits before the next one. The
// shard's lease is kept meanwhile, so nobody else reads it: this shows
// in the log and the read-failure metrics, as polling's failures do.
func (f *fanOutReader) failed(err error) error {
	w := f.r.w
	f.failures++
	now := w.clock.Now()
	if f.failures == 1 {
		f.failingAt, f.lastWarn = now, time.Time{}
	}
	failingFor := now.Sub(f.failingAt)
	// Our own ended subscription still holds the shard for a few seconds
	// (kinesis-local about 3 s): a ResourceInUse then is the usual
	// handover, not news. Any other failure, throttles and a previous
	// owner's ResourceInUse included, stalls the shard with its lease
	// kept, so it is logged at warn at once and then once per
	// failingWarnEvery, as polling's failed reads are (fetcher.failed).
	expected := errors.Is(err, errConsumerRenewed) ||
		(f.subscribed && awserr.Is(err, "ResourceInUseException") && failingFor < ownHoldGrace)
	if !errors.Is(err, errConsumerRenewed) {
		f.r.stats.ReadFailed(err, f.failingAt)
	}
	level, msg := slog.LevelDebug, "subscription failed; subscribing again"
	switch {
	case f.lastWarn.IsZero() && !expected:
		level, msg = slog.LevelWarn, "subscriptions to the shard are failing; retrying (the lease is kept)"
		if !awserr.RetryableRead(err) && !awserr.Is(err, "ResourceInUseException") {
			level = slog.LevelError
		}
		f.lastWarn = now
	case !f.lastWarn.IsZero() && now.Sub(f.lastWarn) >= retrieval.FailingWarnEvery:
		level, msg = slog.LevelWarn, "subscriptions to the shard are still failing; retrying (the lease is kept)"
		f.lastWarn = now
	}
	f.log.Log(f.ctx, level, msg, "op", "SubscribeToShard", "attempts", f.failures,
		"failingFor", failingFor.Round(time.Millisecond).String(), "throttled", awserr.Throttled(err), "err", err)
	if errors.Is(err, errConsumerRenewed) {
		return nil
	}
	return f.sleep(subscribeBackoff.Delay(f.failures-1, nil))
}

// ownHoldGrace: how long after our own subscription ended a ResourceInUse
// is taken for that subscription's hold on the shard.
const ownHoldGrace = 10 * time.Second

func (f *fanOutReader) recovered() {
	if !f.lastWarn.IsZero() {
		f.log.Info("subscriptions to the shard recovered", "failedAttempts", f.failures,
			"failedFor", f.r.w.clock.Now().Sub(f.failingAt).Round(time.Millisecond).String())
	}
	f.r.stats.ReadOK()
	f.failures, f.lastWarn = 0, time.Time{}
}

// sleep waits d, or fails when the reader stops.
func (f *fanOutReader) sleep(d time.Duration) error {
	t := f.r.w.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-f.ctx.Done():
		return f.ctx.Err()
	case <-f.r.halt:
		return processor.ErrStopped
	}
}
