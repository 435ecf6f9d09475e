package fanout

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/internal/awserr"
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

// DeregisterConfirmAPI is what Deregister calls.
type DeregisterConfirmAPI interface {
	DeregisterAPI
	DescribeAPI
}

// NotActiveError is a deregistration Kinesis refused because the consumer
// was not ACTIVE at that moment: still CREATING, or already on its way out
// (Status is "gone" when it no longer exists).
type NotActiveError struct {
	Name   string
	Status string
	Err    error
}

func (e *NotActiveError) Error() string {
	if e.Status == string(types.ConsumerStatusCreating) {
		return fmt.Sprintf("consumer %q is CREATING: Kinesis deregisters only ACTIVE consumers; run again once it is ACTIVE (seconds after it was registered)", e.Name)
	}
	return fmt.Sprintf("consumer %q is no longer ACTIVE (%s), so Kinesis did not deregister it: %v", e.Name, e.Status, e.Err)
}

func (e *NotActiveError) Unwrap() error { return e.Err }

// Deregister deregisters c (by its ARN) and returns the consumer as
// Kinesis describes it afterwards: DELETING, or c marked DELETING when it
// is already gone. A consumer whose state changed since c was read (Kinesis
// answers ResourceInUse) is a *NotActiveError.
func Deregister(ctx context.Context, api DeregisterConfirmAPI, c StreamConsumer) (StreamConsumer, error) {
	if err := DeregisterStreamConsumer(ctx, api, c.ARN); err != nil {
		if !awserr.Is(err, "ResourceInUseException") {
			return StreamConsumer{}, err
		}
		status := "gone"
		if now, derr := DescribeStreamConsumer(ctx, api, c.ARN); derr == nil {
			status = string(now.Status)
		}
		return StreamConsumer{}, &NotActiveError{Name: c.Name, Status: status, Err: err}
	}
	after, err := DescribeStreamConsumer(ctx, api, c.ARN)
	switch {
	case awserr.NotFound(err):
		after, after.Status = c, types.ConsumerStatusDeleting // already gone
	case err != nil:
		return StreamConsumer{}, err
	}
	return after, nil
}
