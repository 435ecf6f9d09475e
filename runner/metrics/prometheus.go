package metrics

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

// The Prometheus text exposition format (version 0.0.4) is written by hand:
// a few dozen lines, against a client library that would be the binary's
// largest dependency.

// WritePrometheus writes every metric in the Prometheus text format.
func (m *Metrics) WritePrometheus(w io.Writer) error {
	app, stream, worker, shards, lease, running, haveLease := m.snapshot()
	bw := bufio.NewWriter(w)
	p := &promWriter{w: bw}

	writeBuildInfo(p, m.buildInfo())
	wl := []string{"app", app, "worker", worker}
	if haveLease {
		p.single("kcltool_worker_leases_held", "gauge", "Leases this worker holds now.", wl, float64(lease.Held))
		p.single("kcltool_worker_leases_taken_total", "counter", "Leases taken because they were expired or unowned.", wl, float64(lease.Taken))
		p.single("kcltool_worker_leases_stolen_total", "counter", "Leases stolen from the most loaded worker to balance the fleet.", wl, float64(lease.Stolen))
		p.single("kcltool_worker_leases_lost_total", "counter", "Leases lost: taken by another worker, or not renewed within the failover time.", wl, float64(lease.Lost))
		p.single("kcltool_worker_leases_released_total", "counter", "Leases given up: finished shards, and all of them on graceful shutdown.", wl, float64(lease.Released))
		p.single("kcltool_worker_lease_renewals_total", "counter", "Successful lease renewals.", wl, float64(lease.Renewals))
		p.single("kcltool_worker_dynamodb_throttled_total", "counter", "Lease table calls answered with a throttling error (retried).", wl, float64(lease.Throttled))
		p.capacityUnits(wl, lease.Units)
	}
	p.writeLeader(m, wl)
	p.writeHealthGauges(m, wl)
	p.single("kcltool_worker_handlers_running", "gauge", "Handler processes running now (bounded by --max-parallel).", wl, float64(running))
	if cpu, ok := processCPU(); ok {
		// The name and meaning of Prometheus's process collector, to the
		// microsecond rather than the clock tick it reads from /proc: the
		// run benchmark compares it with a peer's.
		p.single("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds (this process, not its handlers).", nil, cpu.Seconds())
	}
	// Prometheus's Go collector's name: a worker's goroutines grow with
	// the shards it holds (two per shard), which this shows.
	p.single("go_goroutines", "gauge", "Number of goroutines that currently exist.", nil, float64(runtime.NumGoroutine()))

	type counter struct {
		name, help string
		get        func(*ShardStats) int64
	}
	counters := []counter{
		{"kcltool_shard_records_total", "Records handled (after KPL de-aggregation), counted when their batch is done.", func(s *ShardStats) int64 { return s.records.Load() }},
		{"kcltool_shard_bytes_total", "Data bytes of the handled records.", func(s *ShardStats) int64 { return s.bytes.Load() }},
		{"kcltool_shard_batches_total", "Batches done: handled, or given up on into --on-failure.", func(s *ShardStats) int64 { return s.batches.Load() }},
		{"kcltool_shard_handler_runs_total", "Handler processes run.", func(s *ShardStats) int64 { return s.runs.Load() }},
		{"kcltool_shard_handler_failures_total", "Handler runs that failed, timed out or reported failed items.", func(s *ShardStats) int64 { return s.failures.Load() }},
		{"kcltool_shard_handler_retries_total", "Handler runs of records already handed to a handler (KCLTOOL_ATTEMPT above 1), counted as each starts.", func(s *ShardStats) int64 { return s.retries.Load() }},
		{"kcltool_shard_records_skipped_total", "Records given up on and written to --on-failure.", func(s *ShardStats) int64 { return s.skipped.Load() }},
		{"kcltool_shard_checkpoints_total", "Checkpoints written.", func(s *ShardStats) int64 { return s.checkpoints.Load() }},
		{"kcltool_shard_getrecords_total", "GetRecords calls.", func(s *ShardStats) int64 { return s.getRecords.Load() }},
		{"kcltool_shard_getrecords_throttled_total", "GetRecords calls answered with a throttling error.", func(s *ShardStats) int64 { return s.throttled.Load() }},
		{"kcltool_shard_read_failures_total", "GetRecords and GetShardIterator calls that failed (throttled, refused, timed out or broken); each is retried.", func(s *ShardStats) int64 { return s.readFailures.Load() }},
		{"kcltool_shard_multilang_child_restarts_total", "MultiLang children (--multilang) stopped because they exited, broke the protocol or timed out; the shard restarts with a new child after a backoff.", func(s *ShardStats) int64 { return s.childRestarts.Load() }},
		{"kcltool_shard_subscriptions_total", "Enhanced fan-out subscriptions (--efo) that delivered events, resubscriptions included; refused ones count as read failures.", func(s *ShardStats) int64 { return s.subscriptions.Load() }},
		{"kcltool_shard_resubscriptions_total", "Enhanced fan-out subscriptions (--efo) that continued from the last event after the previous one ended (every 5 minutes) or failed.", func(s *ShardStats) int64 { return s.resubscriptions.Load() }},
		{"kcltool_shard_read_timeouts_total", "GetRecords and GetShardIterator calls cut off by --kinesis-timeout.", func(s *ShardStats) int64 { return s.readTimeouts.Load() }},
	}
	labels := func(s *ShardStats) []string { return []string{"app", app, "stream", stream, "shard", s.id} }

	p.family("kcltool_shard_millis_behind_latest", "gauge", "How far the shard's reader is behind the tip of the stream, from the last GetRecords (shards this worker reads now).")
	for _, s := range shards {
		if s.held.Load() {
			p.sample("kcltool_shard_millis_behind_latest", labels(s), float64(s.millisBehind.Load()))
		}
	}
	p.family("kcltool_shard_read_failing_seconds", "gauge", "How long the shard's Kinesis reads have been failing without a success in between (0 while they succeed; shards this worker reads now).")
	now := m.now()
	for _, s := range shards {
		if s.held.Load() {
			failing := 0.0
			if since := s.failingSince.Load(); since != 0 {
				failing = max(0, now.Sub(time.Unix(0, since)).Seconds())
			}
			p.sample("kcltool_shard_read_failing_seconds", labels(s), failing)
		}
	}
	writeBacklogs(p, shards, labels, now)
	for _, c := range counters {
		p.family(c.name, "counter", c.help)
		for _, s := range shards {
			p.sample(c.name, labels(s), float64(c.get(s)))
		}
	}
	const cpu = "kcltool_shard_handler_cpu_seconds_total"
	p.family(cpu, "counter", "User and system CPU time of the handler processes, and of the processes they waited for; a running MultiLang child's so far.")
	for _, s := range shards {
		p.sample(cpu, labels(s), s.handlerCPUTime().Seconds())
	}
	const hist = "kcltool_shard_handler_duration_seconds"
	p.family(hist, "histogram", "Handler run time.")
	for _, s := range shards {
		counts, sum, n := s.hist.cumulative()
		for i, c := range counts {
			le := "+Inf"
			if i < len(handlerBuckets) {
				le = strconv.FormatFloat(handlerBuckets[i], 'g', -1, 64)
			}
			p.sample(hist+"_bucket", append(labels(s), "le", le), float64(c))
		}
		p.sample(hist+"_sum", labels(s), sum)
		p.sample(hist+"_count", labels(s), float64(n))
	}
	const delivery = "kcltool_shard_delivery_seconds"
	p.family(delivery, "histogram", "kcltool's own added latency: from a read's answer (a GetRecords page, or with --efo a SubscribeToShard event) arriving to its batch being handed to the handler.")
	for _, s := range shards {
		writeHistogram(p, delivery, labels(s), s.delivery, deliveryBuckets)
	}
	return bw.Flush()
}

