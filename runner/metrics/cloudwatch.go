package metrics

import (
	"context"
	"github.com/kcltool/kcltool/internal/clock"
	"log/slog"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/internal/backoff"
	"github.com/kcltool/kcltool/leasecore"
)

// CloudWatchAPI is the one CloudWatch call the worker makes.
type CloudWatchAPI interface {
	PutMetricData(ctx context.Context, params *cloudwatch.PutMetricDataInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricDataOutput, error)
}

// KCL's metric vocabulary (docs/kcl-compat.md, CloudWatch metrics): the
// namespace is the application name, the Operation dimension names the task,
// ShardId or WorkerIdentifier the subject. Publishing the same names lets a
// fleet move from the Java KCL to kcltool without touching its dashboards and
// alarms.
const (
	opProcessTask        = "ProcessTask"
	opRenewAllLeases     = "RenewAllLeases"
	opTakeLeases         = "TakeLeases"
	opApplicationTracker = "ApplicationTracker"
	opLeaseTable         = "LeaseTable." // + a lease operation (leasecore.OpRenew, ...)

	unitMillis = string(types.StandardUnitMilliseconds)
	unitCount  = string(types.StandardUnitCount)
	unitBytes  = string(types.StandardUnitBytes)
)

// putMetricDataMax is how many data a PutMetricData request carries at most
// here; the service takes 1000, a margin keeps requests far from its 1 MB.
const putMetricDataMax = 500

type cwKey struct {
	op, shard, worker, name, unit string
}

// cwStat aggregates the observations of one metric between two
// publications into a statistic set, as KCL's buffered publisher does.
type cwStat struct {
	n, sum, min, max float64
}

// CloudWatch buffers observations and publishes them every
// interval, and once more when the worker stops.
type CloudWatch struct {
	api       CloudWatchAPI
	namespace string
	worker    string
	log       *slog.Logger
	clock     clock.Clock

	mu   sync.Mutex
	data map[cwKey]*cwStat
	// last lease counters published, to send differences
	lastLost, lastTaken int64
	lastUnits           map[string]leasecore.Units

	// turn lets one publication run at a time: the last one waits for a
	// periodic one in flight instead of cutting it off, since the data a
	// publication carries have left the buffer and would be lost with it.
	turn chan struct{}
	// ended is set by Last; Run publishes nothing after it.
	ended bool
}

// NewCloudWatch publishes to api under namespace (the application), with
// the worker's name on its worker-level metrics.
func NewCloudWatch(api CloudWatchAPI, namespace, worker string, clk clock.Clock, log *slog.Logger) *CloudWatch {
	return &CloudWatch{api: api, namespace: namespace, worker: worker, clock: clk, log: log, data: map[cwKey]*cwStat{}, turn: make(chan struct{}, 1)}
}

func (p *CloudWatch) observe(k cwKey, v float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.data[k]
	if s == nil {
		p.data[k] = &cwStat{n: 1, sum: v, min: v, max: v}
		return
	}
	s.n++
	s.sum += v
	s.min = min(s.min, v)
	s.max = max(s.max, v)
}

// leases adds the worker's lease figures for this period: KCL's
// RenewAllLeases CurrentLeases and LostLeases, TakeLeases TakenLeases.
func (p *CloudWatch) leases(st leasecore.Stats) {
	p.mu.Lock()
	lost, taken := st.Lost-p.lastLost, st.Taken+st.Stolen-p.lastTaken
	p.lastLost, p.lastTaken = st.Lost, st.Taken+st.Stolen
	p.mu.Unlock()
	p.observe(cwKey{op: opRenewAllLeases, worker: p.worker, name: "CurrentLeases", unit: unitCount}, float64(st.Held))
	p.observe(cwKey{op: opRenewAllLeases, worker: p.worker, name: "LostLeases", unit: unitCount}, float64(lost))
	p.observe(cwKey{op: opTakeLeases, worker: p.worker, name: "TakenLeases", unit: unitCount}, float64(taken))
	p.capacityUnits(st.Units)
}

// capacityUnits adds the lease-table capacity units the worker consumed in
// this period, per lease operation (Operation "LeaseTable.renew", ...),
// under DynamoDB's own metric names, so that a dashboard can set them
// beside the table's ConsumedReadCapacityUnits. They are kcltool's: the
// KCL publishes no such figures.
func (p *CloudWatch) capacityUnits(units map[string]leasecore.Units) {
	p.mu.Lock()
	last := p.lastUnits
	p.lastUnits = maps.Clone(units)
	p.mu.Unlock()
	for _, op := range leasecore.CapacityOps(units) {
		d := units[op]
		prev := last[op]
		key := cwKey{op: opLeaseTable + op, worker: p.worker, unit: unitCount}
		key.name = "ConsumedReadCapacityUnits"
		p.observe(key, d.Read-prev.Read)
		key.name = "ConsumedWriteCapacityUnits"
		p.observe(key, d.Write-prev.Write)
	}
}

