package runner

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/runner/metrics"
)

// logBuffer keeps a worker's log for a test to search, and shows it in the
// test's output too.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func recordedLogger(t *testing.T, id string) (*slog.Logger, *logBuffer) {
	buf := &logBuffer{}
	w := io.MultiWriter(tlogWriter{t}, buf)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test_worker", id), buf
}

// A GetRecords that is never answered, not even after the fault heals,
// stalls its shard only until the request's deadline: the read is retried,
// the records written after the heal are handled within the deadline plus
// the retry's backoff, and the failure is logged at warn, with the error, at
// once.
func TestGetRecordsNeverAnsweredTimesOut(t *testing.T) {
	s := newStack(t, 1)
	proxy := emulator.NewFaultProxy(t, emulator.KinesisEndpoint(t), emulator.Hang, 0, "GetRecords", 1)
	through := s
	through.kin = kinesis.NewFromConfig(emulator.Config(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(proxy.URL) })
	out := outFile(t)
	cfg := s.config(t, "w1", out)
	var logs *logBuffer
	cfg.Log, logs = recordedLogger(t, "w1")
	cfg.Metrics = metrics.New()
	shortKinesisTimeout(&cfg, time.Second)
	start(t, through, cfg)

	s.put(t, func(k string) string { return k + ":before" }, keys("k", 10)...)
	eventually(t, 20*time.Second, "10 records handled", func() bool { return len(readHandled(t, out)) >= 10 })

	proxy.SetRate(1)
	eventually(t, 10*time.Second, "a GetRecords held unanswered", func() bool { return proxy.Held.Load() > 0 })
	time.Sleep(200 * time.Millisecond)
	proxy.SetRate(0) // healed: new requests pass, the held one stays held
	healed := time.Now()
	s.put(t, func(k string) string { return k + ":after" }, keys("k", 10)...)
	eventually(t, 15*time.Second, "the records written after the heal handled", func() bool { return len(readHandled(t, out)) >= 20 })
	// Deadline 1s, then a backoff under 200ms, the idle pause (100ms) and
	// the handler; room for a slow machine.
	if took := time.Since(healed); took > 4*time.Second {
		t.Fatalf("records handled %s after the heal, want within the 1s deadline plus backoff", took)
	}
	log := logs.String()
	if !strings.Contains(log, `level=WARN msg="reads of the shard are failing; retrying (the lease is kept)"`) ||
		!strings.Contains(log, "timedOut=true") || !strings.Contains(log, "deadline exceeded") {
		t.Fatalf("the timed-out read is not logged at warn with its error:\n%s", log)
	}
	if !strings.Contains(log, `msg="reads of the shard recovered"`) {
		t.Fatalf("the recovery is not logged:\n%s", log)
	}
	var metrics bytes.Buffer
	if err := cfg.Metrics.WritePrometheus(&metrics); err != nil {
		t.Fatal(err)
	}
	prefix := `kcltool_shard_read_timeouts_total{app="` + s.table + `",stream="` + s.stream + `",shard="shardId-000000000000"} `
	if v, ok := sampleValue(metrics.String(), prefix); !ok || v < 1 {
		t.Fatalf("read timeouts metric %v (found %v), want at least 1:\n%s", v, ok, metrics.String())
	}
}

// A worker whose first ListShards, GetShardIterator or lease-creating
// PutItem is never answered starts anyway once the fault heals: each of
// those requests is cut off at its deadline and retried.
func TestCallNeverAnsweredAtStart(t *testing.T) {
	for _, c := range []struct{ service, op string }{
		{"kinesis", "ListShards"}, {"kinesis", "GetShardIterator"}, {"dynamodb", "PutItem"},
	} {
		t.Run(c.op, func(t *testing.T) {
			s := newStack(t, 1)
			kp := emulator.NewFaultProxy(t, emulator.KinesisEndpoint(t), emulator.Hang, 0, c.op, 1)
			dp := emulator.NewFaultProxy(t, emulator.DynamoDBEndpoint(t), emulator.Hang, 0, c.op, 1)
			faulty := kp
			if c.service == "dynamodb" {
				faulty = dp
			}
			faulty.SetRate(1)
			through := s
			through.kin = kinesis.NewFromConfig(emulator.Config(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(kp.URL) })
			through.ddb = via(dp.URL)
			out := outFile(t)
			cfg := s.config(t, "w1", out)
			shortKinesisTimeout(&cfg, time.Second)
			shortDynamoDBTimeout(&cfg, time.Second)
			s.put(t, func(k string) string { return k }, keys("k", 5)...)
			start(t, through, cfg)
			eventually(t, 10*time.Second, c.op+" held unanswered", func() bool { return faulty.Held.Load() > 0 })
			faulty.SetRate(0)
			healed := time.Now()
			eventually(t, 15*time.Second, "the records handled after the heal", func() bool { return len(readHandled(t, out)) >= 5 })
			if took := time.Since(healed); took > 5*time.Second {
				t.Fatalf("records handled %s after the heal, want within the 1s deadline plus backoff", took)
			}
		})
	}
}

