package run_test

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/kcltool/kcltool/cmd"
	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/cmd/run"
	"github.com/kcltool/kcltool/runner"
)

// everyValueValid are the settings with no value to reject: adding one
// here is saying so on purpose.
var everyValueValid = map[string]string{
	"exec":              "any command runs",
	"multilang-timeout": "zero or less is no limit, as the MultiLangDaemon's timeoutInSeconds",
	"on-failure":        "a folder is created on the first failure",
	"worker-id":         "any leaseOwner",
	"metrics-addr":      "checked when the worker listens",
	"leader-scan-rate":  "zero is the default pace, a negative rate unpaced (as the KCL scans)",
}

// notSettings are run's flags about the invocation, not the worker.
var notSettings = map[string]bool{"properties": true, "print-config": true, "output": true, "help": true}

// TestRunSettingsTable walks runSettings: every entry has a flag of run,
// its KCLTOOL_ variable, usage and a check; names a runner.Config field
// that exists; its properties key maps back to it; and every flag of run
// comes from the table.
func TestRunSettingsTable(t *testing.T) {
	f := cmdutil.NewFactory(&cmdutil.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, func(string) string { return "" })
	runCmd, _, err := cmd.NewRootCmd(f).Find([]string{"run"})
	if err != nil {
		t.Fatal(err)
	}
	flagOf := func(name string) *pflag.Flag {
		if fl := runCmd.Flags().Lookup(name); fl != nil {
			return fl
		}
		return runCmd.InheritedFlags().Lookup(name)
	}
	seen := map[string]bool{}
	for _, s := range run.Settings {
		if s.Flag() == "" || seen[s.Flag()] {
			t.Errorf("entry %+v: no flag, or a second entry for it", s)
			continue
		}
		seen[s.Flag()] = true
		if want := "KCLTOOL_" + strings.ToUpper(strings.ReplaceAll(s.Flag(), "-", "_")); s.Env() != want || cmdutil.EnvName(s.Flag()) != want {
			t.Errorf("%s: env %q, want %q", s.Flag(), s.Env(), want)
		}
		fl := flagOf(s.Flag())
		switch {
		case fl == nil:
			t.Errorf("%s: not a flag of run", s.Flag())
		case s.Usage() == "":
			t.Errorf("%s: no usage", s.Flag())
		case !s.Shared() && !strings.HasPrefix(fl.Usage, s.Usage()):
			t.Errorf("%s: usage %q is not the table's %q", s.Flag(), fl.Usage, s.Usage())
		}
		if s.Invalid() == "" && !s.Shared() && everyValueValid[s.Flag()] == "" {
			t.Errorf("%s: no invalid value (no check); add one, or list it in everyValueValid with why", s.Flag())
		}
		if s.Field() != "" && !configHasField(s.Field()) {
			t.Errorf("%s: runner.Config has no field %s", s.Flag(), s.Field())
		}
		if s.Field() == "" && s.Opt() == "" && !s.Shared() {
			t.Errorf("%s: bound to nothing (no field, no opt)", s.Flag())
		}
		if s.Opt() != "" && !run.HasOption(s.Opt()) {
			t.Errorf("%s: runOptions has no field %s", s.Flag(), s.Opt())
		}
		if s.Property() != "" {
			if back, ok := run.FlagOfProperty(s.Property()); !ok || back != s.Flag() {
				t.Errorf("%s: properties key %s maps to %q", s.Flag(), s.Property(), back)
			}
			if run.PropertyHasOwnStep(s.Property()) {
				t.Errorf("%s: properties key %s is also handled by a step of its own", s.Flag(), s.Property())
			}
		}
	}
	runCmd.LocalNonPersistentFlags().VisitAll(func(fl *pflag.Flag) {
		if !notSettings[fl.Name] && !seen[fl.Name] {
			t.Errorf("--%s is a flag of run but not in runSettings", fl.Name)
		}
	})
}

