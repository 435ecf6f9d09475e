package runner

import (
	"errors"
	"testing"
	"time"

	"github.com/kcltool/kcltool/reshard"
)

// validConfig is DefaultConfig with what has no default: a stream and a
// handler.
func validConfig() Config {
	c := DefaultConfig()
	c.App, c.Stream = "orders", reshard.Stream{Name: "orders"}
	c.Handler = &Handler{Argv: []string{"true"}, Env: []string{}}
	return c
}

func TestConfigDefaultIsValid(t *testing.T) {
	if err := validConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig with a stream and a handler: %v", err)
	}
}

// A setting out of its range is a *SettingError naming the setting; a zero
// is no longer taken for "the default".
func TestValidateSettingErrors(t *testing.T) {
	for _, c := range []struct {
		setting string
		set     func(*Config)
	}{
		{"max-records", func(c *Config) { c.MaxRecords = 0 }},
		{"max-records", func(c *Config) { c.MaxRecords = DefaultMaxRecords + 1 }},
		{"batch-size", func(c *Config) { c.BatchSize = 0 }},
		{"max-parallel", func(c *Config) { c.MaxParallel = 0 }},
		{"max-retries", func(c *Config) { c.MaxRetries = -2 }},
		{"max-leases-to-steal", func(c *Config) { c.Lease.MaxLeasesToStealAtOneTime = 0 }},
		{"max-leases-for-worker", func(c *Config) { c.Lease.MaxLeasesForWorker = -1 }},
		{"idle-between-reads", func(c *Config) { c.IdleBetweenReads = -time.Second }},
		{"batch-window", func(c *Config) { c.BatchWindow = -time.Second }},
		{"handler-timeout", func(c *Config) { c.Handler.Timeout = -time.Second }},
		{"max-record-age", func(c *Config) { c.MaxRecordAge = -time.Second }},
		{"taker-interval", func(c *Config) { c.Lease.TakerInterval = -time.Second }},
		{"retry-backoff", func(c *Config) { c.Backoff.Initial = -time.Second }},
		{"failover-time", func(c *Config) { c.Lease.FailoverTime = 0 }},
		{"shutdown-grace", func(c *Config) { c.ShutdownGrace = 0 }},
		{"shard-sync-interval", func(c *Config) { c.ShardSyncInterval = 0 }},
		{"parent-poll-interval", func(c *Config) { c.ParentPollInterval = 0 }},
		{"cleanup-interval", func(c *Config) { c.CleanupInterval = 0 }},
		{"cloudwatch-interval", func(c *Config) { c.CloudWatchInterval = 0 }},
		{"kinesis-timeout", func(c *Config) { c.KinesisTimeout = 0 }},
		{"dynamodb-timeout", func(c *Config) { c.DynamoDBTimeout = 0 }},
	} {
		cfg := validConfig()
		c.set(&cfg)
		err := cfg.Validate()
		var se *SettingError
		if !errors.As(err, &se) || se.Setting != c.setting {
			t.Errorf("%s out of range: Validate = %v, want a *SettingError for %s", c.setting, err, c.setting)
			continue
		}
		if got := se.Say(func(s string) string { return "<" + s + ">" }); got != "<"+c.setting+"> must "+se.Must {
			t.Errorf("%s: Say = %q", c.setting, got)
		}
	}
}

// The zeros that mean something stay valid: no pause, no batch wait, no
// limit, adaptive taker pacing.
func TestValidateMeaningfulZeros(t *testing.T) {
	cfg := validConfig()
	cfg.IdleBetweenReads, cfg.BatchWindow, cfg.MaxRecordAge, cfg.Lease.TakerInterval = 0, 0, 0, 0
	cfg.Lease.MaxLeasesForWorker, cfg.MaxRetries, cfg.Backoff.Initial = 0, 0, 0
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}
