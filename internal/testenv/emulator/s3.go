package emulator

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3Endpoint starts s3rver if needed and returns its URL. Only the tests of
// S3 backups start it: Env leaves it out, so the other tests pay nothing.
func S3Endpoint(tb TB) string {
	tb.Helper()
	ep, err := start("s3rver")
	if err != nil {
		tb.Fatalf("%v", err)
	}
	return ep
}

// S3Env is Env with the local S3 server: AWS_ENDPOINT_URL_S3, the variable
// the SDK reads for S3 alone.
func S3Env(tb TB) []string {
	tb.Helper()
	return append(Env(tb), "AWS_ENDPOINT_URL_S3="+S3Endpoint(tb))
}

// S3 returns a client for the local S3 server, with path-style addressing
// (bucket in the path, not the host name), as kcltool's own client uses.
func S3(tb TB) *s3.Client {
	tb.Helper()
	ep := S3Endpoint(tb)
	return s3.NewFromConfig(Config(), func(o *s3.Options) {
		o.BaseEndpoint = aws.String(ep)
		o.UsePathStyle = true
	})
}

// Bucket returns a bucket name unique within this test binary run. S3 allows
// only 3 to 63 lower-case letters, digits, dots and hyphens, so unlike Name
// it does not carry the test's name.
func Bucket(tb testing.TB) string {
	return fmt.Sprintf("kcltool-%d-%d", os.Getpid(), seq.Add(1))
}

// CreateBucket creates a bucket on the local S3 server.
func CreateBucket(tb TB, c *s3.Client, name string) {
	tb.Helper()
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		tb.Fatalf("create bucket %s: %v", name, err)
	}
}
