package leases

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/internal/testenv/clocktest"
)

// TestOwnersKCL3Output: each worker's summed throughputKBps is in the
// table (KBPS), the JSON (throughputKBps, null when unknown) and the CSV
// (last column); the JSON names where the metrics item was read, and the
// table where the leader's lock is.
func TestOwnersKCL3Output(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	kb := func(v float64) *float64 { return &v }
	o := &inspect.Owners{
		Workers: []inspect.Owner{
			{Worker: "java-1", Shards: []string{"s0", "s1"}, ThroughputKBps: kb(14.5)},
			{Worker: "kcltool-1", Shards: []string{"s2"}, ThroughputKBps: kb(7)},
			{Worker: "old-2x", Shards: []string{"s3"}},
		},
		Leases: 4, FairShare: 2, Leader: "java-1", LeaderTable: "orders-CoordinatorState",
		Metrics: []inspect.WorkerMetrics{{Worker: "java-1", LastUpdate: now.Add(-10 * time.Second), CPU: []float64{12}, Table: "orders-WorkerMetricStats"}},
	}
	render := func(format string) string {
		var out bytes.Buffer
		f := &cmdutil.Factory{IO: &cmdutil.IOStreams{Out: &out, ErrOut: &bytes.Buffer{}}, Clock: clocktest.New(now)}
		if err := renderOwners(f, format, o, false); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	table := render("table")
	for _, s := range []string{"KBPS", "14.5", "7.0", "KCL 3.x leader: java-1 (lock in orders-CoordinatorState)"} {
		if !strings.Contains(table, s) {
			t.Errorf("table lacks %q:\n%s", s, table)
		}
	}
	var js []map[string]any
	if err := json.Unmarshal([]byte(render("json")), &js); err != nil {
		t.Fatal(err)
	}
	if js[0]["throughputKBps"] != 14.5 || js[0]["metricsTable"] != "orders-WorkerMetricStats" || js[2]["throughputKBps"] != nil || js[2]["metricsTable"] != nil {
		t.Errorf("json %v", js)
	}
	recs, err := csv.NewReader(strings.NewReader(render("csv"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(recs[0], ",") != "worker,leases,fairShare,shards,throughputKBps" || recs[1][4] != "14.5" || recs[3][4] != "" {
		t.Errorf("csv %q", recs)
	}
}
