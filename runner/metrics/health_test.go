package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/leasecore"
)

// The HTTP side of the health endpoints: status codes, JSON keys, HEAD,
// other methods, the gauges, and the answers before the worker binds its
// health state.
func TestHealthEndpoints(t *testing.T) {
	m := New()
	mux := http.NewServeMux()
	handleHealth(mux, m)
	do := func(method, path string) (int, map[string]any, string) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		var body map[string]any
		if rec.Body.Len() > 0 {
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil && rec.Code != http.StatusMethodNotAllowed {
				t.Fatalf("%s %s: %v in %q", method, path, err, rec.Body.String())
			}
		}
		return rec.Code, body, rec.Body.String()
	}
	// Not bound yet: live, not ready.
	if code, body, _ := do("GET", "/livez"); code != 200 || body["status"] != "ok" {
		t.Fatalf("unbound /livez: %d %v, want 200 ok", code, body)
	}
	if code, body, _ := do("GET", "/readyz"); code != 503 || body["status"] != "starting" {
		t.Fatalf("unbound /readyz: %d %v, want 503 starting", code, body)
	}

	clk := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := leasecore.NewHealth(clk, 10*time.Second)
	m.BindHealth(h)
	h.LeaseCall(context.Background(), leasecore.OpScan, nil)
	for _, p := range []string{"/livez", "/healthz", "/readyz"} {
		if code, _, _ := do("GET", p); code != 200 {
			t.Fatalf("GET %s: %d, want 200", p, code)
		}
		if code, _, raw := do("HEAD", p); code != 200 || raw != "" {
			t.Fatalf("HEAD %s: %d %q, want 200 and no body", p, code, raw)
		}
		if code, _, _ := do("POST", p); code != http.StatusMethodNotAllowed {
			t.Fatalf("POST %s: %d, want 405", p, code)
		}
	}
	var sb strings.Builder
	m.WritePrometheus(&sb)
	if !strings.Contains(sb.String(), "\nkcltool_worker_ready{") || !strings.Contains(sb.String(), "} 1\n") {
		t.Fatalf("no kcltool_worker_ready 1 in:\n%s", sb.String())
	}

	// The scans fail past the failover time; a loop stops beating.
	h.LeaseCall(context.Background(), leasecore.OpScan, errors.New("connection refused"))
	loop := h.Loop("taker", time.Minute)
	clk.Advance(2 * time.Minute)
	code, body, _ := do("GET", "/readyz")
	for _, k := range []string{"status", "ready", "leasesHeld", "reason", "operation", "error", "failingSince", "failingSeconds", "failoverSeconds"} {
		if _, ok := body[k]; !ok {
			t.Errorf("/readyz body %v has no %q", body, k)
		}
	}
	if code != 503 || body["status"] != "failing" || body["operation"] != "scan" || body["error"] != "connection refused" {
		t.Fatalf("/readyz: %d %v, want 503 failing on scan", code, body)
	}
	code, body, _ = do("GET", "/healthz")
	wedged, _ := body["wedged"].([]any)
	if code != 503 || body["status"] != "wedged" || len(wedged) != 1 || wedged[0].(map[string]any)["loop"] != "taker" {
		t.Fatalf("/healthz: %d %v, want 503 naming the taker", code, body)
	}
	sb.Reset()
	m.WritePrometheus(&sb)
	for _, want := range []string{`kcltool_worker_ready{app="",worker=""} 0`, `kcltool_worker_live{app="",worker=""} 0`} {
		if !strings.Contains(sb.String(), want+"\n") {
			t.Errorf("no %s in /metrics", want)
		}
	}
	loop.Close()
}
