package cmd

import (
	"os"
	"strings"
	"testing"

	"github.com/kcltool/kcltool/cmd/cmdutil"
)

// kclpy3Props is a kclpy 3.x-style properties file with every KCL 3.x key.
func kclpy3Props(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/properties/kclpy3.properties")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPropertiesKCL3Keys: a kclpy 3.x file runs. Its worker-side 3.x keys
// fill their run settings; the leader's assignment keys are applied and
// shown, its table-migration key warned about; the side tables' creation keys are shown, quietly;
// no 3.x key is "not supported".
func TestPropertiesKCL3Keys(t *testing.T) {
	r := propsRun(t, kclpy3Props(t), nil, printJSON()...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	r.want(t, "client-version-config", "CLIENT_VERSION_CONFIG_3X", "file") // the file says _3x
	r.want(t, "lease-assignment-interval", "20s", "file")
	r.want(t, "graceful-handoff", "true", "file")
	r.want(t, "handoff-timeout", "45s", "file")
	r.want(t, "worker-metrics-interval", "20s", "file")
	r.want(t, "worker-metrics-table", "PythonKCLSample-Metrics", "file")
	r.want(t, "coordinator-state-table", "PythonKCLSample-Coordinator", "file")
	r.want(t, "workerMetricsBillingMode", "PROVISIONED", "file")
	r.want(t, "staleWorkerMetricsEntryCleanupDuration", "PT12H", "file")
	r.want(t, "noOfPersistedMetricsPerWorkerMetrics", "10", "file")

	if strings.Contains(r.errOut, "not supported") {
		t.Errorf("a 3.x key at its default is warned about:\n%s", r.errOut)
	}
	// The leader's assignment keys are applied (TestPropertiesLeaderKeys);
	// only the table migration's is warned about.
	if len(r.doc.Warnings) != 1 {
		t.Fatalf("warnings %q, want one (the leader's table-migration key)", r.doc.Warnings)
	}
	if w := r.doc.Warnings[0]; !strings.Contains(w, "tableMigrationCompleteBakeTimeSeconds") || strings.Contains(w, "dampeningPercentage") {
		t.Errorf("warning %q: want tableMigrationCompleteBakeTimeSeconds only", w)
	}
	notes := map[string]string{}
	for _, s := range r.doc.Settings {
		if s.Note != nil {
			notes[s.Setting] = *s.Note
		}
	}
	for k, want := range map[string]string{"dampeningPercentage": "used when this worker leads", "coordinatorStateTags": "used only if kcltool creates them",
		"workerMetricsReadCapacity": "used only if kcltool creates them", "migrateAllEntitiesToLeaseTable": "TableMigration3.5"} {
		if !strings.Contains(notes[k], want) {
			t.Errorf("%s: note %q, want it to say %q", k, notes[k], want)
		}
	}

	// The command line and KCLTOOL_* variables win over the file, as for
	// every key.
	r = propsRun(t, kclpy3Props(t), map[string]string{"KCLTOOL_HANDOFF_TIMEOUT": "10s"}, printJSON("--lease-assignment-interval", "0s")...)
	r.want(t, "handoff-timeout", "10s", "env")
	r.want(t, "lease-assignment-interval", "0s", "flag")
}

// TestPropertiesKCL3Values: the 3.x keys' values are checked as the
// MultiLangDaemon converts them; worker keys kcltool does not offer are
// warned about only when they ask for something else than the KCL's
// default, which kcltool follows.
func TestPropertiesKCL3Values(t *testing.T) {
	for props, want := range map[string]string{
		baseProps + "clientVersionConfig = CLIENT_VERSION_CONFIG_4X\n":  "--client-version-config must be one of",
		baseProps + "gracefulLeaseHandoffTimeoutMillis = 0\n":           "--handoff-timeout must be positive",
		baseProps + "leaseAssignmentIntervalMillis = -5\n":              "--lease-assignment-interval must not be negative",
		baseProps + "workerMetricsReporterFreqInMillis = soon\n":        `invalid workerMetricsReporterFreqInMillis = "soon"`,
		baseProps + "isGracefulLeaseHandoffEnabled = sometimes\n":       `invalid isGracefulLeaseHandoffEnabled = "sometimes"`,
		baseProps + "workerMetricsTableName = no spaces\n":              "--worker-metrics-table must be a DynamoDB table name",
		baseProps + "coordinatorStateBillingMode = FREE\n":              `invalid coordinatorStateBillingMode = "FREE"`,
		baseProps + "staleWorkerMetricsEntryCleanupDuration = 1d\n":     `invalid staleWorkerMetricsEntryCleanupDuration = "1d"`,
		baseProps + "staleWorkerMetricsEntryCleanupDuration = -PT1H\n":  `invalid staleWorkerMetricsEntryCleanupDuration = "-PT1H"`,
		baseProps + "workerMetricsEMAAlpha = half\n":                    `invalid workerMetricsEMAAlpha = "half"`,
		baseProps + "noOfPersistedMetricsPerWorkerMetrics = ten\n":      `invalid noOfPersistedMetricsPerWorkerMetrics = "ten"`,
		baseProps + "coordinatorStateDeletionProtectionEnabled = yes\n": `invalid coordinatorStateDeletionProtectionEnabled = "yes"`,
	} {
		r := propsRun(t, props, nil, printJSON("--exec", "cat")...)
		if r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, want) {
			t.Errorf("%q: exit %d, stderr %s; want 2 and %q", props, r.code, r.errOut, want)
		}
	}
	for key, value := range map[string]string{"disableWorkerMetrics": "true", "noOfPersistedMetricsPerWorkerMetrics": "5",
		"inMemoryWorkerMetricsCaptureFrequencyMillis": "500", "migrateAllEntitiesToLeaseTable": "TRUE"} {
		r := propsRun(t, baseProps+key+" = "+value+"\n", nil, printJSON("--exec", "cat")...)
		if r.code != 0 || len(r.doc.Warnings) != 1 || !strings.Contains(r.doc.Warnings[0], "properties key "+key+" = "+value+" is not supported") {
			t.Errorf("%s = %s: exit %d, warnings %q; want one that it is not supported", key, value, r.code, r.doc.Warnings)
		}
	}
}

// TestPropertiesKCL3PrintConfigMode: a kclpy 3.x file's --print-config has
// the lease-assignment row, read from the table (TestPrintConfigReadsTheMode
// covers the modes); with no AWS here it says why it is unknown, and the
// command still succeeds.
func TestPropertiesKCL3PrintConfigMode(t *testing.T) {
	// Hermetic: no real account is read, whatever the machine has.
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:1")
	t.Setenv("AWS_MAX_ATTEMPTS", "1")
	r := propsRun(t, kclpy3Props(t), nil, printJSON()...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	for _, s := range r.doc.Settings {
		if s.Setting == "lease-assignment" {
			if s.Source != "table" || !strings.HasPrefix(s.Value, "unknown") || s.Note == nil {
				t.Errorf("lease-assignment %q from %s (note %v), want unknown from table with a reason", s.Value, s.Source, s.Note)
			}
			return
		}
	}
	t.Errorf("no lease-assignment row in %+v", r.doc.Settings)
}
