package cmd

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// The doctor scenarios run the built binary against the local servers:
// `kcltool run` workers (or an in-process KCL worker where a Java
// application's behaviour is needed), a fault-injecting proxy where DynamoDB
// must throttle, and the in-test CloudWatch. Each asserts the finding's id,
// its severity and the exit code. Failover times are 1s (500ms for the
// in-process worker) so that windows of a few seconds see several.

// TestDoctorHealthyFleet: two workers, balanced and caught up, publishing
// KCL metrics: only information, exit 0. A second doctor without CloudWatch
// access says what it skipped and still exits 0.
func TestDoctorHealthyFleet(t *testing.T) {
	t.Parallel()
	s := newDoctorStack(t, 4)
	cw := emulator.NewMetricStore(t)
	denied := emulator.NewMetricStore(t)
	denied.Deny("AccessDeniedException")
	env := []string{"AWS_ENDPOINT_URL_CLOUDWATCH=" + cw.URL}
	for _, id := range []string{"w1", "w2"} {
		startWorker(t, id, env, doctorWorkerArgs(s, id, "--cloudwatch-metrics", "--cloudwatch-interval", "500ms", "--exec", "cat >/dev/null")...)
	}
	s.putEach(t, 3, "ok")
	eventuallyE2E(t, 20*time.Second, "two balanced, caught-up workers", func() bool { return s.balanced(t, 2, 4) && s.caughtUp(t) })

	var wg sync.WaitGroup
	var withCW, without doctorReport
	var codeCW, codeWithout int
	args := []string{"--app", s.app, "--stream", s.stream, "--failover-time", "1s", "--window", "3s"}
	wg.Add(2)
	go func() { defer wg.Done(); withCW, _, codeCW = runDoctorJSON(t, env, args...) }()
	go func() {
		defer wg.Done()
		without, _, codeWithout = runDoctorJSON(t, []string{"AWS_ENDPOINT_URL_CLOUDWATCH=" + denied.URL}, args...)
	}()
	wg.Wait()

	for name, c := range map[string]struct {
		rep  doctorReport
		code int
	}{"with CloudWatch": {withCW, codeCW}, "without CloudWatch": {without, codeWithout}} {
		if c.code != 0 || c.rep.Failed {
			t.Errorf("%s: exit %d", name, c.code)
		}
		for _, f := range c.rep.Findings {
			if f.Severity != "info" {
				t.Errorf("%s: healthy fleet has %s %s: %s", name, f.Severity, f.ID, f.Summary)
			}
		}
		if c.rep.Reads != 4 || c.rep.Cost.DynamoDB.Scans != 4 || c.rep.WindowMillis < 3000 {
			t.Errorf("%s: %d reads, %d scans over %dms: want 4 reads, one per failover time", name, c.rep.Reads, c.rep.Cost.DynamoDB.Scans, c.rep.WindowMillis)
		}
	}
	expectFinding(t, withCW, "table-capacity", "info")
	if withCW.has("cloudwatch-skipped") || withCW.Cost.CloudWatch.GetMetricData != 1 {
		t.Errorf("CloudWatch not read in one request: %d requests\n%s", withCW.Cost.CloudWatch.GetMetricData, withCW.summaries())
	}
	if !withCW.has("kcl-lease-moves") {
		t.Errorf("the workers' published TakenLeases were not read:\n%s", withCW.summaries())
	}
	summary, _ := expectFinding(t, without, "cloudwatch-skipped", "info")
	if !strings.Contains(summary, "AccessDeniedException") {
		t.Errorf("skip reason %q", summary)
	}
}

