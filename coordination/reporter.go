package coordination

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/internal/clock"
)

// The KCL's defaults (LeaseManagementConfig.WorkerMetricsTableConfig and
// WorkerUtilizationAwareAssignmentConfig).
const (
	// DefaultReportPeriod is workerMetricsReporterFreqInMillis.
	DefaultReportPeriod = 30 * time.Second
	// DefaultCaptureInterval is inMemoryWorkerMetricsCaptureFrequencyMillis.
	DefaultCaptureInterval = time.Second
	// DefaultHistory is noOfPersistedMetricsPerWorkerMetrics: the samples
	// kept per metric in sts.
	DefaultHistory = 10
	// rawCapacity is WorkerMetricStatsManager's HIGH_FREQUENCY_STATS_COUNT:
	// the captures kept between two reports.
	rawCapacity = 300
	// supportCode is WorkerMetricStats.SUPPORT_CODE: the highest "breaking"
	// feature the worker supports, SINGLE_TABLE_MIGRATION (ordinal 1).
	// kcltool follows the table migration state, so it claims it.
	supportCode = 1
)

// Sampler is one worker metric, as the KCL's WorkerMetric: the short name
// it is reported under in sts and opr ("C" for CPU), the maximum of its
// operating range (opr, 100 for CPU: WorkerMetricsSelector's
// DEFAULT_100_PERC_UTILIZED_OPERATING_RANGE), and a capture.
type Sampler interface {
	Name() string
	MaxUtilization() int64
	// Sample captures the current value. An error drops that capture;
	// a report with no capture since the last one records -1.
	Sample() (float64, error)
}

// ReporterOptions tunes the reporter; zero values take the KCL's defaults.
type ReporterOptions struct {
	// Samplers are the metrics reported. None (the KCL's choice off EC2,
	// ECS and EKS, WorkerMetricsSelector) writes sts and opr as empty
	// maps, and the leader balances this worker on throughput.
	Samplers        []Sampler
	Period          time.Duration
	CaptureInterval time.Duration
	History         int
	// Logger receives failed writes and captures.
	Logger *slog.Logger
}

// Reporter upserts this worker's WorkerMetricStats item where the state
// says (WorkerMetricStatsReporter): every Period, after a first report two
// capture intervals after Start, as the KCL schedules it
// (DynamicMigrationComponentsInitializer.startWorkerMetricsReporting).
type Reporter struct {
	api    WriteAPI
	tables Tables
	worker string
	clk    clock.Clock
	opt    ReporterOptions
	log    *slog.Logger

	mu sync.Mutex
	st State
	// phase2 caches, under tm DEPLOYED, whether the fleet writes its
	// metrics to the lease table (see fleetTable), and when it was read.
	phase2   bool
	phase2At time.Time
	raw      map[string][]float64 // captures since the last report
	history  map[string][]float64 // averaged samples, the last opt.History
	last     error                // the last report's outcome
	where    string               // the table of the last item written
	reports  int                  // items written
	removed  bool                 // Remove ran: no more writes

	cancel context.CancelFunc
	done   chan struct{}
}