// capacityUnits writes the lease table's consumed capacity units by
// operation (docs/run.md, Capacity units). Every operation is written from
// the start, at 0 until it first consumes, so that rates work at once.
func (p *promWriter) capacityUnits(wl []string, units map[string]leasecore.Units) {
	ops := leasecore.CapacityOps(units)
	for _, op := range capacityOps {
		if _, ok := units[op]; !ok {
			ops = append(ops, op)
		}
	}
	sort.Strings(ops)
	for _, m := range []struct {
		name, help string
		get        func(leasecore.Units) float64
	}{
		{"kcltool_worker_lease_table_read_units_total", "Read capacity units the worker's lease-table calls consumed, by operation (as DynamoDB answered them; estimated from item sizes where it did not).",
			func(u leasecore.Units) float64 { return u.Read }},
		{"kcltool_worker_lease_table_write_units_total", "Write capacity units the worker's lease-table calls consumed, by operation (as DynamoDB answered them; estimated from item sizes where it did not).",
			func(u leasecore.Units) float64 { return u.Write }},
	} {
		p.family(m.name, "counter", m.help)
		for _, op := range ops {
			p.sample(m.name, []string{wl[0], wl[1], wl[2], wl[3], "op", op}, m.get(units[op]))
		}
	}
}

// capacityOps are the operations whose units are always exposed.
var capacityOps = []string{leasecore.OpRenew, leasecore.OpTake, leasecore.OpSteal, leasecore.OpCheckpoint, leasecore.OpRelease,
	leasecore.OpScan, leasecore.OpShardSync, leasecore.OpCleanup, leasecore.OpOther}

