// Package awserr classifies the errors of AWS calls, for every package of
// kcltool: whether to retry, whether a write may have been applied, and
// what to tell the user. One place, so that a code AWS adds is learnt once.
//
// The service answers with an error code (smithy.APIError) or the request
// never got a definite answer (a broken connection, a request deadline).
// The predicates are on codes, never on the SDK's typed exceptions, so that
// a code the SDK models for one service and not another (DynamoDB's and
// Kinesis's ResourceNotFoundException) is read the same.
package awserr

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Code returns the AWS error code of err, or "" when the service gave none.
func Code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// Is reports whether the service answered err with code, for codes only
// one call site cares about (ResourceInUseException, ExpiredNextTokenException).
func Is(err error, code string) bool { return err != nil && Code(err) == code }

// Throttled reports "too many requests": DynamoDB's provisioned throughput
// and request limits, Kinesis's per-shard read limits (5 calls, 2 MB per
// second), the control-plane call limits (LimitExceededException), and KMS
// throttling of encrypted streams. The request was not applied.
func Throttled(err error) bool {
	switch Code(err) {
	case "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded",
		"LimitExceededException", "KMSThrottlingException":
		return true
	}
	return false
}

// Retryable reports an answer that asks to be tried again: a throttle, or a
// fault the service names as its own (internal failure, unavailable).
func Retryable(err error) bool {
	if Throttled(err) {
		return true
	}
	switch Code(err) {
	case "InternalServerError", "ServiceUnavailable", "InternalFailure", "InternalFailureException",
		"ServiceUnavailableException", "KMSInternalException":
		return true
	}
	return false
}

// Transient reports an error worth another attempt of the same call, even a
// conditional write: a Retryable answer, or no answer at all (a broken or
// refused connection, or the call cut off by its own request deadline; the
// caller checks its parent context first). Any other error code is a
// definite answer and is not transient; in particular a server error
// without a known code (UnknownError) is not, because a write that got one
// may have been applied (see RetryableRead for reads).
func Transient(err error) bool {
	if err == nil {
		return false
	}
	if Retryable(err) {
		return true
	}
	if Code(err) != "" {
		return false // a definite answer from the service
	}
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "EOF")
}

// RetryableRead reports an error after which a read (or another call that
// is safe to repeat) is worth another try: a Transient one, or any server
// error (HTTP 5xx, or an answer without a code), which leaves a write's
// outcome unknown but cannot hurt a read. (A request that failed to be sent
// is Transient already: *url.Error is a net.Error.)
func RetryableRead(err error) bool {
	if Transient(err) || Code(err) == "UnknownError" {
		return true
	}
	var re *smithyhttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() >= 500
}

// Rejected reports a definite refusal: the service answered with a client
// error other than throttling (validation, access, a missing table), so a
// write was not applied and sending it again will not help. A server fault,
// a throttle, a broken connection or a timeout is not a refusal: after one
// of those a write's outcome is unknown unless it was throttled.
func Rejected(err error) bool {
	if Code(err) == "" || Retryable(err) {
		return false
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode() >= 400 && re.HTTPStatusCode() < 500
	}
	return true
}

// Timeout reports a request cut off by its own deadline.
func Timeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// NotFound reports ResourceNotFoundException: no such table, stream or
// shard (in this region and account).
func NotFound(err error) bool { return Is(err, "ResourceNotFoundException") }

// ConditionFailed reports a DynamoDB ConditionalCheckFailedException: the
// item was not in the state the write was conditioned on.
func ConditionFailed(err error) bool { return Is(err, "ConditionalCheckFailedException") }

// BadSequence reports Kinesis's InvalidArgumentException to a position in a
// shard: a sequence number the shard does not hold (trimmed, or of another
// shard).
func BadSequence(err error) bool { return Is(err, "InvalidArgumentException") }

// ExpiredIterator reports a shard iterator older than five minutes: a new
// one is needed.
func ExpiredIterator(err error) bool { return Is(err, "ExpiredIteratorException") }

// AccessDenied reports that the caller's identity may not make the call.
func AccessDenied(err error) bool {
	switch Code(err) {
	case "AccessDeniedException", "AccessDenied", "UnauthorizedOperation":
		return true
	}
	return false
}

// BadCredentials reports credentials AWS does not accept: an unknown key,
// or a signature made with the wrong secret.
func BadCredentials(err error) bool {
	switch Code(err) {
	case "UnrecognizedClientException", "InvalidSignatureException":
		return true
	}
	return false
}

// ExpiredCredentials reports temporary credentials AWS refused as expired.
func ExpiredCredentials(err error) bool {
	switch Code(err) {
	case "ExpiredTokenException", "ExpiredToken", "RequestExpired":
		return true
	}
	return false
}
