package metrics

import (
	"github.com/kcltool/kcltool/internal/clock"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/kinesisrec"
	"github.com/kcltool/kcltool/leasecore"
)

// Metrics collects a worker's figures: per shard (reads, records, batches,
// handler runs and their durations, failures, lag) and per worker (leases).
// The Prometheus endpoint reads them (WritePrometheus), and so does the
// CloudWatch publisher, under KCL's metric names.
type Metrics struct {
	mu     sync.Mutex
	app    string
	stream string
	worker string
	shards map[string]*ShardStats
	// lease returns the coordinator's counters; nil until the worker runs.
	lease func() leasecore.Stats
	// running reports the handler processes running; nil until the worker runs.
	running func() int
	// clock is the worker's: failingSince was stamped with it, so the
	// failing spell's length is read from it too. Nil until the worker runs.
	clock clock.Clock
	// cw, when set, also receives every observation.
	cw atomic.Pointer[CloudWatch]
	// leader is the KCL 3.x leadership's figures (leader.go).
	leader leaderMetrics
	// health is the worker's health state (health.go); nil until bound.
	health *leasecore.Health
}

// New returns an empty collection.
func New() *Metrics { return &Metrics{shards: map[string]*ShardStats{}} }

// SetCloudWatch sends every observation to p as well, from now on.
func (m *Metrics) SetCloudWatch(p *CloudWatch) { m.cw.Store(p) }

// Bind names the worker the figures are of, and gives the lease
// coordinator's counters, the count of running handlers and the worker's
// clock.
func (m *Metrics) Bind(app, stream, worker string, lease func() leasecore.Stats, running func() int, clk clock.Clock) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.app, m.stream, m.worker, m.lease, m.running, m.clock = app, stream, worker, lease, running, clk
}

// now reads the worker's clock; the real one before the worker binds it
// (no shard has figures then).
func (m *Metrics) now() time.Time {
	m.mu.Lock()
	clk := m.clock
	m.mu.Unlock()
	if clk == nil {
		clk = clock.RealClock()
	}
	return clk.Now()
}

// Shard returns the figures of one shard, creating them on first use, and
// marks the shard as read by this worker.
func (m *Metrics) Shard(id string) *ShardStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.shards[id]
	if s == nil {
		s = &ShardStats{m: m, id: id, hist: newHistogram(handlerBuckets), delivery: newHistogram(deliveryBuckets)}
		m.shards[id] = s
	}
	s.held.Store(true)
	return s
}

// ShardStats are one shard's figures. The counters stay after the lease
// moves on (Prometheus counters must not go back); the lag gauge is only
// reported while this worker reads the shard.
type ShardStats struct {
	m             *Metrics
	id            string
	held          atomic.Bool
	millisBehind  atomic.Int64
	getRecords    atomic.Int64
	throttled     atomic.Int64
	readFailures  atomic.Int64 // failed GetRecords and GetShardIterator calls
	readTimeouts  atomic.Int64 // of which cut off by their deadline
	failingSince  atomic.Int64 // unix nanos of the first failure of the current failing spell; 0 while reads succeed
	records       atomic.Int64
	bytes         atomic.Int64
	batches       atomic.Int64
	runs          atomic.Int64
	failures      atomic.Int64
	retries       atomic.Int64
	skipped       atomic.Int64
	checkpoints   atomic.Int64
	handlerCPU    atomic.Int64 // nanoseconds
	childRestarts atomic.Int64 // MultiLang children stopped for a failure
	hist          *histogram
	// liveCPU reads the CPU time so far of the shard's running MultiLang
	// child, which handlerCPU counts only once it is reaped; nil when none
	// runs. liveMu makes the hand-over from one to the other atomic.
	liveMu  sync.Mutex
	liveCPU func() time.Duration
	// Enhanced fan-out (runner/efo_reader.go): subscriptions that delivered, and
	// of those the ones that continued a subscription that had ended.
	subscriptions   atomic.Int64
	resubscriptions atomic.Int64
	// delivery is kcltool's own added latency: from a read's answer (a
	// GetRecords page, a fan-out event) arriving to its batch being handed
	// to the record processor.
	delivery *histogram
}