// TestDoctorChurnUnderThrottling: each worker reaches DynamoDB through its
// own fault-injecting proxy, and the proxies take turns throttling every
// write for 2s, longer than the failover time (as a table at its capacity
// does to whoever writes when traffic peaks). The throttled worker's
// renewals fail, its leases expire while it is alive, the other worker takes
// them, and the first steals them back once it recovers: leases bounce.
// CloudWatch, fed with the proxies' counts the way DynamoDB publishes
// ThrottledRequests, names the throttling.
func TestDoctorChurnUnderThrottling(t *testing.T) {
	t.Parallel()
	s := newDoctorStack(t, 4)
	cw := emulator.NewMetricStore(t)
	var proxies []*emulator.FaultProxy
	for i, id := range []string{"w1", "w2"} {
		p := emulator.NewFaultProxy(t, emulator.DynamoDBEndpoint(t), emulator.Throttle, 0, "UpdateItem", uint64(i+1))
		proxies = append(proxies, p)
		// A fast taker takes expired leases within the burst (KCL's
		// 2 × (failover + 25ms) would need longer bursts and windows).
		startWorker(t, id, []string{"AWS_ENDPOINT_URL_DYNAMODB=" + p.URL},
			doctorWorkerArgs(s, id, "--taker-interval", "200ms", "--exec", "cat >/dev/null")...)
	}
	eventuallyE2E(t, 20*time.Second, "two balanced workers", func() bool { return s.balanced(t, 2, 4) })

	stopBursts := throttleInTurns(proxies, 2*time.Second, time.Second)
	stop := publishThrottles(cw, proxies, s.app)
	rep, _, code := runDoctorJSON(t, []string{"AWS_ENDPOINT_URL_CLOUDWATCH=" + cw.URL},
		"--app", s.app, "--stream", s.stream, "--failover-time", "1s", "--window", "6s")
	stopBursts()
	stop()
	if code != 3 || !rep.Failed {
		t.Errorf("exit %d, want 3", code)
	}
	summary, cause := expectFinding(t, rep, "lease-churn", "warn")
	if !strings.Contains(cause, "throttl") {
		t.Errorf("churn cause does not name the throttling: %s", cause)
	}
	if !strings.Contains(summary, "bounced back") {
		t.Errorf("no lease bounced: %s\n%s", summary, rep.summaries())
	}
	summary, _ = expectFinding(t, rep, "table-throttled", "critical")
	if !strings.Contains(summary, "UpdateItem") {
		t.Errorf("throttled summary %q", summary)
	}
	if rep.has("dead-worker") {
		t.Errorf("a throttled worker that recovers is not dead:\n%s", rep.summaries())
	}
}

// throttleInTurns throttles every write through one proxy for on, then
// none for off, then the next proxy, round and round until stopped.
func throttleInTurns(proxies []*emulator.FaultProxy, on, off time.Duration) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for i := 0; ; i++ {
			p := proxies[i%len(proxies)]
			for _, step := range []struct {
				rate float64
				d    time.Duration
			}{{1, on}, {0, off}} {
				p.SetRate(step.rate)
				select {
				case <-done:
					p.SetRate(0)
					return
				case <-time.After(step.d):
				}
			}
		}
	}()
	return func() { close(done); <-finished }
}

// publishThrottles plays DynamoDB's part in CloudWatch: every half second
// it adds the requests the proxies throttled as ThrottledRequests{UpdateItem}.
func publishThrottles(cw *emulator.MetricStore, proxies []*emulator.FaultProxy, table string) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var sent int64
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			var n int64
			for _, p := range proxies {
				n += p.Injected.Load()
			}
			if n > sent {
				cw.Add("AWS/DynamoDB", "ThrottledRequests", map[string]string{"TableName": table, "Operation": "UpdateItem"}, time.Now(), float64(n-sent))
				sent = n
			}
		}
	}()
	return func() { close(done); <-finished }
}

