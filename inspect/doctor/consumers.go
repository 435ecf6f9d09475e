package doctor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"

	"github.com/kcltool/kcltool/fanout"
)

// Enhanced fan-out: the streams' registered consumers (every one, the
// application's named after it, as the KCL and kcltool run --efo name it)
// and, from CloudWatch, their failed subscriptions. KCL publishes no
// subscription metric of its own (docs/kcl-compat.md, CloudWatch metrics);
// Kinesis publishes SubscribeToShard.Success and
// SubscribeToShard.RateExceeded per stream and consumer in AWS/Kinesis.

// The finding ids of enhanced fan-out (docs/doctor.md).
const (
	FindConsumerNotActive  = "efo-consumer-not-active"
	FindSubscriptionErrors = "efo-subscription-errors"
)

// What the subscription series are read for; the subject is
// "stream/consumer".
const (
	mSubRateExceeded = "kinesis.subscribeToShardRateExceeded"
	mSubSuccess      = "kinesis.subscribeToShardSuccess"  // Sum: subscriptions made
	mSubAttempts     = "kinesis.subscribeToShardAttempts" // SampleCount of Success: attempts
)

// creatingGrace is how long a consumer may be CREATING before it is worth
// a warning: Kinesis makes a consumer ACTIVE within seconds.
const creatingGrace = time.Minute

// errNoConsumerCalls: the Kinesis client doctor was given cannot list
// consumers (a narrow fake); the checks are skipped.
var errNoConsumerCalls = errors.New("the Kinesis client cannot list stream consumers")

// ListStreamConsumers counts and passes on the listing of consumers, when
// the client has the call (the SDK's client has).
func (s meteredStream) ListStreamConsumers(ctx context.Context, in *kinesis.ListStreamConsumersInput, opts ...func(*kinesis.Options)) (*kinesis.ListStreamConsumersOutput, error) {
	api, ok := s.api.(interface {
		ListStreamConsumers(context.Context, *kinesis.ListStreamConsumersInput, ...func(*kinesis.Options)) (*kinesis.ListStreamConsumersOutput, error)
	})
	if !ok {
		return nil, errNoConsumerCalls
	}
	s.m.note(func(c *ReadCost) { c.ListStreamConsumers++ })
	return api.ListStreamConsumers(ctx, in, opts...)
}

// describeStream is DescribeStreamSummary, asked once per stream and
// report: the consumer listing needs the stream's ARN, and the iterator-age
// series whether shard-level metrics are on.
func (g *diagnosis) describeStream(ctx context.Context, stream string) (*kinesis.DescribeStreamSummaryOutput, error) {
	if out, ok := g.summaries[stream]; ok {
		return out, nil
	}
	out, err := g.d.kin.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(stream)})
	if err != nil {
		return nil, err
	}
	if g.summaries == nil {
		g.summaries = map[string]*kinesis.DescribeStreamSummaryOutput{}
	}
	g.summaries[stream] = out
	return out, nil
}

// consumerLister is fanout.ListAPI over the report's stream summaries.
type consumerLister struct {
	g    *diagnosis
	list interface {
		ListStreamConsumers(context.Context, *kinesis.ListStreamConsumersInput, ...func(*kinesis.Options)) (*kinesis.ListStreamConsumersOutput, error)
	}
}

func (c consumerLister) DescribeStreamSummary(ctx context.Context, in *kinesis.DescribeStreamSummaryInput, _ ...func(*kinesis.Options)) (*kinesis.DescribeStreamSummaryOutput, error) {
	return c.g.describeStream(ctx, aws.ToString(in.StreamName))
}

func (c consumerLister) ListStreamConsumers(ctx context.Context, in *kinesis.ListStreamConsumersInput, opts ...func(*kinesis.Options)) (*kinesis.ListStreamConsumersOutput, error) {
	return c.list.ListStreamConsumers(ctx, in, opts...)
}

// readConsumers lists the consumers of every stream the table consumes:
// one DescribeStreamSummary (for the stream's ARN, shared with the
// iterator-age series) and one ListStreamConsumers each. A failure skips
// these checks, said so. A watch (and top) lists them at most once a
// minute, as it reads CloudWatch: both calls are control-plane calls with
// low limits (ListStreamConsumers: 5 a second per stream), which a view
// refreshing every few seconds should not spend.
func (g *diagnosis) readConsumers(ctx context.Context) {
	ms, ok := g.d.kin.(meteredStream)
	if !ok {
		return // no Kinesis: the stream checks are skipped already, and said so
	}
	d, now := g.d, g.d.clock.Now()
	if c := d.consumersRead; d.watching && c != nil && now.Sub(c.at) < time.Minute {
		g.consumers = c.listings
		g.skipped = append(g.skipped, c.skipped...)
		return
	}
	skippedBefore := len(g.skipped)
	api := consumerLister{g: g, list: ms}
	for _, stream := range g.streamNames() {
		l, err := fanout.ListStreamConsumers(ctx, api, stream, fanout.ListOptions{})
		if err != nil {
			g.skip("enhanced fan-out consumer checks on "+stream, consumerReadError(err))
			continue
		}
		g.consumers = append(g.consumers, l)
	}
	if d.watching {
		d.consumersRead = &consumersRead{at: now, listings: g.consumers, skipped: slices.Clone(g.skipped[skippedBefore:])}
	}
}

// consumersRead is a watch's last listing of the consumers.
type consumersRead struct {
	at       time.Time
	listings []*fanout.ConsumerListing
	skipped  []string
}