// via returns a DynamoDB client that talks to the server through url (a
// fault proxy).
func via(url string) *dynamodb.Client {
	return dynamodb.NewFromConfig(emulator.Config(), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(url) })
}

// A shard whose reads keep failing is logged at warn at the first failure,
// throttling included, then once per interval (30s; 1s here) while it goes
// on, not at every retry.
func TestFailingReadsWarnAtOnceThenAtIntervals(t *testing.T) {
	defer shortWarnInterval(time.Second)()
	for _, c := range []struct {
		name  string
		fault emulator.Fault
	}{{"server error", emulator.ServerError}, {"throttled", emulator.Throttle}} {
		t.Run(c.name, func(t *testing.T) {
			s := newStack(t, 1)
			proxy := emulator.NewFaultProxy(t, emulator.KinesisEndpoint(t), c.fault, 0, "GetRecords", 1)
			through := s
			through.kin = kinesis.NewFromConfig(emulator.Config(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(proxy.URL) })
			out := outFile(t)
			cfg := s.config(t, "w1", out)
			var logs *logBuffer
			cfg.Log, logs = recordedLogger(t, "w1")
			start(t, through, cfg)
			s.put(t, func(k string) string { return k }, keys("k", 3)...)
			eventually(t, 20*time.Second, "3 records handled", func() bool { return len(readHandled(t, out)) >= 3 })

			proxy.SetRate(1)
			failing := time.Now()
			eventually(t, 10*time.Second, "a failed read", func() bool { return proxy.Injected.Load() > 0 })
			time.Sleep(3500*time.Millisecond - time.Since(failing))
			proxy.SetRate(0)
			s.put(t, func(k string) string { return k }, keys("after", 3)...)
			eventually(t, 10*time.Second, "reads recover", func() bool { return len(readHandled(t, out)) >= 6 })

			log := logs.String()
			first := strings.Count(log, `level=WARN msg="reads of the shard are failing; retrying (the lease is kept)"`)
			again := strings.Count(log, `level=WARN msg="reads of the shard are still failing; retrying (the lease is kept)"`)
			attempts := proxy.Injected.Load()
			t.Logf("%d failed reads: %d first warnings, %d repeated", attempts, first, again)
			warn := strings.Index(log, `level=WARN msg="reads of the shard are failing`)
			debug := strings.Index(log, `level=DEBUG msg="Kinesis call failed; retrying"`)
			switch {
			case warn < 0 || (debug >= 0 && debug < warn):
				t.Fatalf("the first failed read is not logged at warn at once:\n%s", log)
			case first != 1 || again < 1 || again > 3 || int64(first+again) >= attempts:
				t.Fatalf("%d failed reads over 3.5s logged %d first and %d repeated warnings; want 1, then one a second:\n%s", attempts, first, again, log)
			}
			if c.fault == emulator.Throttle && !strings.Contains(log, "throttled=true") {
				t.Fatalf("the warning does not say the reads are throttled:\n%s", log)
			}
			if c.fault == emulator.ServerError && !strings.Contains(log, "InternalServerError") {
				t.Fatalf("the warning lacks the error:\n%s", log)
			}
			if !strings.Contains(log, `msg="reads of the shard recovered"`) {
				t.Fatalf("the recovery is not logged:\n%s", log)
			}
		})
	}
}

