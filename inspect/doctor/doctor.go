// Package doctor diagnoses a KCL application from its lease table read over
// a window, its stream and CloudWatch: findings with a severity, a cause and
// a fix. It reads the shard probe and lag rows from inspect and never writes.
//
// A report is made in two phases. The gather phase (diagnose.go) reads the
// stream and CloudWatch and derives, once, what several checks rest on
// (facts.go); the facts are not changed after it. Then every check of the
// table in checks.go runs as a function of the facts that returns its
// findings, in no order that matters, and one pass at the end sorts the
// findings and drops duplicates.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"github.com/kcltool/kcltool/internal/clock"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// StreamAPI is the part of the Kinesis client doctor uses: the lag
// probe's calls, and the stream summary that says whether shard-level
// metrics are enabled.
type StreamAPI interface {
	inspect.StreamAPI
	DescribeStreamSummary(ctx context.Context, params *kinesis.DescribeStreamSummaryInput, optFns ...func(*kinesis.Options)) (*kinesis.DescribeStreamSummaryOutput, error)
}

// MetricsAPI is the one CloudWatch call doctor makes.
type MetricsAPI interface {
	GetMetricData(ctx context.Context, params *cloudwatch.GetMetricDataInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)
}

// TableAPI is what doctor calls on DynamoDB: the lease table's reads, and
// the GetItem of the KCL 3.x coordination readers (coordination.ReadAPI).
type TableAPI interface {
	inspect.TableAPI
	GetItem(ctx context.Context, params *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// APIs are the clients doctor reads through. It never writes.
type APIs struct {
	DynamoDB TableAPI
	// Kinesis is needed for the lag probe; nil skips the stream checks.
	Kinesis StreamAPI
	// CloudWatch is nil when CloudWatch is not to be read.
	CloudWatch MetricsAPI
}

// KCL defaults doctor judges by (docs/kcl-compat.md, Timings and defaults).
const (
	DefaultWindow         = 60 * time.Second
	DefaultHandoffTimeout = 30 * time.Second
	DefaultMaxBehind      = time.Minute
	DefaultMetricsWindow  = 5 * time.Minute
	// DefaultProbeTimeout bounds one shard's probe: a third of the KCL's
	// 30s kinesisRequestTimeout, since doctor only asks whether Kinesis
	// answers at all, and a hung call must not hang the report.
	DefaultProbeTimeout = 10 * time.Second
	// workerMetricsFreshness: the 3.x leader counts a worker as active only
	// if its worker-metrics item is newer than 2 × the 30s reporting period.
	workerMetricsFreshness = 60 * time.Second
	// leaderHeartbeat is the 3.x leader lock's heartbeat period: each one
	// writes a new recordVersionNumber.
	leaderHeartbeat = 30 * time.Second
)

// Options say what to examine and by which rules.
type Options struct {
	// App is the KCL application name: the CloudWatch namespace of KCL's
	// own metrics and the prefix of KCL 3.0–3.4's extra tables.
	App string
	// Table is the lease table (KCL's default: the application name).
	Table string
	// Stream is the stream of a single-stream table; without it the stream
	// checks are skipped. Multi-stream tables name their streams themselves.
	Stream string
	// Window is how long the table is sampled (default 60s).
	Window time.Duration
	// FailoverTime is the application's KCL failoverTimeMillis (default
	// 10s): the spacing of the reads and the expiry rule.
	FailoverTime time.Duration
	// HandoffTimeout is KCL 3.x's gracefulLeaseHandoffTimeoutMillis (30s).
	HandoffTimeout time.Duration
	// MaxBehind is how far behind a shard may be before it is a finding (1m).
	MaxBehind time.Duration
	// MetricsWindow is how far back CloudWatch is read (5m, at least Window).
	MetricsWindow time.Duration
	// CloudWatchSkipped explains why CloudWatch is not read when the
	// CloudWatch client is nil ("--no-cloudwatch").
	CloudWatchSkipped string
	// Concurrency bounds the lag probes in flight (chosen from the number
	// of shards when 0: inspect.ProbeConcurrency).
	Concurrency int
	// ProbeTimeout bounds each shard's probe, GetShardIterator and
	// GetRecords together (DefaultProbeTimeout when 0).
	ProbeTimeout time.Duration
	// Retry applies to ListShards.
	Retry reshard.Retry
	// Clock times the reads and ages; the real clock when nil.
	Clock clock.Clock
	// Progress, when set, hears of each read: done of total in the window.
	Progress func(done, total int)
}

func (o Options) withDefaults() Options {
	if o.Table == "" {
		o.Table = o.App
	}
	if o.App == "" {
		o.App = o.Table
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.FailoverTime <= 0 {
		o.FailoverTime = leasecore.DefaultFailoverTime
	}
	if o.HandoffTimeout <= 0 {
		o.HandoffTimeout = DefaultHandoffTimeout
	}
	if o.MaxBehind <= 0 {
		o.MaxBehind = DefaultMaxBehind
	}
	if o.MetricsWindow <= 0 {
		o.MetricsWindow = DefaultMetricsWindow
	}
	o.MetricsWindow = max(o.MetricsWindow, o.Window)
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = DefaultProbeTimeout
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock()
	}
	return o
}

// Doctor examines one KCL application: it samples the lease table over a
// window and joins what it saw with the stream and CloudWatch.
type Doctor struct {
	opt      Options
	clock    clock.Clock
	meter    *meter
	table    meteredTable
	kin      StreamAPI  // metered; nil without Kinesis
	metrics  MetricsAPI // metered; nil without CloudWatch
	segments int
	desc     *ddbtypes.TableDescription
	// coordAPI reads the KCL 3.x coordination state, counted apart (a
	// meteredCoord; when following, behind the scan's answers, follow.go).
	coordAPI coordination.ReadAPI
	// coord is the last coordination.Detect, made readsSinceDetect reads
	// ago (once per window).
	coord            *coordination.State
	readsSinceDetect int
	// The leader lock's version, its owner, and the time of the first read
	// that saw them: kept across a watch's windows, so that a lock that
	// never moves (issue #1803) shows however long the window.
	lockVersion, lockOwner string
	lockSince              time.Time

	// A watch reuses the stream probe for a window and CloudWatch for a
	// minute (its resolution), so that a live view costs about what one run
	// per window would.
	watching bool
	// following: a Follower feeds the reads (follow.go).
	following bool
	lagAt     time.Time
	lag       *inspect.Lag
	cwAt      time.Time
	cw        *metricSet
	cwFailed  string
	// consumersRead is the last listing of the streams' consumers, kept a
	// minute by a watch (consumers.go).
	consumersRead *consumersRead
}

// New checks the options and describes the lease table: a missing
// table fails here, before any sampling.
func New(ctx context.Context, apis APIs, opt Options) (*Doctor, error) {
	opt = opt.withDefaults()
	if opt.Table == "" {
		return nil, errors.New("no lease table: set App or Table")
	}
	if opt.Window < opt.FailoverTime {
		return nil, fmt.Errorf("window %s is shorter than the failover time %s: telling an expired lease needs two reads a failover time apart", opt.Window, opt.FailoverTime)
	}
	m := &meter{}
	d := &Doctor{opt: opt, clock: opt.Clock, meter: m, table: meteredTable{api: apis.DynamoDB, m: m}, coordAPI: meteredCoord{api: apis.DynamoDB, m: m}}
	if apis.Kinesis != nil {
		d.kin = meteredStream{api: apis.Kinesis, m: m}
	}
	if apis.CloudWatch != nil {
		d.metrics = meteredMetrics{api: apis.CloudWatch, m: m}
	}
	out, err := d.table.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(opt.Table)})
	if err != nil {
		return nil, err
	}
	d.desc = out.Table
	d.segments = leasecore.SegmentsFor(aws.ToInt64(out.Table.TableSizeBytes))
	return d, nil
}

