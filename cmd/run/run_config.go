package run

import (
	"strconv"
	"strings"
	"time"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/coordination/assignment"
	"github.com/kcltool/kcltool/internal/buildinfo"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
	"github.com/kcltool/kcltool/runner"
	"github.com/kcltool/kcltool/runner/metrics"
	"github.com/kcltool/kcltool/runner/processor"
)

// workerConfig checks the flags and turns them into the runner's
// configuration. Every mistake is a usage error naming the flag: cmd's
// parsing names it itself, runner.Config.Validate names the setting.
func (o *runOptions) workerConfig(f *cmdutil.Factory) (runner.Config, error) {
	table, err := o.TableName()
	if err != nil {
		return runner.Config{}, err
	}
	streams, err := o.streams()
	if err != nil {
		return runner.Config{}, err
	}
	format, err := processor.ParseFormat(o.Format)
	if err != nil {
		return runner.Config{}, cmdutil.UsageErrorf("invalid --format %q: use json or raw", o.Format)
	}
	initial, err := o.initialPosition()
	if err != nil {
		return runner.Config{}, err
	}
	argv := o.Argv
	if o.Exec != "" {
		argv = processor.ShellCommand(o.Exec)
	}
	cfg := o.cfg
	cfg.App, cfg.Table, cfg.Stream, cfg.Streams, cfg.StreamMode = o.App, table, reshard.Stream{Name: o.Stream}, streams, o.streamMode()
	if cfg.App == "" {
		cfg.App = table
	}
	cfg.Initial = initial
	switch o.Assignment {
	case "throughput":
		cfg.KCL3.Assignment.Strategy = assignment.ByThroughput
	case "lease-count":
		cfg.KCL3.Assignment.Strategy = assignment.ByLeaseCount
	default:
		return runner.Config{}, cmdutil.UsageErrorf("invalid --assignment %q: use throughput or lease-count", o.Assignment)
	}
	cfg.Handler = &processor.Handler{Argv: argv, Format: format, Timeout: o.cfg.Handler.Timeout, Env: f.Environ(), Clock: f.Clock}
	cfg.Metrics, cfg.Log, cfg.Clock = metrics.New(), f.Logger(), f.Clock
	cfg.Build = metrics.Build{Version: buildinfo.Version(), Commit: buildinfo.Commit(), GoVersion: buildinfo.GoVersion()}
	if cfg.FanOut, err = o.fanOut(f, len(streams)); err != nil {
		return cfg, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: cmdutil.SayFlags(err)}
	}
	return cfg, nil
}

// streams reads every --stream; the first is o.Stream.
func (o *runOptions) streams() ([]reshard.Stream, error) {
	if len(o.Streams) > 0 {
		o.Stream = o.Streams[0]
	}
	if err := cmdutil.RequireFlag("stream", o.Stream); err != nil {
		return nil, err
	}
	var streams []reshard.Stream
	seen := map[string]bool{}
	for _, s := range o.Streams {
		if s == "" {
			return nil, cmdutil.UsageErrorf("--stream must not be empty")
		}
		if !seen[s] { // the same stream twice is still one stream
			seen[s] = true
			streams = append(streams, reshard.Stream{Name: s})
		}
	}
	return streams, nil
}

// EFOSubscriptionMaxEnv is a test hook, not documented for users: it ends
// each fan-out subscription after this long instead of Kinesis's 5
// minutes, so that the tests cover resubscription.
const EFOSubscriptionMaxEnv = "KCLTOOL_TEST_EFO_SUBSCRIPTION_MAX"

// fanOut reads --efo, --consumer-name and --consumer-arn; the Kinesis
// client is added when the worker starts.
func (o *runOptions) fanOut(f *cmdutil.Factory, streams int) (*runner.FanOut, error) {
	if !o.EFO {
		for name, v := range map[string]string{"consumer-name": o.ConsumerName, "consumer-arn": o.ConsumerARN} {
			if v != "" {
				return nil, cmdutil.UsageErrorf("--%s goes with --efo (enhanced fan-out)", name)
			}
		}
		return nil, nil
	}
	switch {
	case o.ConsumerARN != "" && o.ConsumerName != "":
		return nil, cmdutil.UsageErrorf("give either --consumer-name or --consumer-arn, not both")
	case o.ConsumerARN != "" && streams > 1:
		return nil, cmdutil.UsageErrorf("--consumer-arn names the consumer of one stream; with %d --stream give --consumer-name (registered on each stream) instead", streams)
	case o.ConsumerARN != "" && !strings.Contains(o.ConsumerARN, ":consumer/"):
		return nil, cmdutil.UsageErrorf("invalid --consumer-arn %q: want arn:aws:kinesis:REGION:ACCOUNT:stream/STREAM/consumer/NAME:TIMESTAMP", o.ConsumerARN)
	}
	fo := &runner.FanOut{ConsumerName: o.ConsumerName, ConsumerARN: o.ConsumerARN}
	if v := f.Getenv(EFOSubscriptionMaxEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, cmdutil.UsageErrorf("invalid %s %q: want a positive duration", EFOSubscriptionMaxEnv, v)
		}
		fo.SubscriptionMax = d
	}
	return fo, nil
}

// initialPosition reads --initial-position and --initial-timestamp; a
// timestamp alone means AT_TIMESTAMP.
func (o *runOptions) initialPosition() (reshard.Position, error) {
	kind := strings.ToUpper(o.InitialPosition)
	var ts time.Time
	if o.InitialTimestamp != "" {
		t, err := parseTimestamp(o.InitialTimestamp)
		if err != nil {
			return reshard.Position{}, cmdutil.UsageErrorf("invalid --initial-timestamp %q: use RFC 3339 (2025-03-04T05:06:07Z) or epoch seconds", o.InitialTimestamp)
		}
		ts = t
		if kind == leasecore.LATEST && !o.initialPositionSet {
			kind = leasecore.AT_TIMESTAMP
		}
	}
	switch kind {
	case leasecore.TRIM_HORIZON, leasecore.LATEST:
		if !ts.IsZero() {
			return reshard.Position{}, cmdutil.UsageErrorf("--initial-timestamp goes with --initial-position AT_TIMESTAMP, not %s", kind)
		}
		return reshard.Position{Kind: kind}, nil
	case leasecore.AT_TIMESTAMP:
		if ts.IsZero() {
			return reshard.Position{}, cmdutil.UsageErrorf("--initial-position AT_TIMESTAMP needs --initial-timestamp")
		}
		return reshard.AtTimestamp(ts), nil
	}
	return reshard.Position{}, cmdutil.UsageErrorf("invalid --initial-position %q: use TRIM_HORIZON, LATEST or AT_TIMESTAMP", o.InitialPosition)
}

func parseTimestamp(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	secs, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, int64(secs*float64(time.Second))).UTC(), nil
}

// streamMode: --multi-stream given either way forces the mode, otherwise
// the worker picks it from the streams and the table.
func (o *runOptions) streamMode() runner.StreamMode {
	switch {
	case !o.multiStreamSet:
		return runner.StreamModeAuto
	case o.MultiStream:
		return runner.StreamModeMulti
	}
	return runner.StreamModeSingle
}

// scanRateDefault says --leader-scan-rate's default in its help.
var scanRateDefault = strconv.FormatFloat(assignment.DefaultScanRate, 'f', -1, 64) + " read units per second, so that a 10,000-lease scan (about 300 units) is spread over seconds"