// NewReporter returns a reporter for workerID; Start runs it.
func NewReporter(api WriteAPI, t Tables, workerID string, clk clock.Clock, opt ReporterOptions) *Reporter {
	if opt.Period <= 0 {
		opt.Period = DefaultReportPeriod
	}
	if opt.CaptureInterval <= 0 {
		opt.CaptureInterval = DefaultCaptureInterval
	}
	if opt.History <= 0 {
		opt.History = DefaultHistory
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Reporter{
		api: api, tables: t, worker: workerID, clk: clk, opt: opt, log: log,
		raw: map[string][]float64{}, history: map[string][]float64{},
	}
}

// SetState tells the reporter where to write from now on, and whether to
// (ReportMetrics): the runner calls it when it re-detects. A Java worker
// picks its write table once, at start (WorkerMetricStatsDAO caches the
// status); kcltool follows the table as it changes, which is where a Java
// worker restarted now would write. The item left in the other table is
// not deleted: the leader deletes stale items, as it does after a Java
// worker's restart.
func (r *Reporter) SetState(st State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st.Layout != r.st.Layout || st.TableMigration != r.st.TableMigration {
		r.phase2At = time.Time{} // read the fleet again
	}
	r.st = st
}

// Start runs the reporter until Stop or ctx ends.
func (r *Reporter) Start(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	r.cancel, r.done = cancel, make(chan struct{})
	go func() {
		defer close(r.done)
		r.loop(ctx)
	}()
}

// Stop ends the reporter and waits for it. It deletes nothing: the KCL
// leaves a stopped worker's item for the leader to expire (2 x the period)
// and delete (WorkerMetricStatsReporter, stopWorkerMetricsReporter); at a
// graceful stop kcltool calls Remove instead.
func (r *Reporter) Stop(ctx context.Context) error {
	if r.cancel == nil {
		return nil
	}
	r.cancel()
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Err is the last report's error, nil after a good write.
func (r *Reporter) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// Table is where the last item was written, "" before the first.
func (r *Reporter) Table() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.where
}

// Reports counts the items written.
func (r *Reporter) Reports() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reports
}

func (r *Reporter) loop(ctx context.Context) {
	now := r.clk.Now()
	nextReport := now.Add(2 * r.opt.CaptureInterval)
	nextCapture := now.Add(r.opt.CaptureInterval)
	for {
		next := nextReport
		if len(r.opt.Samplers) > 0 && nextCapture.Before(next) {
			next = nextCapture
		}
		if err := clock.Sleep(ctx, r.clk, next.Sub(r.clk.Now())); err != nil {
			return
		}
		now = r.clk.Now()
		if len(r.opt.Samplers) > 0 && !now.Before(nextCapture) {
			r.capture()
			nextCapture = skipPast(nextCapture, now, r.opt.CaptureInterval)
		}
		if !now.Before(nextReport) {
			_ = r.Report(ctx)
			nextReport = skipPast(nextReport, now, r.opt.Period)
		}
	}
}

// skipPast is the next tick after now: ticks missed while the process was
// stopped or the write was slow are skipped, not run in a burst.
func skipPast(tick, now time.Time, every time.Duration) time.Time {
	for !tick.After(now) {
		tick = tick.Add(every)
	}
	return tick
}

// capture records one value of each metric (WorkerMetricStatsManager.
// recordWorkerMetrics): a failed capture records nothing.
func (r *Reporter) capture() {
	for _, s := range r.opt.Samplers {
		v, err := s.Sample()
		if err != nil {
			r.log.Warn("worker metric capture failed", "metric", s.Name(), "err", err)
			continue
		}
		r.mu.Lock()
		raw := append(r.raw[s.Name()], v)
		if len(raw) > rawCapacity {
			raw = raw[len(raw)-rawCapacity:]
		}
		r.raw[s.Name()] = raw
		r.mu.Unlock()
	}
}

// Report writes the item now, when the state asks for metrics. Each call
// turns the captures since the last one into one sample per metric.
func (r *Reporter) Report(ctx context.Context) error {
	r.mu.Lock()
	st := r.st
	sts := r.computeLocked()
	r.mu.Unlock()
	if !st.ReportMetrics || r.isRemoved() {
		return nil
	}
	table, keyAttr, err := r.fleetTable(ctx, st)
	if err == nil {
		err = r.write(ctx, table, keyAttr, sts)
	}
	r.mu.Lock()
	r.last = err
	if err == nil && r.removed {
		// Remove ran while this write was in flight: the item written
		// now would list the worker again. Remove waits for the loop,
		// so only a direct Report call can get here.
		r.mu.Unlock()
		_ = r.deleteItem(ctx, table)
		return nil
	}
	if err == nil {
		r.reports++
		r.where = table
	}
	r.mu.Unlock()
	if err != nil {
		r.log.Warn("worker metrics report failed", "worker", r.worker, "err", err)
	}
	return err
}

