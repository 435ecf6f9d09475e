package run

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/coordination/assignment"
	"github.com/kcltool/kcltool/internal/javaprops"
)

// The KCL 3.x keys of the MultiLangDaemon (KCL 3.5.1's
// MultiLangDaemonConfiguration and the beans it delegates to, whose
// properties are top-level keys: GracefulLeaseHandoffConfigBean,
// WorkerUtilizationAwareAssignmentConfigBean,
// WorkerMetricStatsTableConfigBean, CoordinatorStateTableConfigBean).
// The worker-side ones kcltool honours are rows of runSettings
// (clientVersionConfig, leaseAssignmentIntervalMillis,
// isGracefulLeaseHandoffEnabled, gracefulLeaseHandoffTimeoutMillis,
// coordinatorStateTableName, workerMetricsTableName,
// workerMetricsReporterFreqInMillis); the others are here. Each is read
// and its value checked as the MLD's converter would, so that a file a
// Java fleet accepts is accepted, and none is ever an error by its name.

// kcl3Role is what kcltool does with a key of kcl3Keys.
type kcl3Role int

const (
	// kcl3Leader: read only by the KCL 3.x leader's LeaseAssignmentManager
	// (WorkerUtilizationAwareAssignmentConfig): applied to the assignment
	// a kcltool worker runs when it leads (applyLeaderKeys).
	kcl3Leader kcl3Role = iota
	// kcl3LeaderOther: read by the KCL 3.x leader's table migration
	// (TableMigrationStateMachineImpl's leader handlers), which kcltool's
	// leader does not run: recorded, one warning.
	kcl3LeaderOther
	// kcl3Table: how the side tables are created (DdbTableConfig). kcltool
	// never creates them; recorded quietly.
	kcl3Table
	// kcl3Fixed: a worker's setting kcltool does not offer; it behaves as
	// the KCL's default, and a file that asks otherwise is warned.
	kcl3Fixed
)

// kcl3Key is one key: how its value is checked, and for kcl3Fixed the
// KCL's default that kcltool follows.
type kcl3Key struct {
	role kcl3Role
	kind string // bool, int, double, duration, billing, tags
	def  string
	// why is said of a kcl3Fixed key that asks for something else.
	why string
}

var kcl3Keys = map[string]kcl3Key{
	// WorkerUtilizationAwareAssignmentConfig, read by the leader's
	// LeaseAssignmentManager and MigrationAwareLAMDataManager.
	"maxThroughputPerHostKBps":               {role: kcl3Leader, kind: "double"},
	"dampeningPercentage":                    {role: kcl3Leader, kind: "int"},
	"reBalanceThresholdPercentage":           {role: kcl3Leader, kind: "int"},
	"allowThroughputOvershoot":               {role: kcl3Leader, kind: "bool"},
	"varianceBalancingFrequency":             {role: kcl3Leader, kind: "int"},
	"workerMetricsEMAAlpha":                  {role: kcl3Leader, kind: "double"},
	"staleWorkerMetricsEntryCleanupDuration": {role: kcl3Leader, kind: "duration"},
	// CoordinatorConfig: the leader's wait before PENDING becomes COMPLETE.
	"tableMigrationCompleteBakeTimeSeconds": {role: kcl3LeaderOther, kind: "int"},

	// The worker's own metrics (WorkerMetricStatsManager, Scheduler's
	// selectWorkerMetricsIfAvailable): kcltool samples and keeps as the
	// KCL does by default.
	"inMemoryWorkerMetricsCaptureFrequencyMillis": {role: kcl3Fixed, kind: "int", def: "1000",
		why: "kcltool samples its worker metrics every second"},
	"noOfPersistedMetricsPerWorkerMetrics": {role: kcl3Fixed, kind: "int", def: "10",
		why: "kcltool writes the last 10 samples of each metric"},
	"disableWorkerMetrics": {role: kcl3Fixed, kind: "bool", def: "false",
		why: "kcltool reports the metrics the KCL selects on its platform (CPU on EC2, ECS and EKS, none elsewhere)"},
	// CoordinatorConfig: a Java worker's own view of TableMigration3.5
	// (TableMigrationStateMachineImpl.applyConfigOverride); kcltool never
	// overrides the table's state.
	"migrateAllEntitiesToLeaseTable": {role: kcl3Fixed, kind: "bool", def: "false",
		why: "kcltool writes where the table's TableMigration3.5 state says and never moves it"},
}

func init() {
	// The side tables' DdbTableConfig, under each bean's prefix.
	for _, prefix := range []string{"coordinatorState", "workerMetrics"} {
		for suffix, kind := range map[string]string{"BillingMode": "billing", "ReadCapacity": "int", "WriteCapacity": "int",
			"PointInTimeRecoveryEnabled": "bool", "DeletionProtectionEnabled": "bool", "Tags": "tags"} {
			kcl3Keys[prefix+suffix] = kcl3Key{role: kcl3Table, kind: kind}
		}
	}
}

// isoDuration is java.time.Duration.parse's syntax (DurationConverter),
// without a sign: the converter refuses negative durations.
var isoDuration = regexp.MustCompile(`(?i)^\+?P(\d+(\.\d+)?D)?(T(\d+(\.\d+)?H)?(\d+(\.\d+)?M)?(\d+(\.\d+)?S)?)?$`)

