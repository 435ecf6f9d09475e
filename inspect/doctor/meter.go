package doctor

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
)

// ReadCost is what a doctor run cost in requests: operators run it against
// production tables and streams, so it says what it spent.
type ReadCost struct {
	// Scans are full reads of the lease table; Pages the Scan requests they took.
	Scans, Pages int
	// LegacyScans are Scan requests to KCL 3.0–3.4's CoordinatorState and
	// WorkerMetricStats tables (one each, to learn they do not exist).
	LegacyScans int
	// Coordination counts the requests that read the KCL 3.x coordination
	// state (cv, tm, the index, the leader lock once per read, the worker
	// metrics once per report): DescribeTable, GetItem and Scan pages, in
	// whichever tables the layout keeps them.
	Coordination int
	// DescribeTable counts table descriptions (the lease table and any legacy table).
	DescribeTable int
	// ReadCapacityUnits is the capacity the Scans consumed, as DynamoDB reported it.
	ReadCapacityUnits float64
	// GetRecords counts the lag probes (each with one GetShardIterator).
	GetRecords int
	// ListShards and DescribeStream count the Kinesis listing requests.
	ListShards, DescribeStream int
	// ListStreamConsumers counts the listings of enhanced fan-out consumers.
	ListStreamConsumers int
	// GetMetricData counts CloudWatch requests; Metrics the queries they carried.
	GetMetricData, Metrics int
}

// meter counts the requests that pass through it. The metered clients wrap
// the caller's, so the count is of requests sent, retries included.
type meter struct {
	mu   sync.Mutex
	cost ReadCost
}

func (m *meter) note(f func(c *ReadCost)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(&m.cost)
}

// take returns what was counted since the last take.
func (m *meter) take() ReadCost {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.cost
	m.cost = ReadCost{}
	return c
}

// meteredTable counts DescribeTable and Scan pages, and asks DynamoDB for
// the capacity each page consumed.
type meteredTable struct {
	api TableAPI
	m   *meter
}

func (t meteredTable) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	t.m.note(func(c *ReadCost) { c.DescribeTable++ })
	return t.api.DescribeTable(ctx, in, opts...)
}

func (t meteredTable) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	in.ReturnConsumedCapacity = ddbtypes.ReturnConsumedCapacityTotal
	out, err := t.api.Scan(ctx, in, opts...)
	t.m.note(func(c *ReadCost) {
		c.Pages++
		if err == nil && out.ConsumedCapacity != nil {
			c.ReadCapacityUnits += aws.ToFloat64(out.ConsumedCapacity.CapacityUnits)
		}
	})
	return out, err
}

// meteredCoord counts the coordination readers' requests.
type meteredCoord struct {
	api TableAPI
	m   *meter
}

func (t meteredCoord) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	t.m.note(func(c *ReadCost) { c.Coordination++ })
	return t.api.DescribeTable(ctx, in, opts...)
}

func (t meteredCoord) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	t.m.note(func(c *ReadCost) { c.Coordination++ })
	return t.api.GetItem(ctx, in, opts...)
}

func (t meteredCoord) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	t.m.note(func(c *ReadCost) { c.Coordination++ })
	return t.api.Scan(ctx, in, opts...)
}

// meteredStream counts the Kinesis requests of the lag probe and listing.
type meteredStream struct {
	api StreamAPI
	m   *meter
}

func (s meteredStream) ListShards(ctx context.Context, in *kinesis.ListShardsInput, opts ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error) {
	s.m.note(func(c *ReadCost) { c.ListShards++ })
	return s.api.ListShards(ctx, in, opts...)
}

func (s meteredStream) GetShardIterator(ctx context.Context, in *kinesis.GetShardIteratorInput, opts ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error) {
	return s.api.GetShardIterator(ctx, in, opts...)
}

func (s meteredStream) GetRecords(ctx context.Context, in *kinesis.GetRecordsInput, opts ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error) {
	s.m.note(func(c *ReadCost) { c.GetRecords++ })
	return s.api.GetRecords(ctx, in, opts...)
}

func (s meteredStream) DescribeStreamSummary(ctx context.Context, in *kinesis.DescribeStreamSummaryInput, opts ...func(*kinesis.Options)) (*kinesis.DescribeStreamSummaryOutput, error) {
	s.m.note(func(c *ReadCost) { c.DescribeStream++ })
	return s.api.DescribeStreamSummary(ctx, in, opts...)
}

// meteredMetrics counts GetMetricData requests and their queries.
type meteredMetrics struct {
	api MetricsAPI
	m   *meter
}

func (w meteredMetrics) GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	w.m.note(func(c *ReadCost) { c.GetMetricData++; c.Metrics += len(in.MetricDataQueries) })
	return w.api.GetMetricData(ctx, in, opts...)
}