// TestDoctorDeadWorker: one of two workers is killed; the survivor is at
// its maxLeasesForWorker and cannot take the leases, which stay with the
// dead worker, unprocessed: critical.
func TestDoctorDeadWorker(t *testing.T) {
	t.Parallel()
	s := newDoctorStack(t, 4)
	startWorker(t, "w1", nil, doctorWorkerArgs(s, "w1", "--max-leases-for-worker", "2", "--exec", "cat >/dev/null")...)
	eventuallyE2E(t, 20*time.Second, "w1 to hold its 2 leases", func() bool { return s.owners(t)["w1"] == 2 })
	w2 := startWorker(t, "w2", nil, doctorWorkerArgs(s, "w2", "--exec", "cat >/dev/null")...)
	eventuallyE2E(t, 20*time.Second, "two balanced workers", func() bool { return s.balanced(t, 2, 4) })
	if err := w2.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	rep, _, code := runDoctorJSON(t, nil, "--app", s.app, "--stream", s.stream, "--failover-time", "1s", "--window", "6s", "--no-cloudwatch", "--fail-on", "critical")
	if code != 3 {
		t.Errorf("exit %d, want 3", code)
	}
	summary, _ := expectFinding(t, rep, "dead-worker", "critical")
	if !strings.Contains(summary, "w2") || !strings.Contains(summary, "2 leases still held") {
		t.Errorf("summary %q", summary)
	}
	if rep.has("lease-churn") || rep.has("struggling-worker") {
		t.Errorf("a dead worker is not churn:\n%s", rep.summaries())
	}
}

// TestDoctorPoisonRecord: a handler that always fails one record. The
// worker holds and renews the lease, the checkpoint stays before the
// record, the record waits: stuck-shard, critical once the record is older
// than the window.
func TestDoctorPoisonRecord(t *testing.T) {
	t.Parallel()
	s := newDoctorStack(t, 1)
	startWorker(t, "w1", nil, doctorWorkerArgs(s, "w1", "--format", "raw", "--retry-backoff", "200ms",
		"--exec", "if grep -q POISON; then exit 1; fi")...)
	s.putEach(t, 3, "fine")
	eventuallyE2E(t, 20*time.Second, "the good records to be checkpointed", func() bool { return s.caughtUp(t) })
	good := s.last[shardID(0)]
	s.putEach(t, 1, "POISON")
	rep, _, code := runDoctorJSON(t, nil, "--app", s.app, "--stream", s.stream, "--failover-time", "1s", "--window", "3s", "--no-cloudwatch")
	if code != 3 {
		t.Errorf("exit %d, want 3", code)
	}
	_, _, _, lines := rep.finding(t, "stuck-shard")
	expectFinding(t, rep, "stuck-shard", "critical")
	if len(lines) != 1 || !strings.Contains(lines[0], shardID(0)) || !strings.Contains(lines[0], "w1 renewed it") {
		t.Errorf("evidence %v", lines)
	}
	if got := s.leases(t)[shardID(0)].Checkpoint.SequenceNumber; got != good {
		t.Errorf("checkpoint moved past the poison record: %s", got)
	}
}

// TestDoctorBlockedChild: a Java-style worker read the parent to its end
// but never checkpointed SHARD_END; the children wait. doctor names the
// parent, says it is drained, and pins the JSON shape in a golden file.
func TestDoctorBlockedChild(t *testing.T) {
	t.Parallel()
	s := newScenario(t, 1)
	s.put(shardID(0), 2)
	s.split(shardID(0))
	s.lease(shardID(0), "java-worker", s.last[shardID(0)])
	s.lease(shardID(1), "java-worker", leasecore.TRIM_HORIZON)
	s.lease(shardID(2), "java-worker", leasecore.TRIM_HORIZON)
	holdLeases(t, s.table, "java-worker", 500*time.Millisecond, 3)
	rep, out, code := runDoctorJSON(t, nil, "--app", s.table, "--stream", s.stream, "--failover-time", "500ms", "--window", "1500ms", "--no-cloudwatch")
	if code != 3 {
		t.Errorf("exit %d, want 3", code)
	}
	summary, cause := expectFinding(t, rep, "blocked-child", "critical")
	if !strings.Contains(summary, "2 child shards waiting on 1 parent not at SHARD_END: "+shardID(0)) || !strings.Contains(cause, "shardEnded") {
		t.Errorf("summary %q cause %q", summary, cause)
	}
	if rep.has("stuck-shard") || rep.has("dead-worker") {
		t.Errorf("extra findings:\n%s", rep.summaries())
	}
	golden(t, "doctor-blocked-child.json", normalizeDoctor(out))
}