// Run samples one window and reports what it found.
func (d *Doctor) Run(ctx context.Context) (*Report, error) {
	samples, err := d.sampleWindow(ctx)
	var throttled *ScanThrottledError
	if errors.As(err, &throttled) {
		return d.throttledReport(throttled), nil
	}
	if err != nil {
		return nil, err
	}
	return d.diagnose(ctx, samples)
}

// Watch samples without end, one read per failover time. It reports at
// once on the first read (Partial: what one read can tell), then on the
// last window after every read once a window is full. It returns when ctx
// ends or report returns an error.
func (d *Doctor) Watch(ctx context.Context, report func(*Report) error) error {
	d.watching = true
	// A window is a minute by default: a person who starts a watch during
	// an incident sees the unassigned leases, the lag and the lineage now,
	// and the findings that need reads a failover time apart (expiry,
	// dead workers, churn, stuck shards) once the window is full.
	samples, err := d.sampleUpTo(ctx, nil, 1)
	if err == nil {
		first, ferr := d.diagnose(ctx, samples)
		if ferr != nil {
			return ferr
		}
		first.Partial = true
		if rerr := report(first); rerr != nil {
			return rerr
		}
		samples, err = d.sampleUpTo(ctx, samples, d.samplesPerWindow())
	}
	for {
		// A scan throttled past ScanPatience is reported as the finding,
		// and the watch goes on: the next read may get through.
		var throttled *ScanThrottledError
		switch {
		case errors.As(err, &throttled):
			if err := report(d.throttledReport(throttled)); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			r, err := d.diagnose(ctx, samples)
			if err != nil {
				return err
			}
			if err := report(r); err != nil {
				return err
			}
		}
		next := d.clock.Now().Add(d.opt.FailoverTime)
		if len(samples) > 0 {
			next = samples[len(samples)-1].at.Add(d.opt.FailoverTime)
		}
		if err := clock.Sleep(ctx, d.clock, next.Sub(d.clock.Now())); err != nil {
			return err
		}
		var s sample
		if s, err = d.takeSample(ctx); err != nil {
			continue
		}
		samples = append(samples, s)
		if keep := d.samplesPerWindow(); len(samples) > keep {
			samples = samples[len(samples)-keep:]
		}
	}
}

