package doctor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/smithy-go"
)

// What each metric is read for. The subject is the operation, index,
// shard, stream or worker the series belongs to.
const (
	mDDBThrottled   = "ddb.throttledRequests" // subject: operation
	mDDBReadThrot   = "ddb.readThrottleEvents"
	mDDBWriteThrot  = "ddb.writeThrottleEvents"
	mDDBConsumedWCU = "ddb.consumedWriteCapacityUnits" // subject: "" (table) or GSI name
	mDDBConsumedRCU = "ddb.consumedReadCapacityUnits"  // subject: "" (table)
	mIteratorAge    = "kinesis.iteratorAge"            // subject: stream or stream/shard
	mKCLLost        = "kcl.lostLeases"                 // subject: worker, "" for Operation only
	mKCLTaken       = "kcl.takenLeases"
	mKCLReassigned  = "kcl.numOfLeasesReassignment"
	mKCLShardLag    = "kcl.millisBehindLatest" // subject: shard
	mKCLAppLag      = "kcl.applicationMillisBehindLatest"
	mKCLReadSuccess = "kcl.getRecordsSuccess" // subject: shard
)

// cloudWatchChecks names what is lost without CloudWatch.
const cloudWatchChecks = "lease-table throttling (ThrottledRequests, Read/WriteThrottleEvents for the table and its GSI), consumed RCU and WCU, Kinesis iterator age, KCL's own metrics (LostLeases, TakenLeases, NumOfLeasesReassignment, MillisBehindLatest), and enhanced fan-out subscription errors (SubscribeToShard.Success, SubscribeToShard.RateExceeded)"

// leaseTableOps are the lease-table operations KCL makes; DynamoDB's
// ThrottledRequests is published per operation.
var leaseTableOps = []string{"UpdateItem", "GetItem", "PutItem", "DeleteItem", "Scan", "Query"}

// getMetricDataMax is the most queries one GetMetricData request carries.
const getMetricDataMax = 500

// metricSpec is one series to read.
type metricSpec struct {
	use, subject string
	namespace    string
	name         string
	dims         [][2]string
	stat         string
}

// metricSet holds the series read, by spec.
type metricSet struct {
	specs  []metricSpec
	values [][]float64
}

// series returns every spec of a use with its values.
func (m *metricSet) series(use string) (subjects []string, values [][]float64) {
	if m == nil {
		return nil, nil
	}
	for i, s := range m.specs {
		if s.use == use {
			subjects, values = append(subjects, s.subject), append(values, m.values[i])
		}
	}
	return subjects, values
}

// valuesOf returns the datapoints of the use's series of that subject.
func (m *metricSet) valuesOf(use, subject string) []float64 {
	var out []float64
	subjects, values := m.series(use)
	for i, s := range subjects {
		if s == subject {
			out = append(out, values[i]...)
		}
	}
	return out
}

// sum adds every datapoint of the use's series of that subject.
func (m *metricSet) sum(use, subject string) float64 {
	total := 0.0
	for _, v := range m.valuesOf(use, subject) {
		total += v
	}
	return total
}

// hasData reports whether any series of the uses has a datapoint.
func (m *metricSet) hasData(uses ...string) bool {
	for _, u := range uses {
		_, values := m.series(u)
		for _, v := range values {
			if len(v) > 0 {
				return true
			}
		}
	}
	return false
}

func maxOf(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	return slices.Max(vs)
}

// readMetrics reads every CloudWatch series doctor uses in one batched
// GetMetricData call (more only beyond 500 series or with paging). Any
// failure skips the CloudWatch checks and says so; the rest still run.
func (g *diagnosis) readMetrics(ctx context.Context) {
	d := g.d
	if d.metrics == nil {
		g.cloudWatchSkipped(g.opt.CloudWatchSkipped)
		return
	}
	end := d.clock.Now().Truncate(time.Second)
	if d.watching && !d.cwAt.IsZero() && end.Sub(d.cwAt) < time.Minute {
		g.metrics = d.cw
		if d.cwFailed != "" {
			g.cloudWatchSkipped(d.cwFailed)
		}
		return
	}
	specs := g.metricSpecs(ctx)
	values, err := fetchMetrics(ctx, d.metrics, specs, end.Add(-g.opt.MetricsWindow), end)
	d.cwAt, d.cw, d.cwFailed = end, nil, ""
	if err != nil {
		d.cwFailed = describeCloudWatchError(err)
		g.cloudWatchSkipped(d.cwFailed)
		return
	}
	g.metrics = &metricSet{specs: specs, values: values}
	d.cw = g.metrics
}

