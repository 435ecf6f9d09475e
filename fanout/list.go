package fanout

// This file lists and describes a stream's consumers, for the operator
// commands (consumers ls, consumers deregister) and doctor. The package's
// documentation is in register.go.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// MaxConsumersPerStream is Kinesis's limit of registered consumers per
// stream: RegisterStreamConsumer fails with LimitExceededException beyond it.
const MaxConsumersPerStream = 20

// ListAPI is the part of the Kinesis client ListStreamConsumers uses: the
// stream summary gives the stream's ARN, which the listing requires.
type ListAPI interface {
	DescribeStreamSummary(ctx context.Context, params *kinesis.DescribeStreamSummaryInput, optFns ...func(*kinesis.Options)) (*kinesis.DescribeStreamSummaryOutput, error)
	ListStreamConsumers(ctx context.Context, params *kinesis.ListStreamConsumersInput, optFns ...func(*kinesis.Options)) (*kinesis.ListStreamConsumersOutput, error)
}

// DescribeAPI is the part of the Kinesis client DescribeStreamConsumer uses.
type DescribeAPI interface {
	DescribeStreamConsumer(ctx context.Context, params *kinesis.DescribeStreamConsumerInput, optFns ...func(*kinesis.Options)) (*kinesis.DescribeStreamConsumerOutput, error)
}

// StreamConsumer is one registered consumer, as Kinesis describes it.
type StreamConsumer struct {
	Name      string
	ARN       string
	Status    types.ConsumerStatus
	CreatedAt time.Time
	// StreamARN is the stream it reads.
	StreamARN string
}

// Active reports whether SubscribeToShard can use the consumer.
func (c StreamConsumer) Active() bool { return c.Status == types.ConsumerStatusActive }

// ConsumerListing is every consumer of one stream.
type ConsumerListing struct {
	StreamName, StreamARN string
	// Consumers are sorted by name.
	Consumers []StreamConsumer
	// Pages is how many ListStreamConsumers requests the listing took.
	Pages int
}

// Names returns the consumers' names, sorted.
func (l *ConsumerListing) Names() []string {
	out := make([]string, len(l.Consumers))
	for i, c := range l.Consumers {
		out[i] = c.Name
	}
	return out
}

// Find returns the consumer of that name.
func (l *ConsumerListing) Find(name string) (StreamConsumer, bool) {
	for _, c := range l.Consumers {
		if c.Name == name {
			return c, true
		}
	}
	return StreamConsumer{}, false
}

// NearLimit reports whether the stream has at most a few registrations
// left before MaxConsumersPerStream.
func (l *ConsumerListing) NearLimit() bool { return len(l.Consumers) >= MaxConsumersPerStream-4 }

// UnknownConsumerError is a consumer name the stream does not have.
type UnknownConsumerError struct {
	Stream, Name string
	// Existing are the names the stream has, sorted.
	Existing []string
}

func (e *UnknownConsumerError) Error() string {
	if len(e.Existing) == 0 {
		return fmt.Sprintf("stream %q has no consumer %q: it has no registered consumers", e.Stream, e.Name)
	}
	return fmt.Sprintf("stream %q has no consumer %q; its consumers: %s", e.Stream, e.Name, strings.Join(e.Existing, ", "))
}

// ListOptions tune ListStreamConsumers.
type ListOptions struct {
	// PageSize is MaxResults per request; Kinesis's default (100) when 0.
	PageSize int32
}

// ListStreamConsumers lists the consumers registered on a stream, given by
// name or ARN, following NextToken.
func ListStreamConsumers(ctx context.Context, api ListAPI, stream string, opt ListOptions) (*ConsumerListing, error) {
	in := &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(stream)}
	if strings.HasPrefix(stream, "arn:") {
		in = &kinesis.DescribeStreamSummaryInput{StreamARN: aws.String(stream)}
	}
	sum, err := api.DescribeStreamSummary(ctx, in)
	if err != nil {
		return nil, err
	}
	d := sum.StreamDescriptionSummary
	l := &ConsumerListing{StreamName: aws.ToString(d.StreamName), StreamARN: aws.ToString(d.StreamARN)}
	if l.StreamARN == "" {
		return nil, fmt.Errorf("stream %q: DescribeStreamSummary gave no StreamARN", stream)
	}
	req := &kinesis.ListStreamConsumersInput{StreamARN: aws.String(l.StreamARN)}
	if opt.PageSize > 0 {
		req.MaxResults = aws.Int32(opt.PageSize)
	}
	for {
		out, err := api.ListStreamConsumers(ctx, req)
		if err != nil {
			return nil, err
		}
		l.Pages++
		for _, c := range out.Consumers {
			l.Consumers = append(l.Consumers, StreamConsumer{
				Name: aws.ToString(c.ConsumerName), ARN: aws.ToString(c.ConsumerARN), Status: c.ConsumerStatus,
				CreatedAt: aws.ToTime(c.ConsumerCreationTimestamp), StreamARN: l.StreamARN,
			})
		}
		if aws.ToString(out.NextToken) == "" || len(out.Consumers) == 0 {
			break
		}
		req.NextToken = out.NextToken
	}
	sort.Slice(l.Consumers, func(i, j int) bool { return l.Consumers[i].Name < l.Consumers[j].Name })
	return l, nil
}

// DescribeStreamConsumer describes one consumer by its ARN.
func DescribeStreamConsumer(ctx context.Context, api DescribeAPI, consumerARN string) (StreamConsumer, error) {
	out, err := api.DescribeStreamConsumer(ctx, &kinesis.DescribeStreamConsumerInput{ConsumerARN: aws.String(consumerARN)})
	if err != nil {
		return StreamConsumer{}, err
	}
	d := out.ConsumerDescription
	return StreamConsumer{
		Name: aws.ToString(d.ConsumerName), ARN: aws.ToString(d.ConsumerARN), Status: d.ConsumerStatus,
		CreatedAt: aws.ToTime(d.ConsumerCreationTimestamp), StreamARN: aws.ToString(d.StreamARN),
	}, nil
}