// computeLocked drains the captures into the history
// (WorkerMetricStatsManager.computeMetrics): their average, rounded to 6
// decimals half up, or -1 when there was none, keeping the last History.
func (r *Reporter) computeLocked() map[string][]float64 {
	out := make(map[string][]float64, len(r.opt.Samplers))
	for _, s := range r.opt.Samplers {
		name := s.Name()
		v := -1.0
		if raw := r.raw[name]; len(raw) > 0 {
			sum := 0.0
			for _, x := range raw {
				sum += x
			}
			v = math.Round(sum/float64(len(raw))*1e6) / 1e6
		}
		r.raw[name] = r.raw[name][:0]
		h := append(r.history[name], v)
		if len(h) > r.opt.History {
			h = h[len(h)-r.opt.History:]
		}
		r.history[name] = h
		out[name] = append([]float64(nil), h...)
	}
	return out
}

// item is the WorkerMetricStats item this worker writes, without its key:
// entityType, lut, sts, opr, sup and slu, as the KCL's bean maps them
// (WorkerMetricStats @DynamoDbAttribute names). properties is null in the
// reporter's bean and the enhanced client's ignoreNulls update leaves it
// out.
func (r *Reporter) item(now time.Time, sts map[string][]float64) map[string]types.AttributeValue {
	stsM := make(map[string]types.AttributeValue, len(sts))
	for name, vals := range sts {
		l := make([]types.AttributeValue, len(vals))
		for i, v := range vals {
			l[i] = &types.AttributeValueMemberN{Value: strconv.FormatFloat(v, 'f', -1, 64)}
		}
		stsM[name] = &types.AttributeValueMemberL{Value: l}
	}
	oprM := make(map[string]types.AttributeValue, len(r.opt.Samplers))
	for _, s := range r.opt.Samplers {
		oprM[s.Name()] = &types.AttributeValueMemberL{Value: []types.AttributeValue{
			&types.AttributeValueMemberN{Value: strconv.FormatInt(s.MaxUtilization(), 10)},
		}}
	}
	secs := strconv.FormatInt(now.Unix(), 10)
	return map[string]types.AttributeValue{
		attrEntity: &types.AttributeValueMemberS{Value: EntityWorkerMetrics},
		attrLUT:    &types.AttributeValueMemberN{Value: secs},
		attrSTS:    &types.AttributeValueMemberM{Value: stsM},
		attrOPR:    &types.AttributeValueMemberM{Value: oprM},
		attrSUP:    &types.AttributeValueMemberN{Value: strconv.Itoa(supportCode)},
		attrSLU:    &types.AttributeValueMemberN{Value: secs},
	}
}

// write is the KCL's upsert (WorkerMetricStatsDAODelegate.updateMetrics:
// the enhanced client's UpdateItem, SET of every non-null attribute). The
// KCL sends it with no condition. In the lease table kcltool adds one:
// the item is new or already a metrics item, so that a worker id equal to
// a lease key can never overwrite a lease (every lease-table write of
// kcltool is conditional).
func (r *Reporter) write(ctx context.Context, table, keyAttr string, sts map[string][]float64) error {
	it := r.item(r.clk.Now(), sts)
	names := make([]string, 0, len(it))
	for n := range it {
		names = append(names, n)
	}
	sort.Strings(names)
	in := &dynamodb.UpdateItemInput{
		TableName:                 aws.String(table),
		Key:                       map[string]types.AttributeValue{keyAttr: &types.AttributeValueMemberS{Value: r.worker}},
		ExpressionAttributeNames:  map[string]string{},
		ExpressionAttributeValues: map[string]types.AttributeValue{},
	}
	expr := "SET "
	for i, n := range names {
		if i > 0 {
			expr += ", "
		}
		expr += fmt.Sprintf("#a%d = :v%d", i, i)
		in.ExpressionAttributeNames[fmt.Sprintf("#a%d", i)] = n
		in.ExpressionAttributeValues[fmt.Sprintf(":v%d", i)] = it[n]
	}
	in.UpdateExpression = aws.String(expr)
	if table == r.tables.Lease {
		in.ConditionExpression = aws.String("attribute_not_exists(#k) OR #et = :et")
		in.ExpressionAttributeNames["#k"] = keyAttr
		in.ExpressionAttributeNames["#et"] = attrEntity
		in.ExpressionAttributeValues[":et"] = &types.AttributeValueMemberS{Value: EntityWorkerMetrics}
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	}
	_, err := r.api.UpdateItem(ctx, in)
	if awserr.ConditionFailed(err) {
		return fmt.Errorf("worker id %q is the key of an item of lease table %q that is not a worker-metrics item: a worker id must differ from every lease key", r.worker, table)
	}
	if err != nil {
		return fmt.Errorf("write worker metrics of %q to table %q: %w", r.worker, table, err)
	}
	return nil
}