// flush publishes what was observed since the last flush.
func (p *CloudWatch) flush(ctx context.Context) error {
	p.mu.Lock()
	data := p.data
	p.data = map[cwKey]*cwStat{}
	p.mu.Unlock()
	if len(data) == 0 {
		return nil
	}
	now := p.clock.Now()
	var lag *cwStat
	keys := make([]cwKey, 0, len(data))
	for k, s := range data {
		keys = append(keys, k)
		if k.op == opProcessTask && k.name == "MillisBehindLatest" {
			// KCL's application-wide lag: the worst shard.
			if lag == nil {
				c := *s
				lag = &c
			} else {
				lag.n, lag.sum, lag.min, lag.max = lag.n+s.n, lag.sum+s.sum, min(lag.min, s.min), max(lag.max, s.max)
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.op != b.op {
			return a.op < b.op
		}
		if a.shard != b.shard {
			return a.shard < b.shard
		}
		return a.name < b.name
	})
	datums := make([]types.MetricDatum, 0, len(keys)+1)
	for _, k := range keys {
		datums = append(datums, datum(k, data[k], now))
	}
	if lag != nil {
		datums = append(datums, datum(cwKey{op: opApplicationTracker, name: "MillisBehindLatest", unit: unitMillis}, lag, now))
	}
	for len(datums) > 0 {
		n := min(len(datums), putMetricDataMax)
		if err := p.put(ctx, &cloudwatch.PutMetricDataInput{Namespace: aws.String(p.namespace), MetricData: datums[:n]}); err != nil {
			return err
		}
		datums = datums[n:]
	}
	return nil
}

// putAttempts bounds the tries of one PutMetricData: each has a 5 s
// deadline (the KCL's), and metrics that cannot be published within a few
// of them are dropped rather than delay the next period.
const putAttempts = 3

// putWait spaces a failed put's retries as a failing read's are
// (retrieval.ReadBackoff: full jitter under 200 ms doubling to 10 s, at
// least 200 ms).
func putWait(attempt int) time.Duration {
	return backoff.Policy{Base: 200 * time.Millisecond, Max: 10 * time.Second, Min: 200 * time.Millisecond}.Delay(attempt-1, nil)
}

// put sends one request, retrying throttling, server faults and requests
// cut off by their deadline.
func (p *CloudWatch) put(ctx context.Context, in *cloudwatch.PutMetricDataInput) error {
	sleep := func(ctx context.Context, d time.Duration) error { return clock.Sleep(ctx, p.clock, d) }
	return backoff.Retry(ctx, sleep, putWait, func(attempt int) (bool, error) {
		_, err := p.api.PutMetricData(ctx, in)
		again := err != nil && ctx.Err() == nil && awserr.RetryableRead(err) && attempt < putAttempts
		return again, err
	}, backoff.OpErrorOnCut)
}

func datum(k cwKey, s *cwStat, at time.Time) types.MetricDatum {
	dims := []types.Dimension{{Name: aws.String("Operation"), Value: aws.String(k.op)}}
	if k.shard != "" {
		dims = append(dims, types.Dimension{Name: aws.String("ShardId"), Value: aws.String(k.shard)})
	}
	if k.worker != "" {
		dims = append(dims, types.Dimension{Name: aws.String("WorkerIdentifier"), Value: aws.String(k.worker)})
	}
	d := types.MetricDatum{MetricName: aws.String(k.name), Dimensions: dims, Timestamp: aws.Time(at), Unit: types.StandardUnit(k.unit)}
	if s.n == 1 {
		d.Value = aws.Float64(s.sum)
	} else {
		d.StatisticValues = &types.StatisticSet{SampleCount: aws.Float64(s.n), Sum: aws.Float64(s.sum), Minimum: aws.Float64(s.min), Maximum: aws.Float64(s.max)}
	}
	return d
}

// Run publishes every interval until ctx ends. A failed publication is
// logged and its data dropped: metrics must never hold up processing.
func (p *CloudWatch) Run(ctx context.Context, interval time.Duration, lease func() leasecore.Stats) {
	for {
		if clock.Sleep(ctx, p.clock, interval) != nil {
			return
		}
		if !p.take(ctx) {
			return
		}
		if p.ended {
			p.give()
			return
		}
		p.Publish(ctx, lease)
		p.give()
	}
}

// Last is the worker's last publication as it stops: it waits (within
// ctx) for a periodic publication in flight to finish, then sends the rest,
// and Run publishes nothing after it. Cancelling Run's context instead
// would cut off the put in flight and lose the period it carries (seen in
// CI as the last batch's RecordsProcessed missing).
func (p *CloudWatch) Last(ctx context.Context, lease func() leasecore.Stats) {
	if !p.take(ctx) {
		p.log.Warn("could not publish the last CloudWatch metrics: a publication in flight did not end in time", "namespace", p.namespace)
		return
	}
	defer p.give()
	p.ended = true
	p.Publish(ctx, lease)
}

func (p *CloudWatch) take(ctx context.Context) bool {
	select {
	case p.turn <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (p *CloudWatch) give() { <-p.turn }

// Publish sends what was observed since the last publication, with the
// lease counters lease reports. Run and Last call it one at a time.
func (p *CloudWatch) Publish(ctx context.Context, lease func() leasecore.Stats) {
	if lease != nil {
		p.leases(lease())
	}
	if err := p.flush(ctx); err != nil && ctx.Err() == nil {
		p.log.Warn("could not publish CloudWatch metrics", "namespace", p.namespace, "err", err)
	}
}
