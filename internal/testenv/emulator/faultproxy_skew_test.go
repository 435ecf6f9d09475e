package emulator

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/smithy-go"
)

// With a clock offset, a client that ignores the server's clock is refused
// every time, as AWS refuses it (InvalidSignatureException, the message
// AWS writes); the SDK's own client is refused once, learns the offset
// from that answer's Date, and signs the next call right (or, with retries
// on, the same call's second attempt). Answers that pass carry the shifted
// Date too.
func TestFaultProxyClockOffset(t *testing.T) {
	stream := Name(t, "s")
	CreateStream(t, Kinesis(t), stream, 1)
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		offset time.Duration
		msg    string
	}{
		{"server ahead", 10 * time.Minute, "Signature expired: "},
		{"server behind", -10 * time.Minute, "Signature not yet current: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			kp := NewFaultProxy(t, KinesisEndpoint(t), Throttle, 0, "", 1)
			kp.SetClockOffset(c.offset)
			kin := func(fn func(*kinesis.Options)) *kinesis.Client {
				return kinesis.NewFromConfig(Config(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(kp.URL) }, fn)
			}
			in := &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(stream)}

			blind := kin(func(o *kinesis.Options) { o.DisableClockSkewCorrection = true })
			for i := 0; i < 3; i++ {
				_, err := blind.DescribeStreamSummary(ctx, in)
				var ae smithy.APIError
				if !errors.As(err, &ae) || ae.ErrorCode() != "InvalidSignatureException" || !containsAll(ae.ErrorMessage(), c.msg, " 5 min.)") {
					t.Fatalf("call %d without skew correction: %v, want InvalidSignatureException %q", i+1, err, c.msg)
				}
			}

			once := kin(func(o *kinesis.Options) { o.RetryMaxAttempts = 1 })
			if _, err := once.DescribeStreamSummary(ctx, in); code(err) != "InvalidSignatureException" {
				t.Fatalf("first call, one attempt: %v, want InvalidSignatureException", err)
			}
			out, err := once.DescribeStreamSummary(ctx, in)
			if err != nil {
				t.Fatalf("second call, one attempt: %v, want the offset learned from the refusal", err)
			}
			if at, ok := awsmiddleware.GetServerTime(out.ResultMetadata); !ok || absDur(time.Until(at)-c.offset) > time.Minute {
				t.Fatalf("answer's Date %v (found %v), want now %+v", at, ok, c.offset)
			}
			if _, err := kin(func(*kinesis.Options) {}).DescribeStreamSummary(ctx, in); err != nil {
				t.Fatalf("first call with the SDK's retries: %v", err)
			}
			if n := kp.Refused("DescribeStreamSummary"); n != 3+1+1 {
				t.Fatalf("%d refused, want 5 (3 without correction, 1 each with it)", n)
			}

			dp := NewFaultProxy(t, DynamoDBEndpoint(t), Throttle, 0, "", 1)
			dp.SetClockOffset(c.offset)
			ddb := dynamodb.NewFromConfig(Config(), func(o *dynamodb.Options) {
				o.BaseEndpoint = aws.String(dp.URL)
				o.RetryMaxAttempts = 1
			})
			if _, err := ddb.ListTables(ctx, &dynamodb.ListTablesInput{}); code(err) != "InvalidSignatureException" {
				t.Fatalf("DynamoDB, first call: %v, want InvalidSignatureException", err)
			}
			if _, err := ddb.ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
				t.Fatalf("DynamoDB, second call: %v", err)
			}
		})
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