// phase2Recheck is how often, under tm DEPLOYED, the reporter looks again
// at where the fleet writes.
const phase2Recheck = 5 * time.Minute

// fleetTable is where to write now. It is State.MetricsTable, except under
// tm DEPLOYED. There a Java worker's table depends on its own
// migrateAllEntitiesToLeaseTable setting (TableMigrationStateMachineImpl.
// applyConfigOverride: DEPLOYED with true acts as PENDING and writes to the
// lease table), and the leader moves the fleet on to PENDING only when no
// worker has live metrics left in the side table (isLegacyWorkerMetricsEmpty).
// A kcltool worker writing to the side table then would hold the whole
// fleet back; so it writes as the fleet does: to the lease table when
// another worker's live metrics item is there, to the side table
// otherwise. It looks again every phase2Recheck.
func (r *Reporter) fleetTable(ctx context.Context, st State) (table, keyAttr string, err error) {
	table, keyAttr = st.MetricsTable(r.tables)
	if st.Layout != LayoutSideTables || st.TableMigration != TableMigrationDeployed {
		return table, keyAttr, nil
	}
	now := r.clk.Now()
	r.mu.Lock()
	fresh, phase2 := !r.phase2At.IsZero() && now.Sub(r.phase2At) < phase2Recheck, r.phase2
	r.mu.Unlock()
	if !fresh {
		if phase2, err = r.fleetInLeaseTable(ctx, now); err != nil {
			return "", "", err
		}
		r.mu.Lock()
		r.phase2, r.phase2At = phase2, now
		r.mu.Unlock()
	}
	if phase2 {
		return r.tables.Lease, attrLeaseKey, nil
	}
	return table, keyAttr, nil
}

// fleetInLeaseTable: another worker's metrics item in the lease table is
// live, its lut within 2 periods (MigrationAwareLAMDataManager's expiry,
// DEFAULT_NO_OF_SKIP_STAT_FOR_DEAD_WORKER_THRESHOLD x the period).
func (r *Reporter) fleetInLeaseTable(ctx context.Context, now time.Time) (bool, error) {
	items, err := scanAll(ctx, r.api, &dynamodb.ScanInput{
		TableName:                 aws.String(r.tables.Lease),
		FilterExpression:          aws.String("#et = :et"),
		ProjectionExpression:      aws.String("#k, #lut"),
		ExpressionAttributeNames:  map[string]string{"#et": attrEntity, "#k": attrLeaseKey, "#lut": attrLUT},
		ExpressionAttributeValues: map[string]types.AttributeValue{":et": &types.AttributeValueMemberS{Value: EntityWorkerMetrics}},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return false, err
	}
	for _, it := range items {
		if strAttr(it, attrLeaseKey) == r.worker {
			continue
		}
		if now.Sub(epochSeconds(it, attrLUT)) <= 2*r.opt.Period {
			return true, nil
		}
	}
	return false, nil
}
