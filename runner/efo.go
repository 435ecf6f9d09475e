package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/fanout"
	"github.com/kcltool/kcltool/reshard"
)

// FanOutAPI is the part of the Kinesis client enhanced fan-out calls, with
// the SDK's own signatures: the stream's ARN, the consumer's registration,
// and the subscriptions.
type FanOutAPI interface {
	fanout.RegisterAPI
	DescribeStreamSummary(ctx context.Context, params *kinesis.DescribeStreamSummaryInput, optFns ...func(*kinesis.Options)) (*kinesis.DescribeStreamSummaryOutput, error)
	SubscribeToShard(ctx context.Context, params *kinesis.SubscribeToShardInput, optFns ...func(*kinesis.Options)) (*kinesis.SubscribeToShardOutput, error)
}

// FanOut makes a worker read with enhanced fan-out (SubscribeToShard)
// instead of polling GetRecords (efo_reader.go).
type FanOut struct {
	API FanOutAPI
	// ConsumerName is the stream consumer registered when missing; default
	// the application name, as the KCL's.
	ConsumerName string
	// ConsumerARN names an existing consumer, never registered; one
	// stream only.
	ConsumerARN string
	// SubscriptionMax ends each subscription after this long, where
	// Kinesis ends them after 5 minutes: a test hook for resubscription.
	SubscriptionMax time.Duration
	// EndCheckEvery is how often a subscription that brings no records
	// asks the shard listing whether its shard is closed; once it is, and
	// ChildShards have not come within as long again, GetRecords confirms
	// the end (efo_end.go). Default the shard sync interval.
	EndCheckEvery time.Duration
}

// ConsumerGoneError stops a worker whose --consumer-arn no longer exists:
// it must not register one of its own.
type ConsumerGoneError struct {
	ARN string
	Err error
}

func (e *ConsumerGoneError) Error() string { return e.Say(settingOption) }

// Say is Error with the settings it names (consumer-arn, consumer-name)
// said by name: cmd says them as its flags.
func (e *ConsumerGoneError) Say(name func(setting string) string) string {
	return fmt.Sprintf("enhanced fan-out consumer %s does not exist (deregistered, or a wrong ARN): %v; "+
		"register it again (aws kinesis register-stream-consumer) and pass its new ARN with %s, "+
		"or use %s to have kcltool register it", e.ARN, e.Err, name("consumer-arn"), name("consumer-name"))
}

// settingOption names a setting in an error nobody renamed.
func settingOption(setting string) string { return "the " + setting + " option" }

func (e *ConsumerGoneError) Unwrap() error { return e.Err }

// consumers holds the consumer ARN of each stream read with fan-out.
type consumers struct {
	mu    sync.Mutex
	arn   map[string]string // by stream label
	fixed bool              // --consumer-arn: never registered
	// renew serializes re-registrations: many shards find a deleted
	// consumer at once, and one registration serves them all.
	renew sync.Mutex
}

// setupFanOut makes the consumer of every stream ACTIVE, registering it
// when missing, before any lease is taken.
func (w *Worker) setupFanOut(ctx context.Context) error {
	fo := w.cfg.FanOut
	if fo.API == nil {
		return errors.New("enhanced fan-out needs a Kinesis client")
	}
	w.efo = &consumers{arn: map[string]string{}, fixed: fo.ConsumerARN != ""}
	for _, s := range w.streams {
		c, err := w.ensureConsumer(ctx, s, "")
		if err != nil {
			return err
		}
		w.efo.arn[streamLabel(s)] = c.ARN
		w.log.Info("enhanced fan-out consumer ready", "stream", streamLabel(s), "consumer", c.Name, "consumerARN", c.ARN)
	}
	return nil
}

func (w *Worker) ensureConsumer(ctx context.Context, s reshard.Stream, _ string) (fanout.RegisteredConsumer, error) {
	fo := w.cfg.FanOut
	opt := fanout.RegisterOptions{ARN: fo.ConsumerARN, Name: fo.ConsumerName, Clock: w.clock}
	if opt.ARN == "" {
		arn, err := w.streamARN(ctx, s)
		if err != nil {
			return fanout.RegisteredConsumer{}, err
		}
		opt.StreamARN = arn
	}
	c, err := fanout.EnsureActive(ctx, w.registerAPI(), opt)
	if errors.Is(err, fanout.ErrConsumerNotFound) {
		return c, &ConsumerGoneError{ARN: fo.ConsumerARN, Err: err}
	}
	if err != nil {
		return c, fmt.Errorf("enhanced fan-out consumer of stream %s: %w", streamLabel(s), err)
	}
	return c, nil
}

