package awserr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// sdkError wraps an API error the way the SDK returns it from a call:
// OperationError{ResponseError{HTTP status, the error}}.
func sdkError(service, op string, status int, err error) error {
	return &smithy.OperationError{ServiceID: service, OperationName: op, Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}}, Err: err},
		RequestID:     "req-1",
	}}
}

// sendError is a request that got no answer, as the SDK reports it.
func sendError(err error) error {
	return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "UpdateItem",
		Err: &smithyhttp.RequestSendError{Err: &url.Error{Op: "Post", URL: "https://dynamodb.us-east-1.amazonaws.com/", Err: err}}}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

var _ net.Error = timeoutErr{}

// Each case is one error value and the predicates it must satisfy; every
// predicate not listed must be false.
func TestClassify(t *testing.T) {
	type want map[string]bool
	cases := []struct {
		name string
		err  error
		want want
	}{
		{"nil", nil, want{}},
		{"plain error", errors.New("boom"), want{}},
		{"DynamoDB throttle (typed)", sdkError("DynamoDB", "UpdateItem", 400, &ddbtypes.ProvisionedThroughputExceededException{Message: new(string)}),
			want{"Throttled": true, "Retryable": true, "Transient": true, "RetryableRead": true}},
		{"DynamoDB ThrottlingException (generic)", sdkError("DynamoDB", "Scan", 400, &smithy.GenericAPIError{Code: "ThrottlingException"}),
			want{"Throttled": true, "Retryable": true, "Transient": true, "RetryableRead": true}},
		{"DynamoDB RequestLimitExceeded (typed)", sdkError("DynamoDB", "Scan", 400, &ddbtypes.RequestLimitExceeded{}),
			want{"Throttled": true, "Retryable": true, "Transient": true, "RetryableRead": true}},
		{"Kinesis read limit (typed)", sdkError("Kinesis", "GetRecords", 400, &kintypes.ProvisionedThroughputExceededException{}),
			want{"Throttled": true, "Retryable": true, "Transient": true, "RetryableRead": true}},
		{"Kinesis ListShards limit (typed)", sdkError("Kinesis", "ListShards", 400, &kintypes.LimitExceededException{}),
			want{"Throttled": true, "Retryable": true, "Transient": true, "RetryableRead": true}},
		{"KMS throttling (typed)", sdkError("Kinesis", "GetRecords", 400, &kintypes.KMSThrottlingException{}),
			want{"Throttled": true, "Retryable": true, "Transient": true, "RetryableRead": true}},
		{"DynamoDB InternalServerError (typed)", sdkError("DynamoDB", "UpdateItem", 500, &ddbtypes.InternalServerError{}),
			want{"Retryable": true, "Transient": true, "RetryableRead": true}},
		{"Kinesis InternalFailure (generic)", sdkError("Kinesis", "GetRecords", 500, &smithy.GenericAPIError{Code: "InternalFailure"}),
			want{"Retryable": true, "Transient": true, "RetryableRead": true}},
		{"KMSInternalException (generic)", sdkError("Kinesis", "GetRecords", 400, &smithy.GenericAPIError{Code: "KMSInternalException"}),
			want{"Retryable": true, "Transient": true, "RetryableRead": true}},
		// A 5xx without a code (a proxy's HTML page): a read retries it, a
		// write's outcome is unknown, so it is neither transient nor a refusal.
		{"5xx UnknownError", sdkError("DynamoDB", "UpdateItem", 502, &smithy.GenericAPIError{Code: "UnknownError"}),
			want{"RetryableRead": true}},
		{"condition failed (typed)", sdkError("DynamoDB", "UpdateItem", 400, &ddbtypes.ConditionalCheckFailedException{}),
			want{"ConditionFailed": true, "Rejected": true}},
		{"DynamoDB table not found (typed)", sdkError("DynamoDB", "DescribeTable", 400, &ddbtypes.ResourceNotFoundException{}),
			want{"NotFound": true, "Rejected": true}},
		{"Kinesis stream not found (typed)", sdkError("Kinesis", "ListShards", 400, &kintypes.ResourceNotFoundException{}),
			want{"NotFound": true, "Rejected": true}},
		{"expired iterator (typed)", sdkError("Kinesis", "GetRecords", 400, &kintypes.ExpiredIteratorException{}),
			want{"ExpiredIterator": true, "Rejected": true}},
		{"bad sequence number (typed)", sdkError("Kinesis", "GetShardIterator", 400, &kintypes.InvalidArgumentException{}),
			want{"BadSequence": true, "Rejected": true}},
		{"access denied (generic)", sdkError("DynamoDB", "Scan", 400, &smithy.GenericAPIError{Code: "AccessDeniedException"}),
			want{"AccessDenied": true, "Rejected": true}},
		{"Kinesis access denied (typed)", sdkError("Kinesis", "ListShards", 400, &kintypes.AccessDeniedException{}),
			want{"AccessDenied": true, "Rejected": true}},
		{"unknown key", sdkError("DynamoDB", "Scan", 400, &smithy.GenericAPIError{Code: "UnrecognizedClientException"}),
			want{"BadCredentials": true, "Rejected": true}},
		{"expired token", sdkError("DynamoDB", "Scan", 400, &smithy.GenericAPIError{Code: "ExpiredTokenException"}),
			want{"ExpiredCredentials": true, "Rejected": true}},
		// No answer: the write may or may not have been applied.
		{"connection refused", sendError(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}),
			want{"Transient": true, "RetryableRead": true}},
		{"connection reset", sendError(&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}),
			want{"Transient": true, "RetryableRead": true}},
		{"EOF", sendError(io.EOF), want{"Transient": true, "RetryableRead": true}},
		{"network timeout", sendError(timeoutErr{}), want{"Transient": true, "RetryableRead": true, "Timeout": true}},
		{"request deadline", sendError(context.DeadlineExceeded), want{"Transient": true, "RetryableRead": true, "Timeout": true}},
		{"bare request deadline", fmt.Errorf("get records: %w", context.DeadlineExceeded), want{"Transient": true, "RetryableRead": true, "Timeout": true}},
		// A request that could not be sent at all: *url.Error is a
		// net.Error, so whatever is inside it, the request was not answered.
		{"unsupported scheme", sendError(errors.New(`unsupported protocol scheme "htp"`)), want{"Transient": true, "RetryableRead": true}},
	}
	preds := map[string]func(error) bool{
		"Throttled": Throttled, "Retryable": Retryable, "Transient": Transient, "RetryableRead": RetryableRead,
		"Rejected": Rejected, "Timeout": Timeout, "NotFound": NotFound, "ConditionFailed": ConditionFailed,
		"BadSequence": BadSequence, "ExpiredIterator": ExpiredIterator, "AccessDenied": AccessDenied,
		"BadCredentials": BadCredentials, "ExpiredCredentials": ExpiredCredentials,
	}
	for _, c := range cases {
		for name, p := range preds {
			if got := p(c.err); got != c.want[name] {
				t.Errorf("%s: %s = %v, want %v (%v)", c.name, name, got, c.want[name], c.err)
			}
		}
	}
}

func TestCode(t *testing.T) {
	err := sdkError("Kinesis", "ListShards", 400, &kintypes.ExpiredNextTokenException{})
	if Code(err) != "ExpiredNextTokenException" || !Is(err, "ExpiredNextTokenException") || Is(err, "ResourceInUseException") {
		t.Errorf("Code = %q", Code(err))
	}
	if Code(errors.New("x")) != "" || Is(nil, "") {
		t.Error("a plain error or nil has a code")
	}
}
