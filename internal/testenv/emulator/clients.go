package emulator

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// TB is the part of testing.TB the helpers need, so that testscript
// commands can use them too.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Region is the region every local client uses.
const Region = "us-east-1"

// Main runs a test binary's tests and stops the servers they started. Use it
// from TestMain: os.Exit(emulator.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	StopAll()
	return code
}

// DynamoDBEndpoint starts dynalite if needed and returns its URL, failing the
// test (never skipping it) when the server cannot run.
func DynamoDBEndpoint(tb TB) string {
	tb.Helper()
	ep, err := start("dynalite")
	if err != nil {
		tb.Fatalf("%v", err)
	}
	return ep
}

// KinesisEndpoint starts kinesis-local if needed and returns its URL.
func KinesisEndpoint(tb TB) string {
	tb.Helper()
	ep, err := start("kinesis-local")
	if err != nil {
		tb.Fatalf("%v", err)
	}
	return ep
}

// Config is an aws.Config with static local credentials and no shared-config
// lookups, so tests never reach real AWS.
func Config() aws.Config {
	return aws.Config{
		Region:      Region,
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
	}
}

// DynamoDB returns a client for the local DynamoDB server.
func DynamoDB(tb TB) *dynamodb.Client {
	tb.Helper()
	ep := DynamoDBEndpoint(tb)
	return dynamodb.NewFromConfig(Config(), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(ep) })
}

// Kinesis returns a client for the local Kinesis server.
func Kinesis(tb TB) *kinesis.Client {
	tb.Helper()
	ep := KinesisEndpoint(tb)
	return kinesis.NewFromConfig(Config(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(ep) })
}

// Env returns the environment a kcltool process needs to reach the local
// servers that this test binary has started (or starts now).
func Env(tb TB) []string {
	tb.Helper()
	return []string{
		"AWS_ENDPOINT_URL_DYNAMODB=" + DynamoDBEndpoint(tb),
		"AWS_ENDPOINT_URL_KINESIS=" + KinesisEndpoint(tb),
		"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"AWS_REGION=" + Region, "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
	}
}

var seq atomic.Int64

// Name returns a table or stream name unique within this test binary run.
func Name(tb testing.TB, prefix string) string {
	r := strings.NewReplacer("/", "-", " ", "-", "#", "-")
	n := fmt.Sprintf("%s-%s-%d-%d", prefix, r.Replace(tb.Name()), os.Getpid(), seq.Add(1))
	if len(n) > 120 {
		n = n[len(n)-120:]
	}
	return strings.Trim(n, "-.")
}

// CreateLeaseTable creates a lease table shaped as the KCL creates it
// (PAY_PER_REQUEST, hash key leaseKey of type S) and waits until it is active.
func CreateLeaseTable(tb TB, c *dynamodb.Client, name string) {
	tb.Helper()
	ctx := context.Background()
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("leaseKey"), KeyType: ddbtypes.KeyTypeHash}},
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("leaseKey"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
	})
	if err != nil {
		tb.Fatalf("create lease table %s: %v", name, err)
	}
	w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 20 * time.Millisecond
		o.MaxDelay = 200 * time.Millisecond
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 30*time.Second); err != nil {
		tb.Fatalf("wait for lease table %s: %v", name, err)
	}
}

// CreateStream creates a stream with n shards and waits until it is active.
func CreateStream(tb TB, c *kinesis.Client, name string, shards int32) {
	tb.Helper()
	ctx := context.Background()
	_, err := c.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(name), ShardCount: aws.Int32(shards)})
	if err != nil {
		tb.Fatalf("create stream %s: %v", name, err)
	}
	WaitStreamActive(tb, c, name)
}

// WaitStreamActive polls until the stream is ACTIVE, as a client of real
// Kinesis would after CreateStream, SplitShard or MergeShards.
func WaitStreamActive(tb TB, c *kinesis.Client, name string) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		out, err := c.DescribeStreamSummary(context.Background(), &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(name)})
		if err == nil && out.StreamDescriptionSummary.StreamStatus == kintypes.StreamStatusActive {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("stream %s not ACTIVE after 30s", name)
}

// CreateKCL3LeaseTable creates a lease table as KCL 3.x does: CreateLeaseTable's
// shape plus the LeaseOwnerToLeaseKeyIndex (hash leaseOwner, range leaseKey,
// KEYS_ONLY), in the CreateTable call as KCL 3.5 creates a new table. (An
// existing table gets it by UpdateTable, which dynalite does through
// scripts/dynalite-gsi.cjs: `migration start`.)
func CreateKCL3LeaseTable(tb TB, c *dynamodb.Client, name string) {
	tb.Helper()
	ctx := context.Background()
	s := func(n string) ddbtypes.AttributeDefinition {
		return ddbtypes.AttributeDefinition{AttributeName: aws.String(n), AttributeType: ddbtypes.ScalarAttributeTypeS}
	}
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("leaseKey"), KeyType: ddbtypes.KeyTypeHash}},
		AttributeDefinitions: []ddbtypes.AttributeDefinition{s("leaseKey"), s("leaseOwner")},
		GlobalSecondaryIndexes: []ddbtypes.GlobalSecondaryIndex{{
			IndexName: aws.String("LeaseOwnerToLeaseKeyIndex"),
			KeySchema: []ddbtypes.KeySchemaElement{
				{AttributeName: aws.String("leaseOwner"), KeyType: ddbtypes.KeyTypeHash},
				{AttributeName: aws.String("leaseKey"), KeyType: ddbtypes.KeyTypeRange},
			},
			Projection: &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeKeysOnly},
		}},
	})
	if err != nil {
		tb.Fatalf("create KCL 3.x lease table %s: %v", name, err)
	}
	w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 20 * time.Millisecond
		o.MaxDelay = 200 * time.Millisecond
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 30*time.Second); err != nil {
		tb.Fatalf("wait for lease table %s: %v", name, err)
	}
}