// deliveryBuckets are the added-latency histogram's bounds, in seconds.
var deliveryBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 5}

// Subscribed counts a fan-out subscription that delivered;
// resubscription when it continued one that had ended.
func (s *ShardStats) Subscribed(resubscription bool) {
	s.subscriptions.Add(1)
	if resubscription {
		s.resubscriptions.Add(1)
	}
}

// Delivered observes one batch's added latency; received is zero for a
// batch that did not come from a read.
func (s *ShardStats) Delivered(received, now time.Time) {
	if !received.IsZero() {
		s.delivery.observe(max(now.Sub(received), 0).Seconds())
	}
}

// Release: this worker no longer reads the shard, so its lag is no
// longer reported (its counters stay).
func (s *ShardStats) Release() { s.held.Store(false) }

// GetRecordsCall counts one GetRecords call and how it ended.
func (s *ShardStats) GetRecordsCall(err error) {
	s.getRecords.Add(1)
	if err != nil && awserr.Throttled(err) {
		s.throttled.Add(1)
	}
	if cw := s.m.cw.Load(); cw != nil {
		// KCL's KinesisDataFetcher.getRecords.Success (0/1 per call):
		// doctor reads it to tell failing reads from a failing handler.
		ok := 1.0
		if err != nil {
			ok = 0
		}
		cw.observe(cwKey{op: opProcessTask, shard: s.id, name: "KinesisDataFetcher.getRecords.Success", unit: unitCount}, ok)
	}
}

// ReadFailed counts a failed Kinesis read call; since is when the shard's
// reads started failing.
func (s *ShardStats) ReadFailed(err error, since time.Time) {
	s.readFailures.Add(1)
	if awserr.Timeout(err) {
		s.readTimeouts.Add(1)
	}
	s.failingSince.Store(since.UnixNano())
}

// ReadOK ends a failing spell.
func (s *ShardStats) ReadOK() { s.failingSince.Store(0) }

// Read records a read's MillisBehindLatest: the shard's lag.
func (s *ShardStats) Read(millisBehind int64) {
	s.millisBehind.Store(millisBehind)
	if cw := s.m.cw.Load(); cw != nil {
		cw.observe(cwKey{op: opProcessTask, shard: s.id, name: "MillisBehindLatest", unit: unitMillis}, float64(millisBehind))
	}
}

// HandlerRun counts one handler run of d; ok when it fully succeeded.
func (s *ShardStats) HandlerRun(d time.Duration, ok bool) {
	s.runs.Add(1)
	if !ok {
		s.failures.Add(1)
	}
	s.hist.observe(d.Seconds())
	if cw := s.m.cw.Load(); cw != nil {
		ms := float64(d) / float64(time.Millisecond)
		cw.observe(cwKey{op: opProcessTask, shard: s.id, name: "RecordProcessor.processRecords.Time", unit: unitMillis}, ms)
		success := 0.0
		if ok {
			success = 1
		}
		cw.observe(cwKey{op: opProcessTask, shard: s.id, name: "Success", unit: unitCount}, success)
	}
}

// BatchDone counts a batch whose records have all been handled or given up
// on, after runs handler runs, bisections splits and skipped records given
// up on. Retries are the runs beyond one per part of the batch (a bisection
// makes two parts of one).
func (s *ShardStats) BatchDone(records []kinesisrec.Record, runs, bisections, skipped int) {
	var bytes int64
	for i := range records {
		bytes += int64(records[i].DataLen())
	}
	s.batches.Add(1)
	s.records.Add(int64(len(records)))
	s.bytes.Add(bytes)
	s.skipped.Add(int64(skipped))
	if r := runs - 1 - bisections; r > 0 {
		s.retries.Add(int64(r))
	}
	if cw := s.m.cw.Load(); cw != nil {
		cw.observe(cwKey{op: opProcessTask, shard: s.id, name: "RecordsProcessed", unit: unitCount}, float64(len(records)))
		cw.observe(cwKey{op: opProcessTask, shard: s.id, name: "DataBytesProcessed", unit: unitBytes}, float64(bytes))
	}
}

