package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// docExampleTimeout bounds one example; the doctor examples watch for
// KCLTOOL_WINDOW (2 s here), the write examples sample for KCLTOOL_SAMPLE.
const docExampleTimeout = 60 * time.Second

// The streams and lease tables the docs name, with their shard counts
// (docs/reset.md resets shardId-000000000003 of orders). Lease tables have
// one lease per shard, TRIM_HORIZON, the first held by worker-a.
var (
	docStreams = map[string]int32{"orders": 4, "refunds": 1, "demo-orders": 2}
	docTables  = map[string]string{ // table: the stream its leases are of
		"orders": "orders", "orders-leases": "orders", "demo-orders": "demo-orders", "orders-audit": "orders",
	}
	// docConsumers are registered on the stream orders (docs/efo.md).
	docConsumers = []string{"billing", "billing-v1"}
)

// docSeeded seeds the local servers once per test binary: the names are the
// docs', so a second run (-count) finds them there and reuses them.
var docSeeded struct {
	once sync.Once
	err  error
}

// seedDocStack makes the streams, tables and consumers the examples name,
// and a working directory with the files they name: handler.sh,
// app.properties, orders.json (an export of orders) and, under a HOME of
// its own, the backup docs/reset.md imports.
func seedDocStack(t *testing.T, root string) docStackEnv {
	t.Helper()
	ddb, kin := emulator.DynamoDB(t), emulator.Kinesis(t)
	docSeeded.once.Do(func() { docSeeded.err = seedDocAWS(ddb, kin) })
	if docSeeded.err != nil {
		t.Fatalf("seed the docs' streams and tables: %v", docSeeded.err)
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	// S3 too: docs/reset.md keeps its backups in s3://team-backups/kcltool.
	env := docStackEnv{dir: dir, home: home, env: append(emulator.S3Env(t),
		"HOME="+home,
		// Flags the examples do not type: doctor watches 2 s instead of a
		// minute, reset --execute samples 1 s, and there is no local
		// CloudWatch to read.
		"KCLTOOL_WINDOW=2s", "KCLTOOL_FAILOVER_TIME=1s", "KCLTOOL_SAMPLE=1s", "KCLTOOL_NO_CLOUDWATCH=true",
		"KCLTOOL_LOG_FORMAT=json",
	)}
	handler, err := os.ReadFile(filepath.Join(root, "examples", "handler.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"handler.sh":     string(handler),
		"app.properties": "applicationName = orders\nstreamName = orders\nexecutableName = python3 app.py\ninitialPositionInStream = TRIM_HORIZON\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The files docs/reset.md imports: an export, and a reset's backup as
	// the docs name it (a backup is an export with a header of its own).
	backups := filepath.Join(home, ".local", "state", "kcltool", "backups")
	if err := os.MkdirAll(backups, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{filepath.Join(dir, "orders.json"), filepath.Join(backups, "kcltool-reset-orders-20261101T100512.000Z.backup.json")} {
		cmd := exec.Command(kcltoolBinary(t), "checkpoint", "export", "--app", "orders", "--file", file)
		cmd.Env = append(os.Environ(), env.env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("export orders to %s: %v\n%s", file, err, out)
		}
	}
	seedDocBucket(t, filepath.Join(backups, "kcltool-reset-orders-20261101T100512.000Z.backup.json"))
	return env
}

// seedDocBucket makes the bucket docs/reset.md shares backups in, holding
// the backup it imports from there (the same as the local one).
func seedDocBucket(t *testing.T, backup string) {
	t.Helper()
	c := emulator.S3(t)
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("team-backups")}); err != nil {
		var owned *s3types.BucketAlreadyOwnedByYou
		var exists *s3types.BucketAlreadyExists
		if !errors.As(err, &owned) && !errors.As(err, &exists) {
			t.Fatalf("create bucket team-backups: %v", err)
		}
	}
	body, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("team-backups"),
		Key: aws.String("kcltool/" + filepath.Base(backup)), Body: bytes.NewReader(body)}); err != nil {
		t.Fatalf("put the docs' backup in team-backups: %v", err)
	}
}

// The SDK's waiters wait 10 s (streams) and 20 s (tables) before a second
// look, and the local servers create them in 20 ms: a table still CREATING
// at the first look cost 20 s. Polled as emulator.CreateLeaseTable does.
func fastStreamWaiter(o *kinesis.StreamExistsWaiterOptions) {
	o.MinDelay, o.MaxDelay = 20*time.Millisecond, 200*time.Millisecond
}

func fastTableWaiter(o *dynamodb.TableExistsWaiterOptions) {
	o.MinDelay, o.MaxDelay = 20*time.Millisecond, 200*time.Millisecond
}

func seedDocAWS(ddb *dynamodb.Client, kin *kinesis.Client) error {
	ctx := context.Background()
	for name, shards := range docStreams {
		_, err := kin.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(name), ShardCount: aws.Int32(shards)})
		var inUse *kintypes.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) {
			return fmt.Errorf("create stream %s: %w", name, err)
		}
	}
	for name := range docStreams {
		if err := kinesis.NewStreamExistsWaiter(kin, fastStreamWaiter).Wait(ctx, &kinesis.DescribeStreamInput{StreamName: aws.String(name)}, 30*time.Second); err != nil {
			return fmt.Errorf("wait for stream %s: %w", name, err)
		}
	}
	// A few records, so that lag has something to measure.
	for i := range 8 {
		if _, err := kin.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String("orders"),
			PartitionKey: aws.String(fmt.Sprintf("k%d", i)), Data: fmt.Appendf(nil, `{"order":%d}`, i)}); err != nil {
			return err
		}
	}
	for table, stream := range docTables {
		_, err := ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String(table),
			BillingMode:          ddbtypes.BillingModePayPerRequest,
			KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("leaseKey"), KeyType: ddbtypes.KeyTypeHash}},
			AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("leaseKey"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		})
		var inUse *ddbtypes.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) {
			return fmt.Errorf("create table %s: %w", table, err)
		}
		if err := dynamodb.NewTableExistsWaiter(ddb, fastTableWaiter).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 30*time.Second); err != nil {
			return fmt.Errorf("wait for table %s: %w", table, err)
		}
		for i := range docStreams[stream] {
			l := leasecore.Lease{LeaseKey: fmt.Sprintf("shardId-%012d", i), LeaseCounter: 1,
				Checkpoint: leasecore.SequenceNumber{SequenceNumber: "TRIM_HORIZON"}}
			if i == 0 {
				l.LeaseOwner = "worker-a"
			}
			if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: leasecore.EncodeLease(l)}); err != nil {
				return fmt.Errorf("put lease %s in %s: %w", l.LeaseKey, table, err)
			}
		}
	}
	sum, err := kin.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("orders")})
	if err != nil {
		return err
	}
	for _, name := range docConsumers {
		_, err := kin.RegisterStreamConsumer(ctx, &kinesis.RegisterStreamConsumerInput{
			StreamARN: sum.StreamDescriptionSummary.StreamARN, ConsumerName: aws.String(name)})
		var inUse *kintypes.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) {
			return fmt.Errorf("register consumer %s: %w", name, err)
		}
	}
	return nil
}
