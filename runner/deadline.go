package runner

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
	"github.com/kcltool/kcltool/runner/metrics"
)

// Deadlines of AWS requests, one attempt each (docs/run.md, Timeouts). A
// request that is never answered (a connection stuck in the network, a
// load balancer that swallowed it) would otherwise block its caller for
// good: a shard's reader, the taker, shard sync. Each caller retries a
// request cut off by its deadline like a throttled one.
const (
	// DefaultKinesisTimeout is the KCL's kinesisRequestTimeout for
	// GetRecords, GetShardIterator and ListShards
	// (PollingConfig.DEFAULT_REQUEST_TIMEOUT, 30 s, used by
	// KinesisDataFetcher and KinesisShardDetector).
	DefaultKinesisTimeout = 30 * time.Second
	// DefaultDynamoDBTimeout is the KCL's dynamoDbRequestTimeout
	// (LeaseManagementConfig.DEFAULT_REQUEST_TIMEOUT, 1 minute). The lease
	// coordinator cuts its own requests shorter: a renewal, checkpoint or
	// take waits at most the renew interval, a page of the taker's scan at
	// most the failover time (leasecore.Config.RequestTimeout).
	DefaultDynamoDBTimeout = time.Minute
	// cloudWatchTimeout is the KCL's CloudWatchMetricsPublisher
	// PUT_TIMEOUT_MILLIS (5 s) for one PutMetricData.
	cloudWatchTimeout = 5 * time.Second
)

func withDeadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// deadlineKinesis gives every Kinesis request its own deadline. Shard
// reads first wait for one of the worker's read slots (readslots.go), when
// it has them; the deadline starts once the request is sent.
type deadlineKinesis struct {
	api   KinesisAPI
	d     time.Duration
	reads readSlots
}

func (k deadlineKinesis) ListShards(ctx context.Context, in *kinesis.ListShardsInput, opts ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error) {
	defer leasecore.LoopOf(ctx).Beat() // a call that returned, failed or not, is progress (leasecore/health.go)
	ctx, cancel := withDeadline(ctx, k.d)
	defer cancel()
	return k.api.ListShards(ctx, in, opts...)
}

func (k deadlineKinesis) GetShardIterator(ctx context.Context, in *kinesis.GetShardIteratorInput, opts ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error) {
	defer leasecore.LoopOf(ctx).Beat() // a call that returned, failed or not, is progress (leasecore/health.go)
	if err := k.acquire(ctx); err != nil {
		return nil, err
	}
	defer k.reads.release()
	ctx, cancel := withDeadline(ctx, k.d)
	defer cancel()
	return k.api.GetShardIterator(ctx, in, opts...)
}

func (k deadlineKinesis) GetRecords(ctx context.Context, in *kinesis.GetRecordsInput, opts ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error) {
	defer leasecore.LoopOf(ctx).Beat() // a call that returned, failed or not, is progress (leasecore/health.go)
	if err := k.acquire(ctx); err != nil {
		return nil, err
	}
	defer k.reads.release()
	ctx, cancel := withDeadline(ctx, k.d)
	defer cancel()
	return k.api.GetRecords(ctx, in, opts...)
}

// acquire waits for a read slot, parked: the slots are held by other
// readers' calls, which have deadlines, so the wait is not a wedged reader.
func (k deadlineKinesis) acquire(ctx context.Context) error {
	l := leasecore.LoopOf(ctx)
	l.Park()
	defer l.Unpark()
	return k.reads.acquire(ctx)
}

// DescribeStreamSummary passes on to a client that has it: multi-stream
// mode asks for each stream's account and creation time
// (runner/multistream.go).
func (k deadlineKinesis) DescribeStreamSummary(ctx context.Context, in *kinesis.DescribeStreamSummaryInput, opts ...func(*kinesis.Options)) (*kinesis.DescribeStreamSummaryOutput, error) {
	defer leasecore.LoopOf(ctx).Beat() // a call that returned, failed or not, is progress (leasecore/health.go)
	api, ok := k.api.(reshard.DescribeStreamSummaryAPI)
	if !ok {
		return nil, errors.New("multi-stream mode needs DescribeStreamSummary on the Kinesis client")
	}
	ctx, cancel := withDeadline(ctx, k.d)
	defer cancel()
	return api.DescribeStreamSummary(ctx, in, opts...)
}

