package cmd

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// The health endpoints through the binary (docs/deploy.md, Health
// endpoints): a worker whose lease table is cut off stops being ready
// after the failover time and stays live; healed, it is ready again.
//
// No fault of the proxy can wedge a loop: every call has a deadline
// (--dynamodb-timeout, --kinesis-timeout, the coordinator's own), so a
// held request only makes the call fail, which is progress. The wedged
// answer is covered by leasecore's TestHealthLoopStopsProgressing with a
// fake clock.
func TestRunHealthEndpoints(t *testing.T) {
	t.Parallel() // long, and mostly waiting on the local servers: it overlaps others on CI's two cores
	s := newE2EStack(t, 2)
	proxy := emulator.NewFaultProxy(t, emulator.DynamoDBEndpoint(t), emulator.Throttle, 0, "", 1)
	w := startWorker(t, "A", []string{"AWS_ENDPOINT_URL_DYNAMODB=" + proxy.URL},
		runArgs(s, "A", "--metrics-addr", "127.0.0.1:0", "--exec", "cat >/dev/null")...)
	base := healthBase(t, w)

	eventuallyE2E(t, 60*time.Second, "A to hold both leases", func() bool { return s.owners(t)["A"] == 2 })
	eventuallyE2E(t, 30*time.Second, "/readyz 200 holding both leases", func() bool {
		code, body := getHealth(t, base+"/readyz")
		return code == http.StatusOK && body["status"] == "ready" && body["leasesHeld"] == float64(2)
	})
	for _, path := range []string{"/livez", "/healthz"} {
		if code, body := getHealth(t, base+path); code != http.StatusOK || body["status"] != "ok" || body["live"] != true {
			t.Fatalf("%s: %d %v, want 200 ok", path, code, body)
		}
	}
	if code := headStatus(t, base+"/readyz"); code != http.StatusOK {
		t.Fatalf("HEAD /readyz: %d, want 200", code)
	}
	if m := scrapeURL(t, base+"/metrics"); !regexp.MustCompile(`(?m)^kcltool_worker_ready\{[^}]*\} 1$`).MatchString(m) {
		t.Fatalf("/metrics has no kcltool_worker_ready 1:\n%s", grepLines(m, "kcltool_worker_"))
	}

	// Cut DynamoDB off for longer than every coordinator loop's staleness
	// bound (the longest, the taker's, is about 39 s at a 2 s failover
	// time): the calls fail, the loops go on, so /livez stays 200 all along.
	proxy.Partition()
	cut := time.Now()
	var notReady map[string]any
	for time.Since(cut) < 45*time.Second {
		if code, body := getHealth(t, base+"/livez"); code != http.StatusOK {
			t.Fatalf("/livez %.0fs into the partition: %d %v, want 200: an unreachable DynamoDB is not a wedged process", time.Since(cut).Seconds(), code, body)
		}
		// Once not ready, not ready until healed: no flapping back while
		// the leases expire and the next scan has not failed yet.
		code, body := getHealth(t, base+"/readyz")
		switch {
		case code == http.StatusServiceUnavailable && notReady == nil:
			notReady = body
		case code == http.StatusOK && notReady != nil:
			t.Fatalf("/readyz 200 again %.0fs into the partition, after %v: %v", time.Since(cut).Seconds(), notReady, body)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if notReady == nil {
		t.Fatal("/readyz never answered 503 during a 45 s partition of the lease table")
	}
	t.Logf("/readyz during the partition: %v", notReady)
	if notReady["status"] != "failing" || notReady["ready"] != false || notReady["error"] == "" ||
		notReady["failingSince"] == nil || notReady["failingSeconds"].(float64) <= 2 {
		t.Fatalf("/readyz during the partition: %v, want status failing with the error and how long, past the 2 s failover time", notReady)
	}
	if op := notReady["operation"]; op != "renew" && op != "scan" {
		t.Fatalf("/readyz names operation %v, want renew or scan", op)
	}
	if code := headStatus(t, base+"/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("HEAD /readyz during the partition: %d, want 503", code)
	}
	if m := scrapeURL(t, base+"/metrics"); !regexp.MustCompile(`(?m)^kcltool_worker_ready\{[^}]*\} 0$`).MatchString(m) {
		t.Fatalf("/metrics has no kcltool_worker_ready 0 during the partition:\n%s", grepLines(m, "kcltool_worker_"))
	}

	proxy.Heal()
	eventuallyE2E(t, 60*time.Second, "/readyz 200 after the partition heals", func() bool {
		code, body := getHealth(t, base+"/readyz")
		return code == http.StatusOK && body["status"] == "ready"
	})
	if code, body := getHealth(t, base+"/livez"); code != http.StatusOK {
		t.Fatalf("/livez after the partition: %d %v, want 200", code, body)
	}
}

// A worker holding no lease, because there are more workers than shards,
// is ready: otherwise a rollout that adds a worker would never finish.
func TestRunHealthMoreWorkersThanShards(t *testing.T) {
	s := newE2EStack(t, 1)
	a := startWorker(t, "A", nil, runArgs(s, "A", "--metrics-addr", "127.0.0.1:0", "--exec", "cat >/dev/null")...)
	eventuallyE2E(t, 60*time.Second, "A to hold the lease", func() bool { return s.owners(t)["A"] == 1 })
	b := startWorker(t, "B", nil, runArgs(s, "B", "--metrics-addr", "127.0.0.1:0", "--exec", "cat >/dev/null")...)
	for _, w := range []*worker{a, b} {
		base := healthBase(t, w)
		eventuallyE2E(t, 30*time.Second, w.name+"'s /readyz 200", func() bool {
			code, _ := getHealth(t, base+"/readyz")
			return code == http.StatusOK
		})
		if code, body := getHealth(t, base+"/livez"); code != http.StatusOK {
			t.Fatalf("%s /livez: %d %v, want 200", w.name, code, body)
		}
	}
	if _, body := getHealth(t, healthBase(t, b)+"/readyz"); body["leasesHeld"] != float64(0) || body["status"] != "ready" {
		t.Fatalf("B's /readyz: %v, want ready holding no lease", body)
	}
	if n := s.owners(t)["B"]; n != 0 {
		t.Fatalf("B holds %d leases of the one shard A holds", n)
	}
}

// A KCL 3.x worker waiting for a leader that never comes (--no-leader,
// and no other worker) holds no lease; its discovery queries succeed, so it
// is ready: a 3.x fleet rolled out before its leader assigns must not stall.
func TestRunHealthKCL3WaitingForLeader(t *testing.T) {
	s := newE2EStack(t, 1)
	w := startWorker(t, "A", nil, runArgs(s, "A", "--kcl-version", "3", "--no-leader",
		"--metrics-addr", "127.0.0.1:0", "--exec", "cat >/dev/null")...)
	base := healthBase(t, w)
	eventuallyE2E(t, 60*time.Second, "/readyz 200 holding no lease", func() bool {
		code, body := getHealth(t, base+"/readyz")
		return code == http.StatusOK && body["status"] == "ready" && body["leasesHeld"] == float64(0)
	})
	if !strings.Contains(w.logs.String(), `"assignment":"`+leasecore.AssignByLeader.String()+`"`) {
		t.Fatal("the worker does not run in KCL 3.x mode")
	}
}

var metricsURLLine = regexp.MustCompile(`"msg":"serving Prometheus metrics","url":"(http://[^"]+)/metrics"`)

// healthBase is the worker's metrics server, from its start-up log line
// (the port is 0: the kernel's pick).
func healthBase(t *testing.T, w *worker) string {
	t.Helper()
	var base string
	eventuallyE2E(t, 30*time.Second, w.name+"'s metrics server log line", func() bool {
		if m := metricsURLLine.FindStringSubmatch(w.logs.String()); m != nil {
			base = m[1]
			return true
		}
		return false
	})
	return base
}

var healthClient = &http.Client{Timeout: 5 * time.Second}

// getHealth GETs a health endpoint: its status and JSON body.
func getHealth(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	resp, err := healthClient.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		return resp.StatusCode, map[string]any{"unparsed": string(b)}
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("GET %s: Content-Type %q, want application/json", url, ct)
	}
	return resp.StatusCode, body
}

func headStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := healthClient.Head(url)
	if err != nil {
		t.Fatalf("HEAD %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func scrapeURL(t *testing.T, url string) string {
	t.Helper()
	resp, err := healthClient.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
