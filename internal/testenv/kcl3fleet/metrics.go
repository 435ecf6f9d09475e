package kcl3fleet

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Metrics is what a worker reports in its WorkerMetricStats item: sts
// (metric name to the last samples, -1 for a failed one) and opr (metric
// name to [maximum]). Both empty is what a worker off EC2, ECS and EKS
// reports: WorkerMetricStats.isUsingDefaultWorkerMetric (v3.5.1 lines
// 445-454) then balances it on throughput.
type Metrics struct {
	Stats map[string][]float64
	Range map[string][]int64
}

// WorkerMetricsReport is one worker's item as the leader reads it.
type WorkerMetricsReport struct {
	WorkerID   string
	LastUpdate int64 // lut, epoch seconds
	Metrics
	Table string
}

// SupportCode is WorkerMetricStats.SUPPORT_CODE (line 148:
// Features.values().length - 1 = 1, SINGLE_TABLE_MIGRATION).
const SupportCode = 1

// PutWorkerMetrics writes a worker's metrics item as
// WorkerMetricStatsReporter.run builds it (worker/metricstats/
// WorkerMetricStatsReporter.java lines 53-61: workerId, metricStats,
// operatingRange, lastUpdateTime and supportCodeUpdateEpochSeconds = now in
// epoch seconds, supportCode) and WorkerMetricStatsDAODelegate.updateMetrics
// writes it (delegate/WorkerMetricStatsDAODelegate.java lines 145-161: the
// enhanced client's UpdateItem with ignoreNulls, so no condition and only
// the non-null attributes; properties is null and left out). The bean's
// attribute names and types (WorkerMetricStats.java lines 150-191):
// wid, or leaseKey in the lease table (LegacyWorkerMetricStats /
// LeaseTableWorkerMetricStats, lines 216-238), entityType S
// WORKER_METRIC_STATS (in both tables), lut N, sts M of L of N, opr M of L
// of N, sup N, slu N. The table is the one this layout writes metrics to.
func (f *Fleet) PutWorkerMetrics(ctx context.Context, workerID string, m Metrics, now time.Time) error {
	table, keyAttr := f.metricsLocation()
	sec := now.Unix()
	sts := map[string]ddbtypes.AttributeValue{}
	for name, samples := range m.Stats {
		l := make([]ddbtypes.AttributeValue, len(samples))
		for i, v := range samples {
			l[i] = &ddbtypes.AttributeValueMemberN{Value: strconv.FormatFloat(v, 'f', -1, 64)}
		}
		sts[name] = &ddbtypes.AttributeValueMemberL{Value: l}
	}
	opr := map[string]ddbtypes.AttributeValue{}
	for name, maxima := range m.Range {
		l := make([]ddbtypes.AttributeValue, len(maxima))
		for i, v := range maxima {
			l[i] = n(v)
		}
		opr[name] = &ddbtypes.AttributeValueMemberL{Value: l}
	}
	attrs := []struct {
		name string
		v    ddbtypes.AttributeValue
	}{
		{entityTypeAttr, s(entityWorkerMetrics)},
		{"lut", n(sec)},
		{"sts", &ddbtypes.AttributeValueMemberM{Value: sts}},
		{"opr", &ddbtypes.AttributeValueMemberM{Value: opr}},
		{"sup", n(SupportCode)},
		{"slu", n(sec)},
	}
	// The enhanced client names every attribute "#AMZN_MAPPED_<name>" and
	// its value ":AMZN_MAPPED_<name>" in a single SET.
	names := map[string]string{}
	values := map[string]ddbtypes.AttributeValue{}
	expr := "SET "
	for i, a := range attrs {
		if i > 0 {
			expr += ", "
		}
		expr += "#AMZN_MAPPED_" + a.name + " = :AMZN_MAPPED_" + a.name
		names["#AMZN_MAPPED_"+a.name] = a.name
		values[":AMZN_MAPPED_"+a.name] = a.v
	}
	_, err := f.DDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(table),
		Key:                       map[string]ddbtypes.AttributeValue{keyAttr: s(workerID)},
		UpdateExpression:          aws.String(expr),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		ReturnValues:              ddbtypes.ReturnValueAllNew,
	})
	if err != nil {
		return fmt.Errorf("put worker metrics of %s: %w", workerID, err)
	}
	return nil
}