// deadlineDynamoDB gives every DynamoDB request its own deadline, and,
// with units, counts the capacity each lease-table call consumed under the
// operation its context names (leasecore.WithCapacityOp).
type deadlineDynamoDB struct {
	api   DynamoDBAPI
	d     time.Duration
	units *leasecore.Capacity
}

// Options passes the client's options through, so that errors can still
// name the region (leasecore's regionOf).
func (c deadlineDynamoDB) Options() dynamodb.Options {
	if o, ok := c.api.(interface{ Options() dynamodb.Options }); ok {
		return o.Options()
	}
	return dynamodb.Options{}
}

func (c deadlineDynamoDB) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	defer leasecore.LoopOf(ctx).Beat() // a call that returned, failed or not, is progress (leasecore/health.go)
	ctx, cancel := withDeadline(ctx, c.d)
	defer cancel()
	out, err := c.api.Scan(ctx, in, opts...)
	c.units.RecordScan(ctx, in, out, err)
	return out, err
}

func (c deadlineDynamoDB) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	defer leasecore.LoopOf(ctx).Beat() // a call that returned, failed or not, is progress (leasecore/health.go)
	ctx, cancel := withDeadline(ctx, c.d)
	defer cancel()
	out, err := c.api.Query(ctx, in, opts...)
	c.units.RecordQuery(ctx, in, out, err)
	return out, err
}

func (c deadlineDynamoDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	defer leasecore.LoopOf(ctx).Beat() // a call that returned, failed or not, is progress (leasecore/health.go)
	ctx, cancel := withDeadline(ctx, c.d)
	defer cancel()
	out, err := c.api.GetItem(ctx, in, opts...)
	c.units.RecordGetItem(ctx, in, out, err)
	return out, err
}

func (c deadlineDynamoDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	defer leasecore.LoopOf(ctx).Beat() // a call that returned, failed or not, is progress (leasecore/health.go)
	ctx, cancel := withDeadline(ctx, c.d)
	defer cancel()
	out, err := c.api.UpdateItem(ctx, in, opts...)
	c.units.RecordUpdateItem(ctx, in, out, err)
	return out, err
}

func (c deadlineDynamoDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	defer leasecore.LoopOf(ctx).Beat() // a call that returned, failed or not, is progress (leasecore/health.go)
	ctx, cancel := withDeadline(ctx, c.d)
	defer cancel()
	out, err := c.api.PutItem(ctx, in, opts...)
	c.units.RecordPutItem(ctx, in, out, err)
	return out, err
}

func (c deadlineDynamoDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	defer leasecore.LoopOf(ctx).Beat() // a call that returned, failed or not, is progress (leasecore/health.go)
	ctx, cancel := withDeadline(ctx, c.d)
	defer cancel()
	out, err := c.api.DeleteItem(ctx, in, opts...)
	c.units.RecordDeleteItem(ctx, in, out, err)
	return out, err
}

func (c deadlineDynamoDB) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	defer leasecore.LoopOf(ctx).Beat() // a call that returned, failed or not, is progress (leasecore/health.go)
	ctx, cancel := withDeadline(ctx, c.d)
	defer cancel()
	return c.api.DescribeTable(ctx, in, opts...)
}

func (c deadlineDynamoDB) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	defer leasecore.LoopOf(ctx).Beat() // a call that returned, failed or not, is progress (leasecore/health.go)
	ctx, cancel := withDeadline(ctx, c.d)
	defer cancel()
	return c.api.CreateTable(ctx, in, opts...)
}

// deadlineCloudWatch gives every PutMetricData its own deadline.
type deadlineCloudWatch struct {
	api metrics.CloudWatchAPI
	d   time.Duration
}

func (c deadlineCloudWatch) PutMetricData(ctx context.Context, in *cloudwatch.PutMetricDataInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricDataOutput, error) {
	ctx, cancel := withDeadline(ctx, c.d)
	defer cancel()
	return c.api.PutMetricData(ctx, in, opts...)
}