// kcl3SourceKeys are the KCL 3.x keys of KCL 3.5.1's MultiLangDaemon,
// spelled as its properties files spell them: the 3.x fields of
// MultiLangDaemonConfiguration and every property of the beans it
// delegates to (top-level keys, no prefix: Lombok's @Delegate puts their
// setters on the configuration itself).
var kcl3SourceKeys = []string{
	// MultiLangDaemonConfiguration (CoordinatorConfig, LeaseManagementConfig)
	"clientVersionConfig", "leaseAssignmentIntervalMillis", "migrateAllEntitiesToLeaseTable", "tableMigrationCompleteBakeTimeSeconds",
	// GracefulLeaseHandoffConfigBean
	"gracefulLeaseHandoffTimeoutMillis", "isGracefulLeaseHandoffEnabled",
	// WorkerUtilizationAwareAssignmentConfigBean
	"inMemoryWorkerMetricsCaptureFrequencyMillis", "workerMetricsReporterFreqInMillis", "noOfPersistedMetricsPerWorkerMetrics",
	"disableWorkerMetrics", "maxThroughputPerHostKBps", "dampeningPercentage", "reBalanceThresholdPercentage",
	"allowThroughputOvershoot", "varianceBalancingFrequency", "workerMetricsEMAAlpha", "staleWorkerMetricsEntryCleanupDuration",
	// WorkerMetricStatsTableConfigBean
	"workerMetricsTableName", "workerMetricsBillingMode", "workerMetricsReadCapacity", "workerMetricsWriteCapacity",
	"workerMetricsPointInTimeRecoveryEnabled", "workerMetricsDeletionProtectionEnabled", "workerMetricsTags",
	// CoordinatorStateTableConfigBean
	"coordinatorStateTableName", "coordinatorStateBillingMode", "coordinatorStateReadCapacity", "coordinatorStateWriteCapacity",
	"coordinatorStatePointInTimeRecoveryEnabled", "coordinatorStateDeletionProtectionEnabled", "coordinatorStateTags",
}

// TestRunSettingsKCL3Keys: every KCL 3.x key is either a run setting's
// property (the walk above checks the setting) or read by the 3.x step
// (run_properties_kcl3.go), and never both: none falls through to "not
// supported".
func TestRunSettingsKCL3Keys(t *testing.T) {
	for _, k := range kcl3SourceKeys {
		_, setting := run.FlagOfProperty(k)
		switch own := run.IsKCL3Key(k); {
		case setting && own:
			t.Errorf("%s: a run setting's property and a key of the 3.x step", k)
		case !setting && !own:
			t.Errorf("%s: neither a run setting's property nor a key of the 3.x step", k)
		}
	}
}

// configHasField follows a path of field names ("Lease.FailoverTime")
// through runner.Config's type, pointers included.
func configHasField(path string) bool {
	typ := reflect.TypeOf(runner.Config{})
	for _, name := range strings.Split(path, ".") {
		if typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct {
			return false
		}
		sf, ok := typ.FieldByName(name)
		if !ok {
			return false
		}
		typ = sf.Type
	}
	return true
}

// TestRunSettingsRejectInvalid: each setting's invalid value, given as the
// flag or as its KCLTOOL_ variable, is a usage error that names the flag.
func TestRunSettingsRejectInvalid(t *testing.T) {
	base := []string{"run", "--app", "orders", "--stream", "orders", "--exec", "cat", "--print-config", "-o", "json"}
	try := func(env map[string]string, args ...string) (int, string) {
		var out, errOut bytes.Buffer
		f := cmdutil.NewFactory(&cmdutil.IOStreams{Out: &out, ErrOut: &errOut}, func(k string) string { return env[k] })
		return cmd.Run(context.Background(), f, append(append([]string{}, base...), args...)), errOut.String()
	}
	if code, errOut := try(nil); code != 0 {
		t.Fatalf("the valid base: exit %d: %s", code, errOut)
	}
	for _, s := range run.Settings {
		if s.Invalid() == "" {
			continue
		}
		code, errOut := try(nil, "--"+s.Flag()+"="+s.Invalid())
		if code != cmdutil.ExitUsage || !strings.Contains(errOut, "--"+s.Flag()) {
			t.Errorf("--%s=%s: exit %d, stderr %q; want 2 and the flag named", s.Flag(), s.Invalid(), code, errOut)
		}
		if strings.Contains(strings.Join(base, " "), "--"+s.Flag()+" ") {
			continue // the command line wins over the variable
		}
		code, errOut = try(map[string]string{s.Env(): s.Invalid()})
		if code != cmdutil.ExitUsage || !strings.Contains(errOut, "--"+s.Flag()) {
			t.Errorf("%s=%s: exit %d, stderr %q; want 2 and the flag named", s.Env(), s.Invalid(), code, errOut)
		}
	}
}