// Report is what one doctor run found.
type Report struct {
	App, Table, Stream string
	Window             time.Duration // between the first and the last read
	FailoverTime       time.Duration
	Started, Ended     time.Time
	// Reads is how many times the lease table was read.
	Reads int
	// Partial marks Watch's first report, made from its first read at
	// once, before a window of reads: the findings that compare reads a
	// failover time apart cannot be in it yet.
	Partial bool
	// Leases and Workers count the last read's leases and distinct owners.
	Leases, Workers int
	// KCL3 is set when the table holds KCL 3.x entities.
	KCL3 bool
	// Coordination is the KCL 3.x state the report read, for views that
	// show it: the layout, the leader lock of the last read and the
	// workers' metrics; nil on a KCL 2.x table or when the reads failed.
	Coordination *inspect.KCL3
	Findings     []Finding
	// Cost is what the run spent, in requests and read capacity.
	Cost ReadCost
	// Capacity is the fleet's consumption against the table's capacity;
	// nil when the table was not described.
	Capacity *CapacityUse
}

// Worst is the highest severity found, or -1 without findings.
func (r *Report) Worst() Severity {
	worst := Severity(-1)
	for _, f := range r.Findings {
		worst = max(worst, f.Severity)
	}
	return worst
}

// AtLeast returns the findings of severity s or worse.
func (r *Report) AtLeast(s Severity) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Severity >= s {
			out = append(out, f)
		}
	}
	return out
}