func writeHistogram(p *promWriter, name string, labels []string, h *histogram, bounds []float64) {
	counts, sum, n := h.cumulative()
	for i, c := range counts {
		le := "+Inf"
		if i < len(bounds) {
			le = strconv.FormatFloat(bounds[i], 'g', -1, 64)
		}
		p.sample(name+"_bucket", append(labels, "le", le), float64(c))
	}
	p.sample(name+"_sum", labels, sum)
	p.sample(name+"_count", labels, float64(n))
}

// promWriter appends into one buffer: a scrape writes a few lines per shard
// and metric, and must stay cheap next to the work it reports on.
type promWriter struct {
	w   *bufio.Writer
	buf []byte
}

func (p *promWriter) family(name, typ, help string) {
	p.buf = append(p.buf[:0], "# HELP "...)
	p.buf = append(p.buf, name...)
	p.buf = append(p.buf, ' ')
	p.buf = append(p.buf, help...)
	p.buf = append(p.buf, "\n# TYPE "...)
	p.buf = append(p.buf, name...)
	p.buf = append(p.buf, ' ')
	p.buf = append(p.buf, typ...)
	p.buf = append(p.buf, '\n')
	p.w.Write(p.buf)
}

// single writes a metric family that has one sample.
func (p *promWriter) single(name, typ, help string, labels []string, v float64) {
	p.family(name, typ, help)
	p.sample(name, labels, v)
}

// sample writes one line; labels alternate name, value.
func (p *promWriter) sample(name string, labels []string, v float64) {
	b := append(p.buf[:0], name...)
	if len(labels) > 0 {
		b = append(b, '{')
	}
	for i := 0; i+1 < len(labels); i += 2 {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, labels[i]...)
		b = append(b, '=', '"')
		if strings.ContainsAny(labels[i+1], "\\\"\n") {
			b = append(b, labelEscaper.Replace(labels[i+1])...)
		} else {
			b = append(b, labels[i+1]...)
		}
		b = append(b, '"')
	}
	if len(labels) > 0 {
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = strconv.AppendFloat(b, v, 'g', -1, 64)
	b = append(b, '\n')
	p.buf = b
	p.w.Write(b)
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// Serve listens on addr and serves /metrics, and the health endpoints
// /livez, /healthz and /readyz (health.go), until ctx ends. It
// returns once listening, with the address (addr may use port 0), so that a
// port in use fails the start instead of a log line later.
func Serve(ctx context.Context, addr string, m *Metrics, log *slog.Logger) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		if err := m.WritePrometheus(w); err != nil {
			log.Debug("metrics scrape", "err", err)
		}
	})
	handleHealth(mux, m)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics endpoint stopped", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return ln.Addr(), nil
}