// TestDoctorThrottlingFromCloudWatch: the in-test CloudWatch serves
// throttle datapoints for the lease table; doctor reads them in one
// GetMetricData request. --fail-on never reports without failing.
func TestDoctorThrottlingFromCloudWatch(t *testing.T) {
	t.Parallel()
	s := newScenario(t, 1)
	s.lease(shardID(0), "w1", leasecore.TRIM_HORIZON)
	holdLeases(t, s.table, "w1", 500*time.Millisecond, 1)
	cw := emulator.NewMetricStore(t)
	at := time.Now().Add(-time.Minute)
	cw.Add("AWS/DynamoDB", "ThrottledRequests", map[string]string{"TableName": s.table, "Operation": "UpdateItem"}, at, 30)
	cw.Add("AWS/DynamoDB", "ThrottledRequests", map[string]string{"TableName": s.table, "Operation": "Scan"}, at, 7)
	cw.Add("AWS/DynamoDB", "WriteThrottleEvents", map[string]string{"TableName": s.table}, at, 30)
	env := []string{"AWS_ENDPOINT_URL_CLOUDWATCH=" + cw.URL}
	args := []string{"--app", s.table, "--failover-time", "500ms", "--window", "1s"}

	rep, out, code := runDoctorJSON(t, env, args...)
	if code != 3 {
		t.Errorf("exit %d, want 3", code)
	}
	summary, _ := expectFinding(t, rep, "table-throttled", "critical")
	if want := "lease table throttled 37 times in 5m0s (Scan 7, UpdateItem 30) while 1 worker renews 1 lease"; summary != want {
		t.Errorf("summary %q\nwant    %q", summary, want)
	}
	if cw.Calls("GetMetricData") != 1 {
		t.Errorf("%d GetMetricData requests, want 1", cw.Calls("GetMetricData"))
	}
	golden(t, "doctor-throttled.json", normalizeDoctor(out))

	table, _, code := runBinary(t, env, append([]string{"doctor", "--fail-on", "never"}, args...)...)
	if code != 0 {
		t.Errorf("--fail-on never: exit %d", code)
	}
	for _, w := range []string{"critical   table-throttled", "fix:   the table is on demand: look for a hot partition", "1 GetMetricData"} {
		if !strings.Contains(table, w) {
			t.Errorf("table output lacks %q:\n%s", w, table)
		}
	}
}

// TestDoctorWatch: --watch reports at once from one read (partial), then
// after every read once a window is full,
// one JSON document per line, and Ctrl-C ends it with the last window's
// verdict.
func TestDoctorWatch(t *testing.T) {
	t.Parallel()
	s := newScenario(t, 1)
	s.lease(shardID(0), "w1", leasecore.TRIM_HORIZON)
	holdLeases(t, s.table, "w1", 500*time.Millisecond, 1)
	cmd := exec.Command(kcltoolBinary(t), "doctor", "--app", s.table, "--failover-time", "500ms", "--window", "1s",
		"--no-cloudwatch", "--watch", "-o", "json")
	cmd.Env = append(os.Environ(), emulator.Env(t)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	var started []string
	first := true
	for len(started) < 3 && lines.Scan() {
		var rep struct {
			Reads   int    `json:"reads"`
			Started string `json:"started"`
			Partial bool   `json:"partial"`
		}
		if err := json.Unmarshal(lines.Bytes(), &rep); err != nil {
			t.Fatalf("not one JSON report per line: %v: %s", err, lines.Text())
		}
		// The first report comes at once, from one read, marked partial
		// (docs/doctor.md); the full ones follow.
		if first {
			first = false
			if !rep.Partial || rep.Reads != 1 {
				t.Errorf("first report: partial %v of %d reads, want a partial one of 1", rep.Partial, rep.Reads)
			}
			continue
		}
		if rep.Partial {
			t.Errorf("a later report is partial: %s", lines.Text())
		}
		if rep.Reads != 3 {
			t.Errorf("report of %d reads, want 3 (a 1s window read every 500ms)", rep.Reads)
		}
		started = append(started, rep.Started)
	}
	if len(started) != 3 || started[0] == started[1] || started[1] == started[2] {
		t.Fatalf("the window does not slide: %v", started)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if err != nil {
		t.Errorf("healthy fleet, watch stopped by Ctrl-C: %v, want exit 0", err)
	}
}
