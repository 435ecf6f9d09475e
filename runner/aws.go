package runner

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	smithy "github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/kcltool/kcltool/leasecore"
)

// KinesisAPI is the part of the Kinesis client a worker calls, with the
// SDK's own signatures so that *kinesis.Client satisfies it.
type KinesisAPI interface {
	ListShards(ctx context.Context, params *kinesis.ListShardsInput, optFns ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error)
	GetShardIterator(ctx context.Context, params *kinesis.GetShardIteratorInput, optFns ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, params *kinesis.GetRecordsInput, optFns ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error)
}

// DynamoDBAPI is the part of the DynamoDB client a worker calls: the lease
// coordinator's reads and conditional writes, table setup, lease creation by
// shard sync and shard end, and the deletion of finished parents.
type DynamoDBAPI interface {
	leasecore.CoordinatorAPI
	leasecore.TableAPI
	PutItem(ctx context.Context, params *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(ctx context.Context, params *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// noSDKRetries turns the SDK's retryer off for one Kinesis call: the fetch
// loop retries itself, with jitter, forever and within its context, and
// counts throttles. The SDK's standard retryer would also draw on a retry
// quota that sustained throttling empties, after which it fails fast.
func noSDKRetries(o *kinesis.Options) { o.RetryMaxAttempts = 1 }

// errorCode returns the AWS error code of err, or "".
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// isThrottle reports the Kinesis errors that mean "too many requests": the
// per-shard read limits (5 calls, 2 MB per second), the control-plane call
// limit and KMS throttling of encrypted streams.
func isThrottle(err error) bool {
	switch errorCode(err) {
	case "ProvisionedThroughputExceededException", "LimitExceededException", "ThrottlingException",
		"KMSThrottlingException", "RequestLimitExceeded":
		return true
	}
	return false
}

// isTransient reports faults worth another try after a pause: throttling,
// server errors, and connections that broke.
func isTransient(err error) bool {
	if isThrottle(err) {
		return true
	}
	switch errorCode(err) {
	case "InternalFailure", "InternalFailureException", "InternalServerError", "ServiceUnavailable",
		"ServiceUnavailableException", "KMSInternalException", "UnknownError":
		return true
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() >= 500 {
		return true
	}
	var ue *url.Error
	var ne net.Error
	// DeadlineExceeded: the request's own deadline (deadline.go) cut it
	// off; callers check their own context first.
	return errors.As(err, &ue) || errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) || leasecore.Transient(err)
}

// isTimeout reports a request cut off by its own deadline.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// isExpiredIterator: the iterator is older than five minutes (a handler ran
// long while the prefetch buffer was full); a new one is needed.
func isExpiredIterator(err error) bool {
	return errorCode(err) == "ExpiredIteratorException"
}