// Checkpointed counts a checkpoint written.
func (s *ShardStats) Checkpointed() { s.checkpoints.Add(1) }

// AddHandlerCPU counts a handler process's CPU time, whatever its outcome.
func (s *ShardStats) AddHandlerCPU(d time.Duration) { s.handlerCPU.Add(int64(d)) }

// ChildRestart counts a MultiLang child stopped for a failure; the shard
// restarts with a new one after a backoff.
func (s *ShardStats) ChildRestart() { s.childRestarts.Add(1) }

// ChildRunning counts a long-lived handler's CPU while it runs, through
// cpu; childReaped ends that with its exact total (its rusage).
func (s *ShardStats) ChildRunning(cpu func() time.Duration) {
	s.liveMu.Lock()
	s.liveCPU = cpu
	s.liveMu.Unlock()
}

func (s *ShardStats) ChildReaped(total time.Duration) {
	s.liveMu.Lock()
	s.liveCPU = nil
	s.handlerCPU.Add(int64(total))
	s.liveMu.Unlock()
}

// handlerCPUTime is the handlers' CPU time: the reaped ones' and a running
// MultiLang child's so far.
func (s *ShardStats) handlerCPUTime() time.Duration {
	s.liveMu.Lock()
	defer s.liveMu.Unlock()
	d := time.Duration(s.handlerCPU.Load())
	if s.liveCPU != nil {
		d += s.liveCPU()
	}
	return d
}

// Counts are a few of a shard's counters, as the exposition reports them.
type Counts struct {
	GetRecords, Throttled, ReadFailures, Checkpoints int64
	// Subscriptions and Resubscriptions are enhanced fan-out's.
	Subscriptions, Resubscriptions int64
}

// Counts reads a shard's counters; false when this worker never read it.
func (m *Metrics) Counts(id string) (Counts, bool) {
	m.mu.Lock()
	s := m.shards[id]
	m.mu.Unlock()
	if s == nil {
		return Counts{}, false
	}
	return Counts{
		GetRecords: s.getRecords.Load(), Throttled: s.throttled.Load(), ReadFailures: s.readFailures.Load(), Checkpoints: s.checkpoints.Load(),
		Subscriptions: s.subscriptions.Load(), Resubscriptions: s.resubscriptions.Load(),
	}, true
}

// snapshot copies the shards, sorted, for a consistent exposition.
func (m *Metrics) snapshot() (app, stream, worker string, shards []*ShardStats, lease leasecore.Stats, running int, haveLease bool) {
	m.mu.Lock()
	app, stream, worker = m.app, m.stream, m.worker
	for _, s := range m.shards {
		shards = append(shards, s)
	}
	leaseFn, runningFn := m.lease, m.running
	m.mu.Unlock()
	sort.Slice(shards, func(i, j int) bool { return shards[i].id < shards[j].id })
	if leaseFn != nil {
		lease, haveLease = leaseFn(), true
	}
	if runningFn != nil {
		running = runningFn()
	}
	return app, stream, worker, shards, lease, running, haveLease
}

// handlerBuckets are the handler duration histogram's upper bounds, in
// seconds: from a fast in-memory handler to one that calls slow services.
var handlerBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

type histogram struct {
	mu     sync.Mutex
	bounds []float64
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	n      uint64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	i := sort.SearchFloat64s(h.bounds, v)
	h.mu.Lock()
	h.counts[i]++
	h.sum += v
	h.n++
	h.mu.Unlock()
}

// cumulative returns the Prometheus bucket counts (cumulative, +Inf last).
func (h *histogram) cumulative() (counts []uint64, sum float64, n uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	counts = make([]uint64, len(h.counts))
	var acc uint64
	for i, c := range h.counts {
		acc += c
		counts[i] = acc
	}
	return counts, h.sum, h.n
}