// Throttling that comes and goes (half of the GetRecords calls for 3.5s,
// each run of throttles ended by a success) is logged at warn from the
// first throttle, then at most once per interval (1s here) for the shard,
// each line with the count of failures since the one before; the recovery
// of a run that was logged is logged at info, and the counts add up to the
// throttles injected.
func TestIntermittentThrottlingWarnsAtOnceRateLimited(t *testing.T) {
	defer shortWarnInterval(time.Second)()
	s := newStack(t, 1)
	proxy := emulator.NewFaultProxy(t, emulator.KinesisEndpoint(t), emulator.Throttle, 0, "GetRecords", 7)
	through := s
	through.kin = kinesis.NewFromConfig(emulator.Config(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(proxy.URL) })
	out := outFile(t)
	cfg := s.config(t, "w1", out)
	var logs *logBuffer
	cfg.Log, logs = recordedLogger(t, "w1")
	start(t, through, cfg)
	s.put(t, func(k string) string { return k }, keys("k", 3)...)
	eventually(t, 20*time.Second, "3 records handled", func() bool { return len(readHandled(t, out)) >= 3 })

	proxy.SetRate(0.5)
	throttling := time.Now()
	time.Sleep(3500 * time.Millisecond)
	proxy.SetRate(0)
	took := time.Since(throttling)
	s.put(t, func(k string) string { return k }, keys("after", 3)...)
	eventually(t, 10*time.Second, "reads recover", func() bool { return len(readHandled(t, out)) >= 6 })

	log := logs.String()
	throttles := proxy.Injected.Load()
	warnings, counted := 0, 0
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "reads of the shard are") {
			continue
		}
		warnings++
		if !strings.Contains(line, "throttled=true") {
			t.Errorf("warning without throttled=true: %s", line)
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "failedSinceLastWarning="); ok {
				n, _ := strconv.Atoi(v)
				counted += n
			}
		}
	}
	t.Logf("%d throttled reads over %s: %d warnings, counting %d failures", throttles, took.Round(time.Millisecond), warnings, counted)
	if throttles < 4 {
		t.Fatalf("only %d throttled reads: the test did not throttle", throttles)
	}
	if warnings == 0 {
		t.Fatalf("%d throttled reads, no warning:\n%s", throttles, log)
	}
	// One at the first throttle, then at most one per second.
	if max := 1 + int(took/time.Second); warnings > max {
		t.Fatalf("%d warnings for %d throttles over %s; want at most %d (one a second):\n%s", warnings, throttles, took, max, log)
	}
	if counted < 1 || int64(counted) > throttles {
		t.Fatalf("warnings count %d failures, %d were injected", counted, throttles)
	}
	if warnings >= int(throttles) {
		t.Fatalf("every throttle warned (%d of %d): not rate-limited", warnings, throttles)
	}
	if !strings.Contains(log, `level=INFO msg="reads of the shard recovered"`) {
		t.Fatalf("no recovery at info:\n%s", log)
	}
}

// Two workers whose lease-table writes lose 30% of their answers after
// being applied, while records flow and every batch is checkpointed: no
// lease is lost in 20s (failover 1.5s, so renewals every 475ms), and every
// record is handled.
func TestLostWriteAnswersLoseNoLeaseWhileConsuming(t *testing.T) {
	s := newStack(t, 4)
	out := outFile(t)
	var proxies []*emulator.FaultProxy
	var workerMetrics []*metrics.Metrics
	for i, id := range []string{"w1", "w2"} {
		p := emulator.NewFaultProxy(t, emulator.DynamoDBEndpoint(t), emulator.LoseResponse, 0, "UpdateItem", uint64(i+1))
		through := s
		through.ddb = via(p.URL)
		cfg := s.config(t, id, out)
		cfg.Metrics = metrics.New()
		start(t, through, cfg)
		proxies, workerMetrics = append(proxies, p), append(workerMetrics, cfg.Metrics)
	}
	// value reads a worker metric from the Prometheus text.
	value := func(i int, name string) float64 {
		var b bytes.Buffer
		if err := workerMetrics[i].WritePrometheus(&b); err != nil {
			t.Fatal(err)
		}
		v, _ := sampleValue(b.String(), name+`{app="`+s.table+`",worker="w`+fmt.Sprint(i+1)+`"} `)
		return v
	}
	eventually(t, 20*time.Second, "2 leases each", func() bool {
		return value(0, "kcltool_worker_leases_held") == 2 && value(1, "kcltool_worker_leases_held") == 2
	})
	lost := func() float64 {
		return value(0, "kcltool_worker_leases_lost_total") + value(1, "kcltool_worker_leases_lost_total")
	}
	before := lost()

	for _, p := range proxies {
		p.SetRate(0.3)
	}
	sent := 0
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); {
		s.put(t, func(k string) string { return k }, keys(fmt.Sprintf("r%d-", sent), 8)...)
		sent += 8
		time.Sleep(200 * time.Millisecond)
	}
	for _, p := range proxies {
		p.SetRate(0)
	}
	if n := lost() - before; n != 0 {
		t.Fatalf("%v leases lost with only lost write answers", n)
	}
	eventually(t, 20*time.Second, "every record handled", func() bool {
		seen := map[string]bool{}
		for _, h := range readHandled(t, out) {
			seen[h.PartitionKey] = true
		}
		return len(seen) >= sent
	})
	t.Logf("%d records; answers lost: %d", sent, proxies[0].Injected.Load()+proxies[1].Injected.Load())
}
