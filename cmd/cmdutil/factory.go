package cmdutil

import (
	"context"
	"github.com/kcltool/kcltool/internal/clock"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kcltool/kcltool/reshard"
)

// Factory hands commands their dependencies. AWS configuration is loaded
// lazily, on the first client a command asks for, so --help, --version and
// flag errors never read credentials or touch the network.
type Factory struct {
	IO     *IOStreams
	Clock  clock.Clock
	Getenv func(string) string
	// Environ is the environment run's handlers inherit; runner never
	// reads it itself. NewFactory sets os.Environ.
	Environ func() []string

	// Set by the root command's persistent flags.
	Region, Profile, EndpointURL string
	// KinesisEndpoint and DynamoDBEndpoint override one service's endpoint
	// each (run --properties: kinesisEndpoint, dynamoDBEndpoint); they stay
	// per service, as the MultiLangDaemon keeps them.
	KinesisEndpoint, DynamoDBEndpoint string
	// Credentials, when set, replaces the credential chain the SDK loaded;
	// it gets that chain to fall back on (run --properties:
	// AwsCredentialsProvider).
	Credentials func(loaded aws.CredentialsProvider) aws.CredentialsProvider
	// Log is the structured log on stderr, built from --log-level and
	// --log-format before a command runs; nil (shell completion) discards.
	Log *slog.Logger

	once sync.Once
	cfg  aws.Config
	err  error
}

// NewFactory returns a Factory over the given streams and environment.
func NewFactory(io *IOStreams, getenv func(string) string) *Factory {
	return &Factory{IO: io, Clock: clock.RealClock(), Getenv: getenv, Environ: os.Environ}
}

// Logger is Log, or a logger that discards when none was built.
func (f *Factory) Logger() *slog.Logger {
	if f.Log == nil {
		return discardLogger
	}
	return f.Log
}

// AWSConfig loads the standard credential chain once, with --region,
// --profile and --endpoint-url applied. The SDK itself honours
// AWS_ENDPOINT_URL_DYNAMODB, _KINESIS and _CLOUDWATCH.
func (f *Factory) AWSConfig(ctx context.Context) (aws.Config, error) {
	f.once.Do(func() {
		opts := []func(*config.LoadOptions) error{
			// The SDK's messages go to our log at debug, never straight to
			// the terminal (see sdkLogger).
			config.WithLogger(sdkLogger{log: f.Logger}),
			// Throttled lease-table reads are retried with backoff and jitter;
			// more attempts than the SDK's 3 so a busy table still lists.
			config.WithRetryer(func() aws.Retryer {
				return retry.NewStandard(func(o *retry.StandardOptions) {
					o.MaxAttempts = 6
					o.MaxBackoff = 5 * time.Second
				})
			}),
		}
		if f.Region != "" {
			opts = append(opts, config.WithRegion(f.Region))
		}
		if f.Profile != "" {
			opts = append(opts, config.WithSharedConfigProfile(f.Profile))
		}
		if f.EndpointURL != "" {
			opts = append(opts, config.WithBaseEndpoint(f.EndpointURL))
		}
		if f.Logger().Enabled(ctx, slog.LevelDebug) {
			// Retries are what an operator debugging a slow command wants
			// to see; request and response bodies would hold lease data.
			opts = append(opts, config.WithClientLogMode(aws.LogRetries))
		}
		f.cfg, f.err = config.LoadDefaultConfig(ctx, opts...)
		if f.err == nil && f.Credentials != nil {
			f.cfg.Credentials = f.Credentials(f.cfg.Credentials)
		}
		if f.err == nil {
			f.cfg.Credentials = markCredentialErrors(f.cfg.Credentials, sharedProfile(f.cfg))
		}
		if bc, ok := f.cfg.HTTPClient.(*awshttp.BuildableClient); ok {
			// Options added to the SDK's own client keep what the config
			// set up on it, such as AWS_CA_BUNDLE.
			f.cfg.HTTPClient = bc.WithTransportOptions(keepIdleConns)
		}
		if f.err == nil && f.cfg.Region == "" {
			f.err = errNoRegion(f.cfg)
		}
	})
	return f.cfg, f.err
}

// idleConnsPerHost is how many idle connections to one service endpoint the
// HTTP client keeps for reuse. The SDK keeps 10, and a worker sends more at
// once than that: a renewal round of 20 leases, a checkpoint per running
// handler, a GetRecords per shard catching up. Every connection beyond 10
// was closed when its request ended and dialled again for the next round,
// each time a new TCP and TLS handshake. A test counts the new connections
// through a proxy; docs/benchmarks.md has the counts with either setting.
// Idle connections still close after the transport's IdleConnTimeout.
const idleConnsPerHost = 256

func keepIdleConns(t *http.Transport) {
	t.MaxIdleConnsPerHost = idleConnsPerHost
	t.MaxIdleConns = 2 * idleConnsPerHost // across DynamoDB, Kinesis and CloudWatch
}

// DynamoDB returns a DynamoDB client.
func (f *Factory) DynamoDB(ctx context.Context) (*dynamodb.Client, error) {
	cfg, err := f.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if f.DynamoDBEndpoint != "" {
			o.BaseEndpoint = aws.String(f.DynamoDBEndpoint)
		}
	}), nil
}

// Kinesis returns a Kinesis client.
func (f *Factory) Kinesis(ctx context.Context) (*kinesis.Client, error) {
	cfg, err := f.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return kinesis.NewFromConfig(cfg, func(o *kinesis.Options) {
		if f.KinesisEndpoint != "" {
			o.BaseEndpoint = aws.String(f.KinesisEndpoint)
		}
	}), nil
}

// CloudWatch returns a CloudWatch client.
func (f *Factory) CloudWatch(ctx context.Context) (*cloudwatch.Client, error) {
	cfg, err := f.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return cloudwatch.NewFromConfig(cfg), nil
}

// S3 returns an S3 client (the backups of checkpoint reset and import in
// --backup-dir s3://...), on the same configuration as the other clients:
// --region, --profile, --endpoint-url, and AWS_ENDPOINT_URL_S3, which the
// SDK honours for S3 alone. Path-style addressing (the bucket in the path,
// not in the host name) works against local S3 servers, whose host names
// do not resolve per bucket, and against AWS as well.
func (f *Factory) S3(ctx context.Context) (*s3.Client, error) {
	cfg, err := f.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }), nil
}

// AWSContext describes the target for error messages.
func (f *Factory) AWSContext(table, stream string) AWSContext {
	return AWSContext{Table: table, Stream: stream, Region: f.cfg.Region}
}

// RetryFor is the throttling retry policy of Kinesis listing calls: the
// factory's clock, the default attempt count.
func RetryFor(f *Factory) reshard.Retry {
	return reshard.Retry{Clock: f.Clock}
}