// WorkerMetricsReports reads every worker's metrics item as
// MigrationAwareLAMDataManager.loadData does (coordinator/assignment/
// MigrationAwareLAMDataManager.java lines 124-200): the lease table's
// WORKER_METRIC_STATS items (LeaseTableWorkerMetricStatsDAODelegate.
// getAllWorkerMetricStats, lines 94-122: a scan filtered on entityType)
// and, unless migration is COMPLETE, the legacy table's items too
// (shouldScanLegacyTable). Sorted by worker id.
func (f *Fleet) WorkerMetricsReports(ctx context.Context) ([]WorkerMetricsReport, error) {
	var out []WorkerMetricsReport
	scan := func(table, keyAttr string, filtered bool) error {
		in := &dynamodb.ScanInput{TableName: aws.String(table)}
		if filtered {
			in.FilterExpression = aws.String("#et = :etVal")
			in.ExpressionAttributeNames = map[string]string{"#et": entityTypeAttr}
			in.ExpressionAttributeValues = map[string]ddbtypes.AttributeValue{":etVal": s(entityWorkerMetrics)}
		}
		p := dynamodb.NewScanPaginator(f.DDB, in)
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return fmt.Errorf("scan %s for worker metrics: %w", table, err)
			}
			for _, item := range page.Items {
				out = append(out, decodeWorkerMetrics(item, keyAttr, table))
			}
		}
		return nil
	}
	if err := scan(f.Tables.Lease, leaseKeyAttr, true); err != nil {
		return nil, err
	}
	if f.Layout.Kind == SideTables || f.Layout.Kind == Pending {
		if err := scan(f.Tables.WorkerMetrics, workerMetricsHashKey, false); err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].WorkerID < out[j].WorkerID })
	return out, nil
}

func decodeWorkerMetrics(item map[string]ddbtypes.AttributeValue, keyAttr, table string) WorkerMetricsReport {
	r := WorkerMetricsReport{Table: table, Metrics: Metrics{Stats: map[string][]float64{}, Range: map[string][]int64{}}}
	if v, ok := item[keyAttr].(*ddbtypes.AttributeValueMemberS); ok {
		r.WorkerID = v.Value
	}
	if v, ok := item["lut"].(*ddbtypes.AttributeValueMemberN); ok {
		r.LastUpdate, _ = strconv.ParseInt(v.Value, 10, 64)
	} else {
		r.LastUpdate = -1
	}
	if m, ok := item["sts"].(*ddbtypes.AttributeValueMemberM); ok {
		for name, av := range m.Value {
			l, _ := av.(*ddbtypes.AttributeValueMemberL)
			var vals []float64
			if l != nil {
				for _, e := range l.Value {
					if nv, ok := e.(*ddbtypes.AttributeValueMemberN); ok {
						x, _ := strconv.ParseFloat(nv.Value, 64)
						vals = append(vals, x)
					}
				}
			}
			r.Stats[name] = vals
		}
	}
	if m, ok := item["opr"].(*ddbtypes.AttributeValueMemberM); ok {
		for name, av := range m.Value {
			l, _ := av.(*ddbtypes.AttributeValueMemberL)
			var vals []int64
			if l != nil {
				for _, e := range l.Value {
					if nv, ok := e.(*ddbtypes.AttributeValueMemberN); ok {
						x, _ := strconv.ParseInt(nv.Value, 10, 64)
						vals = append(vals, x)
					}
				}
			}
			r.Range[name] = vals
		}
	}
	return r
}

// usingDefaultMetric is WorkerMetricStats.isUsingDefaultWorkerMetric
// (lines 445-454): no samples and no ranges, or a "T" (throughput) metric.
func (r WorkerMetricsReport) usingDefaultMetric() bool {
	if len(r.Stats) == 0 && len(r.Range) == 0 {
		return true
	}
	_, t := r.Stats["T"]
	return t
}

// Active is the leader's rule for a worker that may get leases
// (MigrationAwareLAMDataManager.loadData lines 165-191, then
// LeaseAssignmentManager.InMemoryStorageView.loadInMemoryStorageView lines
// 541-543):
//   - isValidWorkerMetric (WorkerMetricStats lines 403-426): a lut; for a
//     worker not on the default metric, every sts key also in opr and every
//     opr entry non-empty with a non-zero maximum;
//   - not isExpired(2 x workerMetricsReporterFreqInMillis) (lines 480-486,
//     DEFAULT_NO_OF_SKIP_STAT_FOR_DEAD_WORKER_THRESHOLD = 2, line 80 of
//     the data manager): now - lut no more than that;
//   - not isAnyWorkerMetricFailing (lines 371-392): no metric whose last
//     sample is -1 (never for a worker on the default metric).
func (r WorkerMetricsReport) Active(now time.Time, reporterFreq time.Duration) bool {
	if r.LastUpdate < 0 {
		return false
	}
	if !r.usingDefaultMetric() {
		for name := range r.Stats {
			if _, ok := r.Range[name]; !ok {
				return false
			}
		}
		for _, max := range r.Range {
			if len(max) == 0 || max[0] == 0 {
				return false
			}
		}
	}
	if now.Sub(time.Unix(r.LastUpdate, 0)) > 2*reporterFreq {
		return false
	}
	if !r.usingDefaultMetric() {
		for _, samples := range r.Stats {
			if len(samples) > 0 && samples[len(samples)-1] == -1 {
				return false
			}
		}
	}
	return true
}
