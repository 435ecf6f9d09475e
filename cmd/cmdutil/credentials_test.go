package cmdutil

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
	"github.com/aws/smithy-go"
)

// Temporary keys that AWS refuses as expired are a credentials problem,
// not a missing IAM permission; a credential failure wrapped in a request's
// error is never mistaken for the request's endpoint being unreachable.
func TestExplainCredentialsClassifiesByType(t *testing.T) {
	expired := &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "DescribeTable",
		Err: &smithy.GenericAPIError{Code: "ExpiredTokenException", Message: "The security token included in the request is expired"}}
	got := ExplainCredentials(ExplainAWS(expired, AWSContext{Table: "orders", Region: "us-east-1"}))
	if !strings.HasPrefix(got.Error(), "the AWS credentials have expired: get new ones") {
		t.Errorf("expired token: %v", got)
	}
	// The EC2 metadata client's connection error inside a credential
	// failure inside DynamoDB's request error.
	imds := &url.Error{Op: "Get", URL: "http://169.254.169.254/latest/api/token", Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}}
	creds := &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "DescribeTable",
		Err: fmt.Errorf("get identity: %w", &CredentialsError{Provider: ec2rolecreds.New(), Err: fmt.Errorf("no EC2 IMDS role found, %w", imds)})}
	got = ExplainCredentials(ExplainAWS(creds, AWSContext{Table: "orders", Region: "us-east-1"}))
	if !strings.HasPrefix(got.Error(), "no AWS credentials found") {
		t.Errorf("credential failure: %v", got)
	}
	var ee *ExplainedError
	if !errors.As(got, &ee) || !strings.Contains(ee.Raw.Error(), "connection refused") {
		t.Errorf("the SDK's text is not kept for the debug log: %#v", got)
	}
	// Anything else passes through untouched.
	other := errors.New("lease table is gone")
	if ExplainCredentials(other) != other {
		t.Error("an unrelated error was rewritten")
	}
}
