package runner

import (
	"strings"
	"time"
)

// The KCL's CoordinatorConfig.ClientVersionConfig values, as the
// MultiLangDaemon spells them once its converter has upper-cased them.
const (
	ClientVersionConfig3X                 = "CLIENT_VERSION_CONFIG_3X"
	ClientVersionConfigCompatible2X       = "CLIENT_VERSION_CONFIG_COMPATIBLE_WITH_2X"
	ClientVersionConfigCompatible2XPhase1 = "CLIENT_VERSION_CONFIG_COMPATIBLE_WITH_2X_PHASE1"
)

// ClientVersionConfigs are the values ClientVersionConfig accepts, in the
// order of the KCL's enum.
var ClientVersionConfigs = []string{ClientVersionConfigCompatible2XPhase1, ClientVersionConfigCompatible2X, ClientVersionConfig3X}

// check checks the 3.x settings in the style of Config.checkSettings: a
// zero is checked like any other value (DefaultConfig gives the defaults).
func (k KCL3Config) check() error {
	valid := false
	for _, v := range ClientVersionConfigs {
		valid = valid || k.ClientVersionConfig == v
	}
	if !valid {
		return &SettingError{Setting: "client-version-config", Value: k.ClientVersionConfig, Must: "be one of " + strings.Join(ClientVersionConfigs, ", ")}
	}
	durations := []durationSetting{
		// Zero is valid: 2 × the failover time, as the KCL's
		// LeaseManagementConfig.leaseAssignmentIntervalMillis().
		{"lease-assignment-interval", k.LeaseAssignmentInterval, 0},
		// Zero: 2 × the failover time (leader.go); zero: 2 minutes.
		{"leader-lease", k.LeaderLease, 0},
		{"shard-audit-interval", k.ShardAuditInterval, 0},
		// A handoff with no time to checkpoint, or metrics never written,
		// are not settings.
		{"handoff-timeout", k.HandoffTimeout, 1},
		{"worker-metrics-interval", k.WorkerMetricsInterval, 1},
	}
	if err := checkDurations(durations); err != nil {
		return err
	}
	for _, t := range []struct{ setting, name string }{
		{"coordinator-state-table", k.CoordinatorStateTable},
		{"worker-metrics-table", k.WorkerMetricsTable},
	} {
		if t.name != "" && !validTableName(t.name) {
			return &SettingError{Setting: t.setting, Value: t.name, Must: "be a DynamoDB table name: 3 to 255 letters, digits, _ . or -"}
		}
	}
	return nil
}

// durationSetting is a duration setting and its least value: 0 lets zero
// through (it means "none" or "the default"), 1 asks for a positive one.
type durationSetting struct {
	setting string
	d, min  time.Duration
}

// checkDurations checks each duration against its least value.
func checkDurations(ds []durationSetting) error {
	for _, d := range ds {
		switch {
		case d.d >= d.min:
		case d.min == 0:
			return &SettingError{Setting: d.setting, Value: d.d, Must: "not be negative"}
		default:
			return &SettingError{Setting: d.setting, Value: d.d, Must: "be positive"}
		}
	}
	return nil
}

// validTableName is DynamoDB's rule for table names.
func validTableName(s string) bool {
	if len(s) < 3 || len(s) > 255 {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
		default:
			return false
		}
	}
	return true
}