// streamARN is the stream's ARN, which RegisterStreamConsumer needs.
func (w *Worker) streamARN(ctx context.Context, s reshard.Stream) (string, error) {
	if s.ARN != "" {
		return s.ARN, nil
	}
	ctx, cancel := withDeadline(ctx, w.cfg.KinesisTimeout)
	defer cancel()
	out, err := w.cfg.FanOut.API.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(s.Name)})
	if err != nil {
		return "", fmt.Errorf("describe stream %s for its ARN: %w", s.Name, err)
	}
	return aws.ToString(out.StreamDescriptionSummary.StreamARN), nil
}

// consumerARN is the stream's current consumer.
func (w *Worker) consumerARN(s reshard.Stream) string {
	w.efo.mu.Lock()
	defer w.efo.mu.Unlock()
	return w.efo.arn[streamLabel(s)]
}

// consumerGone handles a subscription answered ResourceNotFound with the
// consumer gone: the consumer of a --consumer-name is registered again (once,
// for every shard that noticed), and the worker stops with a
// ConsumerGoneError for a --consumer-arn. ok is false when the consumer is
// still there: then the shard is what was not found.
func (w *Worker) consumerGone(ctx context.Context, s reshard.Stream, gone string) (ok bool, err error) {
	w.efo.renew.Lock()
	defer w.efo.renew.Unlock()
	if cur := w.consumerARN(s); cur != gone {
		return true, nil // another shard replaced it already
	}
	_, derr := fanout.EnsureActive(ctx, w.registerAPI(), fanout.RegisterOptions{ARN: gone, Clock: w.clock})
	if derr == nil {
		return false, nil
	}
	if !errors.Is(derr, fanout.ErrConsumerNotFound) {
		return true, derr
	}
	if w.efo.fixed {
		e := &ConsumerGoneError{ARN: gone, Err: derr}
		w.stopFatal(e)
		return true, e
	}
	w.log.Warn("enhanced fan-out consumer is gone (deregistered or expired); registering it again", "consumerARN", gone)
	c, err := w.ensureConsumer(ctx, s, gone)
	if err != nil {
		return true, err
	}
	w.efo.mu.Lock()
	w.efo.arn[streamLabel(s)] = c.ARN
	w.efo.mu.Unlock()
	w.log.Info("enhanced fan-out consumer registered again", "consumerARN", c.ARN)
	return true, nil
}

// stopFatal stops the worker the graceful way; Run returns err.
func (w *Worker) stopFatal(err error) {
	w.mu.Lock()
	if w.fatal == nil {
		w.fatal = err
	}
	w.mu.Unlock()
	if w.coord != nil {
		w.coord.StopTaking()
	}
	w.log.Error("stopping: releasing every lease", "err", err)
	w.Shutdown()
}

// registerAPI gives each registration call its own deadline, as every
// other Kinesis request has (deadline.go); EnsureActive retries one cut off.
func (w *Worker) registerAPI() fanout.RegisterAPI {
	return deadlineRegister{api: w.cfg.FanOut.API, d: w.cfg.KinesisTimeout}
}

type deadlineRegister struct {
	api fanout.RegisterAPI
	d   time.Duration
}

func (k deadlineRegister) DescribeStreamConsumer(ctx context.Context, in *kinesis.DescribeStreamConsumerInput, opts ...func(*kinesis.Options)) (*kinesis.DescribeStreamConsumerOutput, error) {
	ctx, cancel := withDeadline(ctx, k.d)
	defer cancel()
	return k.api.DescribeStreamConsumer(ctx, in, opts...)
}

func (k deadlineRegister) RegisterStreamConsumer(ctx context.Context, in *kinesis.RegisterStreamConsumerInput, opts ...func(*kinesis.Options)) (*kinesis.RegisterStreamConsumerOutput, error) {
	ctx, cancel := withDeadline(ctx, k.d)
	defer cancel()
	return k.api.RegisterStreamConsumer(ctx, in, opts...)
}
