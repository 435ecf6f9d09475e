// Package doctor holds `kcltool doctor`: it gathers a fleet's state with
// inspect/doctor and renders the findings, once or --watch.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/inspect/doctor"
)

// NewCmds returns `kcltool doctor`.
func NewCmds(f *cmdutil.Factory) []*cobra.Command { return []*cobra.Command{newDoctorCmd(f)} }

type doctorOptions struct {
	cmdutil.AppFlags
	Stream         string
	Output         string
	Window         time.Duration
	FailoverTime   time.Duration
	HandoffTimeout time.Duration
	MaxBehind      time.Duration
	MetricsWindow  time.Duration
	NoCloudWatch   bool
	FailOn         string
	Watch          bool
	Concurrency    int
}

func newDoctorCmd(f *cmdutil.Factory) *cobra.Command {
	o := &doctorOptions{}
	c := &cobra.Command{
		Use:     "doctor --app APP [--stream STREAM]",
		Short:   "Find lease churn, dead workers, stuck shards, throttling and lag, and say what to do",
		GroupID: "operate",
		Long: `Watch a KCL application for a window and explain what is wrong with it.

doctor reads the lease table once per failover time over --window (never
more often: the failover time is also the shortest span over which an
unchanged lease counter means anything), joins the last read with the stream
(one GetRecords per open shard) and reads CloudWatch in one batched
GetMetricData call. It never writes.

From the reads it finds leases moving between workers (churn, and leases that
bounce back), workers that let leases expire while renewing others, workers
that renew nothing (dead), shards whose lease is renewed but whose checkpoint
does not move while records wait (a poison record), imbalance, unassigned
leases, child shards waiting on a parent that never reached SHARD_END (the
parent named), and KCL 3.x handoffs, stale worker metrics and the leader lock.
From CloudWatch: lease-table throttling for the table and its index, consumed
WCU against the billing mode and the write rate the leases imply, Kinesis
iterator age (per shard where enhanced monitoring is on) and KCL's own
LostLeases, TakenLeases, NumOfLeasesReassignment and MillisBehindLatest in
the namespace named after the application. Without CloudWatch access those
checks are skipped, said so, and the rest still run; so too on local
endpoints (localhost, 127.0.0.1, [::1]) without AWS_ENDPOINT_URL_CLOUDWATCH.

Each finding has a severity (info, warn, critical), the evidence, the likely
cause and the fix. The command exits 3 when a finding at or above --fail-on
exists (default warn), 0 otherwise. --watch keeps reading, one read per
failover time: a first look from the first read at once, then a report on
the last window after each read once a window is full.

Pass the application's own failover time: a shorter one makes healthy leases
look expired. The reads and requests the run cost are printed under the
report (in "cost" with -o json).`,
		Example: `  kcltool doctor --app orders --stream orders
  kcltool doctor --app orders --stream orders --window 2m --failover-time 20s
  kcltool doctor --app orders --stream orders --fail-on critical -o json | jq '.findings[] | {id, severity, summary}'
  kcltool doctor --app orders --stream orders --watch`,
		RunE: func(cmd *cobra.Command, args []string) error {
			failOn, err := o.check()
			if err != nil {
				return err
			}
			return runDoctor(cmd.Context(), f, o, failOn)
		},
	}
	o.Register(c)
	cmdutil.AddOutputFlag(c, &o.Output)
	cmdutil.AddTableFlags(c, f.IO, "SEVERITY", "ID", "SUMMARY")
	fl := c.Flags()
	fl.StringVar(&o.Stream, "stream", "", "stream name: enables the stuck-shard, lag and lineage checks (multi-stream tables name their streams)")
	fl.DurationVar(&o.Window, "window", doctor.DefaultWindow, "how long to watch the lease table")
	fl.DurationVar(&o.FailoverTime, "failover-time", 10*time.Second, "the application's KCL failover time: the spacing of the reads and the expiry rule")
	fl.DurationVar(&o.HandoffTimeout, "handoff-timeout", doctor.DefaultHandoffTimeout, "KCL 3.x gracefulLeaseHandoffTimeoutMillis: a handoff older than this plus the failover time is stuck")
	fl.DurationVar(&o.MaxBehind, "max-behind", doctor.DefaultMaxBehind, "a shard further behind than this is lagging")
	fl.DurationVar(&o.MetricsWindow, "metrics-window", doctor.DefaultMetricsWindow, "how far back to read CloudWatch (at least --window)")
	fl.BoolVar(&o.NoCloudWatch, "no-cloudwatch", false, "do not read CloudWatch; its checks are reported as skipped")
	fl.StringVar(&o.FailOn, "fail-on", "warn", "exit 3 when a finding is at least this severe: info, warn, critical, or never")
	fl.BoolVar(&o.Watch, "watch", false, "keep watching: redraw the report on the last window after every read (Ctrl-C stops)")
	fl.IntVar(&o.Concurrency, "concurrency", 0, "shards probed at once (0: chosen from the number of shards, 8 to 64)")
	_ = c.RegisterFlagCompletionFunc("fail-on", cobra.FixedCompletions([]string{"info", "warn", "critical", "never"}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

// neverFail is --fail-on never: above every severity.
const neverFail = doctor.SeverityCritical + 1

// check validates the flags; it returns the --fail-on threshold.
func (o *doctorOptions) check() (doctor.Severity, error) {
	if err := cmdutil.CheckOutput(o.Output); err != nil {
		return 0, err
	}
	failOn := neverFail
	if o.FailOn != "never" {
		s, err := doctor.ParseSeverity(o.FailOn)
		if err != nil {
			return 0, cmdutil.UsageErrorf("invalid --fail-on %q: use info, warn, critical or never", o.FailOn)
		}
		failOn = s
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"window", o.Window}, {"failover-time", o.FailoverTime}, {"handoff-timeout", o.HandoffTimeout}, {"max-behind", o.MaxBehind}, {"metrics-window", o.MetricsWindow}} {
		if d.v <= 0 {
			return 0, cmdutil.UsageErrorf("--%s must be positive", d.name)
		}
	}
	if o.Window < o.FailoverTime {
		return 0, &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: &cmdutil.HintError{
			Err:   fmt.Errorf("--window %s is shorter than --failover-time %s", o.Window, o.FailoverTime),
			Hints: []string{"an expired lease shows only in two reads a failover time apart: give a window of a few failover times"},
		}}
	}
	if o.Concurrency < 0 {
		return 0, cmdutil.UsageErrorf("--concurrency must be 0 (automatic) or more")
	}
	return failOn, nil
}

func runDoctor(ctx context.Context, f *cmdutil.Factory, o *doctorOptions, failOn doctor.Severity) error {
	table, err := o.TableName()
	if err != nil {
		return err
	}
	apis, err := doctorAPIs(ctx, f, o)
	if err != nil {
		return err
	}
	opt := doctor.Options{
		App: o.App, Table: table, Stream: o.Stream, Window: o.Window, FailoverTime: o.FailoverTime,
		HandoffTimeout: o.HandoffTimeout, MaxBehind: o.MaxBehind, MetricsWindow: o.MetricsWindow,
		Concurrency: o.Concurrency, Retry: cmdutil.RetryFor(f), Clock: f.Clock,
	}
	opt.CloudWatchSkipped = cloudWatchSkipped(f, o)
	// A window is a minute of silence otherwise.
	if show := cmdutil.NewProgress(f); show.Term != nil {
		read := show.Counter("read", "")
		opt.Progress = func(done, total int) {
			if read(done, total); done == total {
				show.Done()
			}
		}
	}
	d, err := doctor.New(ctx, apis, opt)
	if err != nil {
		return cmdutil.ExplainAWS(err, f.AWSContext(table, o.Stream))
	}
	fmt.Fprintf(f.IO.ErrOut, "kcltool: reading lease table %q every %s for %s...\n", table, o.FailoverTime, o.Window)
	if !o.Watch {
		rep, err := d.Run(ctx)
		if err != nil {
			return cmdutil.ExplainAWS(err, f.AWSContext(table, o.Stream))
		}
		if err := renderDoctor(f, o.Output, rep, failOn); err != nil {
			return err
		}
		return doctorVerdict(rep, failOn)
	}
	var last *doctor.Report
	live := &liveView{io: f.IO}
	err = d.Watch(ctx, func(rep *doctor.Report) error {
		if !rep.Partial {
			last = rep // the exit code: a first look from one read cannot have every finding
		}
		return live.show(func() error {
			// -o json: one compact document per line, a stream for jq, not an array
			return printDoctor(cmdutil.NewPrinter(f.IO, o.Output).Streaming(), rep, failOn)
		}, o.Output)
	})
	if errors.Is(err, context.Canceled) && last != nil {
		// Stopped by the user: the exit code says how the last window looked.
		return doctorVerdict(last, failOn)
	}
	return cmdutil.ExplainAWS(err, f.AWSContext(table, o.Stream))
}

// cloudWatchSkipped is the reason doctor does not read CloudWatch, or "".
func cloudWatchSkipped(f *cmdutil.Factory, o *doctorOptions) string {
	if o.NoCloudWatch {
		return "--no-cloudwatch"
	}
	return cmdutil.LocalCloudWatchSkip(f.Getenv, f.EndpointURL)
}

// doctorAPIs builds the clients; CloudWatch only when it is to be read
// (cloudWatchSkipped).
func doctorAPIs(ctx context.Context, f *cmdutil.Factory, o *doctorOptions) (doctor.APIs, error) {
	var apis doctor.APIs
	ddb, err := f.DynamoDB(ctx)
	if err != nil {
		return apis, err
	}
	kin, err := f.Kinesis(ctx)
	if err != nil {
		return apis, err
	}
	apis.DynamoDB, apis.Kinesis = ddb, kin
	if cloudWatchSkipped(f, o) == "" {
		cw, err := f.CloudWatch(ctx)
		if err != nil {
			return apis, err
		}
		apis.CloudWatch = cw
	}
	return apis, nil
}

// doctorVerdict is exit 3 when a finding reaches --fail-on.
func doctorVerdict(rep *doctor.Report, failOn doctor.Severity) error {
	bad := rep.AtLeast(failOn)
	if len(bad) == 0 {
		return nil
	}
	var ids []string
	seen := map[string]bool{}
	for _, f := range bad {
		if !seen[f.ID] {
			seen[f.ID] = true
			ids = append(ids, f.ID)
		}
	}
	return &cmdutil.ExitError{Code: cmdutil.ExitProblems, Err: fmt.Errorf("%s at or above %s: %s", cmdutil.Plural(len(bad), "finding"), failOn, strings.Join(ids, ", "))}
}
