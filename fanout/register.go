// Package fanout manages enhanced fan-out (EFO) stream consumers: the
// registration a `kcltool run --efo` worker needs before it subscribes, and
// the listing and deregistration operators use. It makes Kinesis control
// plane calls only; reading with SubscribeToShard is the runner's.
package fanout

import (
	"context"
	"errors"
	"fmt"
	"github.com/kcltool/kcltool/internal/clock"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/internal/backoff"
)

// RegisterAPI is the part of the Kinesis client that registration calls,
// with the SDK's own signatures.
type RegisterAPI interface {
	DescribeStreamConsumer(ctx context.Context, params *kinesis.DescribeStreamConsumerInput, optFns ...func(*kinesis.Options)) (*kinesis.DescribeStreamConsumerOutput, error)
	RegisterStreamConsumer(ctx context.Context, params *kinesis.RegisterStreamConsumerInput, optFns ...func(*kinesis.Options)) (*kinesis.RegisterStreamConsumerOutput, error)
}

// RegisteredConsumer is a stream consumer as DescribeStreamConsumer gives it.
type RegisteredConsumer struct {
	Name, ARN, StreamARN string
	Status               types.ConsumerStatus
	Created              time.Time
}

// ErrConsumerNotFound: the consumer named by its ARN does not exist (it was
// deregistered, or the ARN is wrong).
var ErrConsumerNotFound = errors.New("stream consumer not found")

// RegisterOptions say which consumer to make ready and how long to wait.
type RegisterOptions struct {
	// StreamARN and Name name the consumer to register when it is missing.
	StreamARN, Name string
	// ARN names an existing consumer instead: it is never registered, and
	// its absence is ErrConsumerNotFound.
	ARN string
	// Clock paces the waits; default the real clock.
	Clock clock.Clock
	// PollEvery is the pause between DescribeStreamConsumer calls while the
	// consumer is CREATING or DELETING (default 1 s; Kinesis allows 20
	// describes per second per stream, shared by every worker).
	PollEvery time.Duration
	// Timeout bounds the whole wait (default 5 minutes: creating a consumer
	// takes seconds, but a DELETING one of the same name must go first).
	Timeout time.Duration
}

// Defaults of RegisterOptions.
const (
	DefaultPollEvery       = time.Second
	DefaultRegisterTimeout = 5 * time.Minute
)

// retryPolicy spaces describes and registrations that were throttled or
// failed: jittered, so that a fleet started at once spreads apart.
var retryPolicy = backoff.Policy{Base: 200 * time.Millisecond, Max: 5 * time.Second, Jitter: backoff.Equal}

