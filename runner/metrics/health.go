package metrics

import (
	"encoding/json"
	"net/http"

	"github.com/kcltool/kcltool/leasecore"
)

// The health endpoints on the metrics server (docs/deploy.md, Health
// endpoints). The judging is leasecore.Health's; here are only the HTTP
// answers: 200 or 503, and a JSON body whose keys are documented.

// BindHealth gives the worker's health state. Before it is bound, /livez
// answers ok and /readyz starting.
func (m *Metrics) BindHealth(h *leasecore.Health) {
	m.mu.Lock()
	m.health = h
	m.mu.Unlock()
}

func (m *Metrics) healthState() *leasecore.Health {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.health
}

// Live is /livez's answer now.
func (m *Metrics) Live() leasecore.Liveness { return m.healthState().Live() }

// Ready is /readyz's answer now.
func (m *Metrics) Ready() leasecore.Readiness { return m.healthState().Ready() }

// handleHealth registers /livez, its alias /healthz, and /readyz.
func handleHealth(mux *http.ServeMux, m *Metrics) {
	live := func(w http.ResponseWriter, r *http.Request) {
		l := m.Live()
		writeHealth(w, r, l.Live, l)
	}
	mux.HandleFunc("/livez", live)
	mux.HandleFunc("/healthz", live)
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		rd := m.Ready()
		writeHealth(w, r, rd.Ready, rd)
	})
}

// writeHealth answers GET and HEAD (the same status, no body for HEAD);
// anything else is 405.
func writeHealth(w http.ResponseWriter, r *http.Request, ok bool, body any) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	b, err := json.Marshal(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	status := http.StatusOK
	if !ok {
		status = http.StatusServiceUnavailable
	}
	w.WriteHeader(status)
	if r.Method == http.MethodGet {
		w.Write(b)
	}
}

// writeHealthGauges writes kcltool_worker_ready and kcltool_worker_live,
// the same judgement as /readyz and /livez, for alert rules
// (docs/alerts.yaml).
func (p *promWriter) writeHealthGauges(m *Metrics, wl []string) {
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	p.single("kcltool_worker_ready", "gauge", "1 while the worker is ready (/readyz answers 200): its lease-table calls succeed; 0 while starting, stopping, or after they have failed for longer than the failover time.", wl, b(m.Ready().Ready))
	p.single("kcltool_worker_live", "gauge", "1 while the worker is live (/livez answers 200); 0 while one of its loops is wedged.", wl, b(m.Live().Live))
}