// checkKCL3Value checks v as the MultiLangDaemon converts it, and returns
// it as kcltool prints it.
func checkKCL3Value(kind, v string) (string, error) {
	switch kind {
	case "bool":
		return propBool(v)
	case "int":
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return "", fmt.Errorf("not an integer")
		}
	case "double":
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return "", fmt.Errorf("not a number")
		}
	case "duration":
		if !isoDuration.MatchString(v) || strings.HasSuffix(strings.ToUpper(v), "T") || len(v) < 3 {
			return "", fmt.Errorf("want an ISO-8601 duration, as PT24H or P1D")
		}
	case "billing":
		if u := strings.ToUpper(v); u != "PAY_PER_REQUEST" && u != "PROVISIONED" {
			return "", fmt.Errorf("use PAY_PER_REQUEST or PROVISIONED")
		}
		return strings.ToUpper(v), nil
	}
	return v, nil // tags: the MLD skips a malformed pair with a warning
}

// applyKCL3Keys reads the keys of kcl3Keys the file has: each checked,
// recorded for --print-config, and warned about as its role says.
func (p *propertiesRun) applyKCL3Keys(f *cmdutil.Factory) error {
	var leader []javaprops.Entry
	keys := make([]string, 0, len(kcl3Keys))
	for k := range kcl3Keys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		e, ok := p.entry(k)
		if !ok {
			continue
		}
		key := kcl3Keys[k]
		v, err := checkKCL3Value(key.kind, e.Value)
		if err != nil {
			return cmdutil.UsageErrorf("invalid %s = %q in %s: %v", k, e.Value, p.where(e), err)
		}
		row := configRow{Setting: k, Value: v, Source: sourceFile, Property: k}
		switch key.role {
		case kcl3Leader:
			row.Note = "a KCL 3.x leader's setting: used when this worker leads"
			if p.leaderKeys == nil {
				p.leaderKeys = map[string]string{}
			}
			p.leaderKeys[k] = v
		case kcl3LeaderOther:
			row.Note = "a KCL 3.x leader's table-migration setting: read, not used (kcltool's leader does not move entities between tables)"
			leader = append(leader, e)
		case kcl3Table:
			row.Note = "how the KCL creates its 3.x side tables: used only if kcltool creates them, which it does not"
		case kcl3Fixed:
			row.Note = "kcltool behaves as the KCL's default " + key.def + ": " + key.why
			if v != key.def {
				p.warn(f, fmt.Sprintf("properties key %s = %s is not supported: %s (the KCL's default %s)", k, e.Value, key.why, key.def), e)
			}
		}
		p.extra = append(p.extra, row)
	}
	if len(leader) > 0 {
		names := make([]string, len(leader))
		for i, e := range leader {
			names[i] = e.Key
		}
		p.warn(f, "properties keys "+strings.Join(names, ", ")+" are settings of a KCL 3.x leader's table migration: read, not used (kcltool's leader does not move entities between tables)", leader[0])
	}
	return nil
}

func isKCL3Key(k string) bool {
	_, ok := kcl3Keys[k]
	return ok
}

// applyLeaderKeys sets the leader's assignment settings from the
// WorkerUtilizationAwareAssignmentConfig keys the file has (checked by
// applyKCL3Keys). A value the MultiLangDaemon would pass on as zero
// leaves kcltool's field zero, which is the KCL's default there.
func (p *propertiesRun) applyLeaderKeys(a *assignment.Config) {
	for k, v := range p.leaderKeys {
		switch k {
		case "maxThroughputPerHostKBps":
			a.MaxThroughputPerHostKBps, _ = strconv.ParseFloat(v, 64)
		case "dampeningPercentage":
			a.DampeningPercentage, _ = strconv.Atoi(v)
		case "reBalanceThresholdPercentage":
			a.ReBalanceThresholdPercentage, _ = strconv.Atoi(v)
		case "allowThroughputOvershoot":
			a.NoThroughputOvershoot = v == "false"
		case "varianceBalancingFrequency":
			a.VarianceBalancingFrequency, _ = strconv.Atoi(v)
		case "workerMetricsEMAAlpha":
			a.WorkerMetricsEMAAlpha, _ = strconv.ParseFloat(v, 64)
		case "staleWorkerMetricsEntryCleanupDuration":
			a.StaleWorkerMetricsEntryCleanupDuration, _ = parseISODuration(v)
		}
	}
}

// parseISODuration reads the java.time.Duration syntax isoDuration
// accepts (days, hours, minutes, seconds).
func parseISODuration(v string) (time.Duration, error) {
	m := isoDuration.FindStringSubmatch(v)
	if m == nil {
		return 0, fmt.Errorf("not an ISO-8601 duration")
	}
	var d time.Duration
	for _, part := range []struct {
		s    string
		unit time.Duration
	}{{m[1], 24 * time.Hour}, {m[4], time.Hour}, {m[6], time.Minute}, {m[8], time.Second}} {
		if part.s == "" {
			continue
		}
		n, err := strconv.ParseFloat(strings.TrimRight(strings.ToUpper(part.s), "DHMS"), 64)
		if err != nil {
			return 0, err
		}
		d += time.Duration(n * float64(part.unit))
	}
	return d, nil
}