// EnsureActive returns the consumer once it is ACTIVE: described when it
// exists, registered when it does not (unless opt.ARN names it), waited
// for while CREATING, and waited out while a previous consumer of the same
// name is DELETING. Many workers starting at once race to register it:
// ResourceInUse from RegisterStreamConsumer means another one won (or the
// name is still being deleted), so it describes again and goes on.
func EnsureActive(ctx context.Context, api RegisterAPI, opt RegisterOptions) (RegisteredConsumer, error) {
	if opt.Clock == nil {
		opt.Clock = clock.RealClock()
	}
	if opt.PollEvery <= 0 {
		opt.PollEvery = DefaultPollEvery
	}
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultRegisterTimeout
	}
	if opt.ARN == "" && (opt.StreamARN == "" || opt.Name == "") {
		return RegisteredConsumer{}, errors.New("fanout: a consumer needs its ARN, or a stream ARN and a name")
	}
	deadline := opt.Clock.Now().Add(opt.Timeout)
	failures := 0
	var last RegisteredConsumer
	for {
		c, err := describe(ctx, api, opt)
		switch {
		case err == nil:
			last = c
			failures = 0
			switch c.Status {
			case types.ConsumerStatusActive:
				return c, nil
			case types.ConsumerStatusDeleting:
				if opt.ARN != "" {
					return c, fmt.Errorf("stream consumer %s is being deleted: %w", opt.ARN, ErrConsumerNotFound)
				}
			}
		case awserr.NotFound(err) && opt.ARN != "":
			return RegisteredConsumer{}, fmt.Errorf("stream consumer %s: %w", opt.ARN, ErrConsumerNotFound)
		case awserr.NotFound(err):
			rc, rerr := register(ctx, api, opt)
			switch {
			case rerr == nil:
				last = rc
				if rc.Status == types.ConsumerStatusActive {
					return rc, nil
				}
			case awserr.Is(rerr, "ResourceInUseException"):
				// Another worker registered it first, or the name is
				// still being deleted: describe again.
			case retryable(ctx, rerr):
				failures++
			default:
				return RegisteredConsumer{}, fmt.Errorf("register stream consumer %q on %s: %w", opt.Name, opt.StreamARN, rerr)
			}
		case retryable(ctx, err):
			failures++
		default:
			return RegisteredConsumer{}, fmt.Errorf("describe stream consumer %s: %w", opt.label(), err)
		}
		if !opt.Clock.Now().Before(deadline) {
			return last, fmt.Errorf("stream consumer %s is not ACTIVE after %s (last status %q)", opt.label(), opt.Timeout, last.Status)
		}
		wait := opt.PollEvery
		if failures > 0 {
			wait = retryPolicy.Delay(failures-1, nil)
		}
		if err := clock.Sleep(ctx, opt.Clock, wait); err != nil {
			return last, err
		}
	}
}

func (o RegisterOptions) label() string {
	if o.ARN != "" {
		return o.ARN
	}
	return fmt.Sprintf("%q on %s", o.Name, o.StreamARN)
}

// retryable: throttles (Kinesis allows 5 registrations and 20 describes a
// second per stream) and faults that did not answer are tried again.
func retryable(ctx context.Context, err error) bool {
	return ctx.Err() == nil && (awserr.Retryable(err) || awserr.Transient(err))
}

func describe(ctx context.Context, api RegisterAPI, opt RegisterOptions) (RegisteredConsumer, error) {
	in := &kinesis.DescribeStreamConsumerInput{}
	if opt.ARN != "" {
		in.ConsumerARN = aws.String(opt.ARN)
	} else {
		in.StreamARN, in.ConsumerName = aws.String(opt.StreamARN), aws.String(opt.Name)
	}
	out, err := api.DescribeStreamConsumer(ctx, in)
	if err != nil {
		return RegisteredConsumer{}, err
	}
	d := out.ConsumerDescription
	if d == nil {
		return RegisteredConsumer{}, errors.New("DescribeStreamConsumer answered without a consumer description")
	}
	return RegisteredConsumer{
		Name: aws.ToString(d.ConsumerName), ARN: aws.ToString(d.ConsumerARN), StreamARN: aws.ToString(d.StreamARN),
		Status: d.ConsumerStatus, Created: aws.ToTime(d.ConsumerCreationTimestamp),
	}, nil
}

func register(ctx context.Context, api RegisterAPI, opt RegisterOptions) (RegisteredConsumer, error) {
	out, err := api.RegisterStreamConsumer(ctx, &kinesis.RegisterStreamConsumerInput{
		StreamARN: aws.String(opt.StreamARN), ConsumerName: aws.String(opt.Name),
	})
	if err != nil {
		return RegisteredConsumer{}, err
	}
	c := out.Consumer
	if c == nil {
		return RegisteredConsumer{}, errors.New("RegisterStreamConsumer answered without a consumer")
	}
	return RegisteredConsumer{
		Name: aws.ToString(c.ConsumerName), ARN: aws.ToString(c.ConsumerARN), StreamARN: opt.StreamARN,
		Status: c.ConsumerStatus, Created: aws.ToTime(c.ConsumerCreationTimestamp),
	}, nil
}
