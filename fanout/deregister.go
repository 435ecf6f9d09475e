package fanout

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
)

// DeregisterAPI is the part of the Kinesis client DeregisterStreamConsumer
// uses.
type DeregisterAPI interface {
	DeregisterStreamConsumer(ctx context.Context, params *kinesis.DeregisterStreamConsumerInput, optFns ...func(*kinesis.Options)) (*kinesis.DeregisterStreamConsumerOutput, error)
}

// DeregisterStreamConsumer deregisters a consumer by its ARN. The ARN, not
// the stream and name: it carries the creation time, so a consumer
// registered again under the same name after the caller looked (a new ARN)
// is never the one deregistered. Kinesis moves the consumer to DELETING; it
// is gone some seconds later, and no subscription can use it from then on.
func DeregisterStreamConsumer(ctx context.Context, api DeregisterAPI, consumerARN string) error {
	_, err := api.DeregisterStreamConsumer(ctx, &kinesis.DeregisterStreamConsumerInput{ConsumerARN: aws.String(consumerARN)})
	return err
}