// cloudWatchSkipped notes why CloudWatch was not read.
func (g *diagnosis) cloudWatchSkipped(why string) {
	if why == "" {
		why = "no CloudWatch access"
	}
	g.cwSkipped = &why
}

// checkCloudWatchSkipped says that the CloudWatch checks did not run, and why.
func checkCloudWatchSkipped(fc *facts) []Finding {
	if fc.cwSkipped == nil {
		return nil
	}
	return []Finding{{
		ID: FindCloudWatchSkipped, Severity: SeverityInfo,
		Summary:  "CloudWatch checks skipped: " + *fc.cwSkipped,
		Evidence: Evidence{Lines: []string{"skipped: " + cloudWatchChecks}},
		Cause:    "doctor reads CloudWatch with one GetMetricData call; without it only the lease table and the stream are examined",
		Fix:      "allow cloudwatch:GetMetricData to the caller (and point AWS_ENDPOINT_URL_CLOUDWATCH at the right endpoint) to run these checks",
	}}
}

func describeCloudWatchError(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return fmt.Sprintf("GetMetricData failed: %s: %s", ae.ErrorCode(), ae.ErrorMessage())
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "GetMetricData did not answer in time"
	}
	return "GetMetricData failed: " + err.Error()
}

// cloudWatchTimeout bounds the CloudWatch read: it is an extra, never the
// reason a doctor run hangs.
const cloudWatchTimeout = 20 * time.Second

func fewRetries(o *cloudwatch.Options) { o.RetryMaxAttempts = 2 }

// fetchMetrics runs the queries, at most getMetricDataMax per request,
// following NextToken, and returns each spec's datapoints.
func fetchMetrics(ctx context.Context, api MetricsAPI, specs []metricSpec, start, end time.Time) ([][]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, cloudWatchTimeout)
	defer cancel()
	values := make([][]float64, len(specs))
	for base := 0; base < len(specs); base += getMetricDataMax {
		chunk := specs[base:min(base+getMetricDataMax, len(specs))]
		in := &cloudwatch.GetMetricDataInput{StartTime: aws.Time(start), EndTime: aws.Time(end), MetricDataQueries: queries(chunk, base)}
		for {
			out, err := api.GetMetricData(ctx, in, fewRetries)
			if err != nil {
				return nil, err
			}
			for _, r := range out.MetricDataResults {
				var i int
				if _, err := fmt.Sscanf(aws.ToString(r.Id), "m%d", &i); err != nil || i < 0 || i >= len(specs) {
					continue
				}
				values[i] = append(values[i], r.Values...)
			}
			if aws.ToString(out.NextToken) == "" {
				break
			}
			in.NextToken = out.NextToken
		}
	}
	return values, nil
}

func queries(specs []metricSpec, base int) []cwtypes.MetricDataQuery {
	out := make([]cwtypes.MetricDataQuery, len(specs))
	for i, s := range specs {
		dims := make([]cwtypes.Dimension, len(s.dims))
		for j, d := range s.dims {
			dims[j] = cwtypes.Dimension{Name: aws.String(d[0]), Value: aws.String(d[1])}
		}
		out[i] = cwtypes.MetricDataQuery{
			Id:    aws.String(fmt.Sprintf("m%d", base+i)),
			Label: aws.String(strings.TrimSpace(s.use + " " + s.subject)),
			MetricStat: &cwtypes.MetricStat{
				Metric: &cwtypes.Metric{Namespace: aws.String(s.namespace), MetricName: aws.String(s.name), Dimensions: dims},
				Period: aws.Int32(60), Stat: aws.String(s.stat),
			},
			ReturnData: aws.Bool(true),
		}
	}
	return out
}
