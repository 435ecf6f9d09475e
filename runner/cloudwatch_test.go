package runner

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// The worker publishes KCL's metric names through the real SDK client (smithy
// rpc-v2-cbor on the wire): namespace = application, MillisBehindLatest,
// RecordsProcessed and processRecords.Time per shard, lease counts per
// worker, and a last publication at stop.
func TestCloudWatchMetricsUseKCLNames(t *testing.T) {
	fake := emulator.NewCloudWatch(t)
	s := newStack(t, 2)
	out := outFile(t)
	s.put(t, func(k string) string { return k }, keys("k", 30)...)
	cfg := s.config(t, "w1", out)
	cfg.CloudWatch = cloudwatch.NewFromConfig(emulator.Config(), func(o *cloudwatch.Options) { o.BaseEndpoint = aws.String(fake.URL) })
	cfg.CloudWatchInterval = 300 * time.Millisecond
	r := start(t, s, cfg)
	eventually(t, 20*time.Second, "30 records", func() bool { return len(readHandled(t, out)) >= 30 })
	eventually(t, 20*time.Second, "renewals' units published", func() bool {
		sum := 0.0
		for _, d := range fake.Data() {
			if d.Dimensions["Operation"] == "LeaseTable.renew" && d.MetricName == "ConsumedWriteCapacityUnits" {
				sum += d.Value
			}
		}
		return sum >= 2
	})
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	records := map[string]float64{}
	units := map[string]float64{}
	seen := map[string]bool{}
	for _, d := range fake.Data() {
		if d.Namespace != s.table {
			t.Fatalf("namespace %q, want the application name %q", d.Namespace, s.table)
		}
		op := d.Dimensions["Operation"]
		key := op + "/" + d.MetricName
		seen[key] = true
		switch op {
		case "ProcessTask":
			if d.Dimensions["ShardId"] == "" {
				t.Errorf("%s without a ShardId dimension", key)
			}
			if d.MetricName == "RecordsProcessed" {
				records[d.Dimensions["ShardId"]] += d.Value
			}
		case "LeaseTable.renew", "LeaseTable.take":
			units[key] += d.Value
			fallthrough
		case "RenewAllLeases", "TakeLeases":
			if d.Dimensions["WorkerIdentifier"] != "w1" {
				t.Errorf("%s with WorkerIdentifier %q", key, d.Dimensions["WorkerIdentifier"])
			}
		}
	}
	for _, want := range []string{"ProcessTask/MillisBehindLatest", "ProcessTask/RecordsProcessed", "ProcessTask/DataBytesProcessed",
		"ProcessTask/RecordProcessor.processRecords.Time", "RenewAllLeases/CurrentLeases", "RenewAllLeases/LostLeases",
		"TakeLeases/TakenLeases", "ApplicationTracker/MillisBehindLatest", "ProcessTask/KinesisDataFetcher.getRecords.Success"} {
		if !seen[want] {
			t.Errorf("no %s published; got %v", want, seen)
		}
	}
	// Two leases taken, then renewed every period: each a conditional
	// write of at least one unit.
	for _, k := range []string{"LeaseTable.take/ConsumedWriteCapacityUnits", "LeaseTable.renew/ConsumedWriteCapacityUnits"} {
		if units[k] < 2 {
			t.Errorf("%s sums to %v, want at least 2 (one per lease); got %v", k, units[k], units)
		}
	}
	if total := records["shardId-000000000000"] + records["shardId-000000000001"]; total != 30 {
		t.Errorf("RecordsProcessed sums to %v over the shards, want 30 (%v)", total, fmt.Sprint(records))
	}
}

// A PutMetricData that is never answered holds the publisher only until its
// 5s deadline (the KCL's): the metrics of later periods are published once
// CloudWatch answers again.
func TestCloudWatchNeverAnsweredDoesNotStopPublishing(t *testing.T) {
	fake := emulator.NewCloudWatch(t)
	proxy := emulator.NewFaultProxy(t, fake.URL, emulator.Hang, 1, "", 1)
	s := newStack(t, 1)
	cfg := s.config(t, "w1", outFile(t))
	cfg.CloudWatch = cloudwatch.NewFromConfig(emulator.Config(), func(o *cloudwatch.Options) { o.BaseEndpoint = aws.String(proxy.URL) })
	cfg.CloudWatchInterval = 200 * time.Millisecond
	start(t, s, cfg)
	eventually(t, 10*time.Second, "a PutMetricData held unanswered", func() bool { return proxy.Held.Load() > 0 })
	proxy.SetRate(0)
	healed := time.Now()
	eventually(t, 15*time.Second, "metrics published after the heal", func() bool { return len(fake.Data()) > 0 })
	if took := time.Since(healed); took > 8*time.Second {
		t.Fatalf("metrics published %s after the heal, want within the 5s deadline plus a period", took)
	}
}

// The last publication at a graceful stop waits for a periodic one in
// flight instead of cutting it off: every PutMetricData sent reaches
// CloudWatch, and the capacity units published add up to what the worker
// consumed. With a slow CloudWatch (a 300 ms round trip, publishing every
// 20 ms) a put is nearly always in flight when the worker stops; the stop
// used to cancel it, and the period it carried was lost (CI: the last
// batch's RecordsProcessed missing).
func TestCloudWatchStopKeepsThePeriodInFlight(t *testing.T) {
	fake := emulator.NewCloudWatch(t)
	const delay = 300 * time.Millisecond
	proxy := emulator.NewFaultProxy(t, fake.URL, emulator.Throttle, 0, "", 1)
	proxy.SetDelay(delay)
	s := newStack(t, 2)
	out := outFile(t)
	s.put(t, func(k string) string { return k }, keys("k", 10)...)
	cfg := s.config(t, "w1", out)
	cfg.CloudWatch = cloudwatch.NewFromConfig(emulator.Config(), func(o *cloudwatch.Options) { o.BaseEndpoint = aws.String(proxy.URL) })
	cfg.CloudWatchInterval = 20 * time.Millisecond
	r := start(t, s, cfg)
	eventually(t, 20*time.Second, "10 records", func() bool { return len(readHandled(t, out)) >= 10 })
	eventually(t, 20*time.Second, "a renewal published", func() bool {
		for _, d := range fake.Data() {
			if d.Dimensions["Operation"] == "LeaseTable.renew" {
				return true
			}
		}
		return false
	})
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	time.Sleep(delay + 200*time.Millisecond) // a put cut off still reaches the proxy after its delay
	if sent, got := proxy.Total(), int64(fake.Calls()); sent != got {
		t.Errorf("%d PutMetricData reached the proxy, %d reached CloudWatch: a publication was cut off at the stop", sent, got)
	}
	var published, consumed float64
	for _, d := range fake.Data() {
		if strings.HasPrefix(d.Dimensions["Operation"], "LeaseTable.") && d.MetricName == "ConsumedWriteCapacityUnits" {
			published += d.Value
		}
	}
	for _, u := range r.w.coord.Stats().Units {
		consumed += u.Write
	}
	if math.Abs(published-consumed) > 1e-6 {
		t.Errorf("published %v write units of the lease table, the worker consumed %v", published, consumed)
	}
}
