package top

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/inspect/doctor"
)

// TakerScanPeriod is how often one KCL 2.x worker's lease taker scans the
// whole lease table: every 2 × failover time, 20 s at the default 10 s
// failover time (docs/kcl-compat.md). top's default refresh costs the
// table no more than that: one full Scan per DefaultInterval.
const TakerScanPeriod = 20 * time.Second

// DefaultInterval is the default time between refreshes.
const DefaultInterval = TakerScanPeriod

// Cost is what a refresh cost, and that rate per minute at the interval.
type Cost struct {
	// Scans and Pages are the lease table's full reads and their requests;
	// ReadUnits the units they consumed, as DynamoDB answered them
	// (ReturnConsumedCapacity TOTAL) or, for pages answered without the
	// figure, estimated from the items' sizes (leasecore.ScanTable).
	Scans, Pages int
	ReadUnits    float64
	// TableCalls counts every DynamoDB request: Scan pages, DescribeTable
	// and the KCL 3.x coordination reads (GetItem).
	TableCalls int
	// KinesisCalls counts ListShards, GetShardIterator and GetRecords, and
	// doctor's DescribeStreamSummary and ListStreamConsumers (at most once a
	// minute).
	KinesisCalls int
	// Per minute at the interval, for the steady state.
	ReadUnitsPerMinute, KinesisCallsPerMinute, CloudWatchCallsPerMinute float64
	// minutelyKinesis are the calls of KinesisCalls doctor makes at most
	// once a minute (a stream summary, the consumers' listing).
	minutelyKinesis int
}

// perMinute scales a refresh's cost to a minute of refreshes; doctor's
// calls made at most once a minute, kinesis and cloudWatch of them the
// last time, count once a minute.
func (c *Cost) perMinute(interval time.Duration, kinesis, cloudWatch int) {
	if interval <= 0 {
		return
	}
	k := float64(time.Minute) / float64(interval)
	c.ReadUnitsPerMinute = c.ReadUnits * k
	c.KinesisCallsPerMinute = float64(c.KinesisCalls-c.minutelyKinesis)*k + onceAMinute(kinesis, interval)
	c.CloudWatchCallsPerMinute = onceAMinute(cloudWatch, interval)
}

// TakerUnitsPerMinute is what one KCL 2.x worker's taker costs the table
// in a minute, given what one full Scan of it costs: one Scan every
// TakerScanPeriod.
func TakerUnitsPerMinute(scanUnits float64) float64 {
	return scanUnits * float64(time.Minute) / float64(TakerScanPeriod)
}

// counter counts requests by kind; the metered clients share one.
type counter struct {
	mu                 sync.Mutex
	table, kinesisCall int
}

func (c *counter) add(table, kin int) {
	c.mu.Lock()
	c.table += table
	c.kinesisCall += kin
	c.mu.Unlock()
}

func (c *counter) take() (table, kin int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	table, kin = c.table, c.kinesisCall
	c.table, c.kinesisCall = 0, 0
	return table, kin
}

// meteredTable counts the DynamoDB requests.
type meteredTable struct {
	api TableAPI
	c   *counter
}

func (t meteredTable) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	t.c.add(1, 0)
	return t.api.DescribeTable(ctx, in, o...)
}

func (t meteredTable) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	t.c.add(1, 0)
	return t.api.Scan(ctx, in, o...)
}

func (t meteredTable) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	t.c.add(1, 0)
	return t.api.GetItem(ctx, in, o...)
}

// meteredStream counts the Kinesis requests.
type meteredStream struct {
	api inspect.StreamAPI
	c   *counter
}

func (s meteredStream) ListShards(ctx context.Context, in *kinesis.ListShardsInput, o ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error) {
	s.c.add(0, 1)
	return s.api.ListShards(ctx, in, o...)
}

func (s meteredStream) GetShardIterator(ctx context.Context, in *kinesis.GetShardIteratorInput, o ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error) {
	s.c.add(0, 1)
	return s.api.GetShardIterator(ctx, in, o...)
}

func (s meteredStream) GetRecords(ctx context.Context, in *kinesis.GetRecordsInput, o ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error) {
	s.c.add(0, 1)
	return s.api.GetRecords(ctx, in, o...)
}

// addDoctorCost adds what doctor read beyond this view's scan and lag
// join: the KCL 3.x side tables, a few probes, the streams' consumers and
// CloudWatch. ReadUnits stay the lease table's: doctor reads it only
// through the view's scan.
func (s *Sampler) addDoctorCost(c *Cost, rc doctor.ReadCost) {
	c.TableCalls += rc.Pages + rc.Coordination + rc.DescribeTable + rc.LegacyScans
	c.ReadUnits += rc.ReadCapacityUnits
	// Every probe is a GetShardIterator and a GetRecords.
	c.KinesisCalls += rc.ListShards + 2*rc.GetRecords
	// Doctor lists the consumers and reads CloudWatch (with a stream
	// summary each) at most once a minute: the last time it did is what a
	// minute costs.
	if minutely := rc.DescribeStream + rc.ListStreamConsumers; minutely > 0 {
		c.KinesisCalls += minutely
		c.minutelyKinesis = minutely
		s.kinPerRead = minutely
	}
	if rc.GetMetricData > 0 {
		s.cwPerRead = rc.GetMetricData
	}
}

// onceAMinute is what calls made at most once a minute, n each time, cost
// a minute at the interval: n under a minute, n per refresh over it.
func onceAMinute(n int, interval time.Duration) float64 {
	if interval <= 0 {
		return 0
	}
	return float64(n) * min(1, float64(time.Minute)/float64(interval))
}