func consumerReadError(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return fmt.Sprintf("listing its consumers failed: %s: %s (allow kinesis:DescribeStreamSummary and kinesis:ListStreamConsumers)", ae.ErrorCode(), ae.ErrorMessage())
	}
	return "listing its consumers failed: " + err.Error()
}

// subscriptionSpecs reads the subscription series of every consumer listed.
func (g *diagnosis) subscriptionSpecs() []metricSpec {
	var specs []metricSpec
	for _, l := range g.consumers {
		for _, c := range l.Consumers {
			dims := [][2]string{{"StreamName", l.StreamName}, {"ConsumerName", c.Name}}
			subject := l.StreamName + "/" + c.Name
			specs = append(specs,
				metricSpec{use: mSubRateExceeded, subject: subject, namespace: "AWS/Kinesis", name: "SubscribeToShard.RateExceeded", stat: "Sum", dims: dims},
				metricSpec{use: mSubSuccess, subject: subject, namespace: "AWS/Kinesis", name: "SubscribeToShard.Success", stat: "Sum", dims: dims},
				metricSpec{use: mSubAttempts, subject: subject, namespace: "AWS/Kinesis", name: "SubscribeToShard.Success", stat: "SampleCount", dims: dims})
		}
	}
	return specs
}

// checkConsumers reports consumers that are not ACTIVE and subscriptions
// that failed. The application's own consumer (named after it) is a
// warning; another application's sharing the stream only information.
func checkConsumers(fc *facts) (out []Finding) {
	for _, l := range fc.consumers {
		for _, c := range l.Consumers {
			if !c.Active() {
				out = append(out, consumerNotActive(fc, l.StreamName, c)...)
			}
			out = append(out, subscriptionErrors(fc, l.StreamName, c)...)
		}
	}
	return
}

func consumerNotActive(fc *facts, stream string, c fanout.StreamConsumer) (out []Finding) {
	ours := c.Name == fc.opt.App
	age := fc.now.Sub(c.CreatedAt)
	whose := "another application's"
	if ours {
		whose = "the application's"
	}
	f := Finding{
		ID: FindConsumerNotActive, Severity: SeverityInfo,
		Summary: fmt.Sprintf("%s enhanced fan-out consumer %q on stream %s is %s (registered %s ago)", whose, c.Name, stream, c.Status, roundDur(age)),
		Evidence: Evidence{
			Lines:  []string{fmt.Sprintf("%s: %s, registered %s, %s", c.Name, c.Status, c.CreatedAt.UTC().Format(time.RFC3339), c.ARN)},
			Values: map[string]float64{"registeredSecondsAgo": age.Seconds()},
		},
	}
	switch c.Status {
	case types.ConsumerStatusCreating:
		if ours && age > creatingGrace {
			f.Severity = SeverityWarn
		}
		f.Cause = "a consumer is CREATING for seconds after RegisterStreamConsumer; until it is ACTIVE, SubscribeToShard fails and fan-out workers wait. Longer than a minute is not normal"
		f.Fix = "wait and run doctor again; if it stays CREATING, check the stream's status and the Kinesis service health, then deregister it and let the workers register it again"
	default: // DELETING
		if ours {
			f.Severity = SeverityWarn
		}
		f.Cause = "the consumer was deregistered (kcltool consumers deregister, the console, an infrastructure tool): no subscription can be made or renewed with it. A running kcltool run --efo worker registers a new consumer of the same name once it is gone; a running Java KCL 2.x or 3.x worker instead takes the refusal for the end of each shard it reads and checkpoints SHARD_END on open shards (docs/efo.md)"
		f.Fix = "if the application still reads with fan-out, find what deregistered it, and look for open shards at SHARD_END (kcltool lineage; docs/efo.md says how to recover); if it was retired, stop its workers so they do not register it again"
	}
	out = append(out, f)
	return
}

func subscriptionErrors(fc *facts, stream string, c fanout.StreamConsumer) (out []Finding) {
	if fc.metrics == nil {
		return
	}
	subject := stream + "/" + c.Name
	rate := fc.metrics.sum(mSubRateExceeded, subject)
	attempts, made := fc.metrics.sum(mSubAttempts, subject), fc.metrics.sum(mSubSuccess, subject)
	failed := max(attempts-made, rate)
	if failed <= 0 {
		return
	}
	sev := SeverityInfo
	whose := "another application's consumer"
	if c.Name == fc.opt.App {
		sev, whose = SeverityWarn, "the application's consumer"
	}
	out = append(out, Finding{
		ID: FindSubscriptionErrors, Severity: sev,
		Summary: fmt.Sprintf("SubscribeToShard failed %s in %s for %s %q on stream %s (%.0f over the rate or in use)",
			times(failed), roundDur(fc.opt.MetricsWindow), whose, c.Name, stream, rate),
		Evidence: Evidence{
			Lines:  []string{fmt.Sprintf("%s: %.0f subscription attempts, %.0f made, %.0f SubscribeToShard.RateExceeded (CloudWatch, AWS/Kinesis)", c.Name, attempts, made, rate)},
			Values: map[string]float64{"attempts": attempts, "subscribed": made, "rateExceeded": rate},
		},
		Cause: "a subscription to a shard was refused: the consumer already had one to that shard (the shard's previous owner still subscribed while its lease moved: expected briefly at a failover or a rebalance, repeated when leases churn), more than one SubscribeToShard a second per shard and consumer, or two applications sharing one consumer name",
		Fix:   "if lease-churn findings come with it, fix the churn first; make sure no other application uses this consumer name (kcltool consumers ls); fan-out workers back off and retry, so a few at a failover need nothing",
	})
	return
}
