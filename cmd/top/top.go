// Package top holds `kcltool top`: a live full-screen view of a KCL
// application, drawn with bubbletea from inspect/top's snapshots, or one
// plain frame per refresh when stdout is not a terminal.
package top

import (
	"context"
	"errors"
	"fmt"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/inspect/doctor"
	"github.com/kcltool/kcltool/inspect/top"
	"github.com/kcltool/kcltool/internal/clock"
)

type topOptions struct {
	cmdutil.AppFlags
	Stream       string
	Interval     time.Duration
	Once         bool
	FailoverTime time.Duration
	MaxBehind    time.Duration
	Window       time.Duration
	NoCloudWatch bool
}

// NewCmd returns `kcltool top`.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	o := &topOptions{}
	c := &cobra.Command{
		Use:     "top --app APP [--stream STREAM]",
		Short:   "Watch a KCL application live: shards, lag, owners, workers and what the view costs",
		GroupID: "operate",
		Long: `A live full-screen view of a KCL application, refreshed every --interval.

Per shard: its state, owner, records per second, how far behind its
checkpoint is with a sparkline of the last refreshes, the time since its
checkpoint last moved, and the doctor findings on it. Above the shards, every
warning and critical finding, about shards, workers or the table. Per worker:
its share of the leases and its throughput, as bars; on a KCL 3.x table the
leader and each worker's metrics. The last lines say what a refresh cost in
read units, Kinesis and CloudWatch calls, and what that is a minute.

The findings are doctor's, every check of kcltool doctor run over top's own
reads of the last --window (1m): findings that compare reads (dead workers,
churn, stuck shards) come once the reads span the window. CloudWatch is read
at most once a minute; --no-cloudwatch leaves it out.

Each refresh is one full Scan of the lease table, one ListShards per stream,
one probe per open shard and one counting read per shard whose checkpoint
moved; doctor adds a DescribeStreamSummary and a ListStreamConsumers per
stream once a minute, and reads KCL 3.0-3.4's side tables, never the lease
table. At the
default interval (20s) that costs the table no more read units than one KCL
2.x worker's lease taker does: one full Scan every 20 s.

Keys: s sorts by the next column, S reverses, / filters by shard, worker or
state, space pauses, ? shows help, q quits. Ctrl-C quits with exit 130.

When stdout is not a terminal, top prints one plain frame per interval (no
colour, no full screen), or exactly one with --once, and exits 0 then.
See docs/top.md.`,
		Example: `  kcltool top --app orders --stream orders
  kcltool top --app orders --stream orders --interval 1m
  kcltool top --app orders --stream orders --once | less`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Interval <= 0 || o.FailoverTime <= 0 || o.MaxBehind <= 0 || o.Window <= 0 {
				return cmdutil.UsageErrorf("--interval, --failover-time, --max-behind and --window must be positive")
			}
			if o.Window < o.FailoverTime {
				return cmdutil.UsageErrorf("--window %s is shorter than --failover-time %s: telling an expired lease needs reads a failover time apart", o.Window, o.FailoverTime)
			}
			return runTop(cmd.Context(), f, o)
		},
	}
	o.Register(c)
	fl := c.Flags()
	fl.StringVar(&o.Stream, "stream", "", "stream name, to read lag and rates (multi-stream tables name their streams)")
	fl.DurationVar(&o.Interval, "interval", top.DefaultInterval, "time between refreshes; below 20s a refresh costs the table more than one KCL 2.x worker's taker")
	fl.BoolVar(&o.Once, "once", false, "print one plain frame and exit")
	fl.DurationVar(&o.FailoverTime, "failover-time", 10*time.Second, "the application's KCL failover time: a lease not renewed over it is expired")
	fl.DurationVar(&o.MaxBehind, "max-behind", time.Minute, "a shard further behind than this shows the shard-lag finding")
	fl.DurationVar(&o.Window, "window", doctor.DefaultWindow, "how far back doctor's checks look over top's reads (as doctor --window)")
	fl.BoolVar(&o.NoCloudWatch, "no-cloudwatch", false, "do not read CloudWatch; its checks are reported as skipped")
	return c
}

func runTop(ctx context.Context, f *cmdutil.Factory, o *topOptions) error {
	table, err := o.TableName()
	if err != nil {
		return err
	}
	ddb, err := f.DynamoDB(ctx)
	if err != nil {
		return err
	}
	kin, err := f.Kinesis(ctx)
	if err != nil {
		return err
	}
	apis := top.APIs{DynamoDB: ddb, Kinesis: kin}
	cwSkipped := "--no-cloudwatch"
	if !o.NoCloudWatch {
		cwSkipped = cmdutil.LocalCloudWatchSkip(f.Getenv, f.EndpointURL)
	}
	if cwSkipped == "" {
		if apis.CloudWatch, err = f.CloudWatch(ctx); err != nil {
			return err
		}
	}
	s := top.NewSampler(apis, top.Options{
		App: o.App, Table: table, Stream: o.Stream, Interval: o.Interval, FailoverTime: o.FailoverTime,
		MaxBehind: o.MaxBehind, Window: o.Window, CloudWatchSkipped: cwSkipped, Retry: cmdutil.RetryFor(f), Clock: f.Clock,
	})
	app := o.App
	if app == "" {
		app = table
	}
	explain := func(err error) error { return cmdutil.ExplainAWS(err, f.AWSContext(table, o.Stream)) }
	if o.Once || !f.IO.OutTTY {
		return explain(plainFrames(ctx, f, app, s.Refresh, o.Interval, o.Once))
	}
	return explain(runTerminal(ctx, f, app, s.Refresh, o.Interval))
}

// plainFrames prints one frame per interval, or one with once: no ANSI,
// no width limit, a blank line between frames. Ctrl-C (the context) ends it.
func plainFrames(ctx context.Context, f *cmdutil.Factory, app string, refresh refreshFunc, interval time.Duration, once bool) error {
	for n := 0; ; n++ {
		snap, err := refresh(ctx)
		if err != nil {
			return err
		}
		if n > 0 {
			fmt.Fprintln(f.IO.Out)
		}
		fmt.Fprintln(f.IO.Out, frame{app: app, snap: snap, view: viewState{}}.render())
		if once {
			return nil
		}
		if err := clock.Sleep(ctx, f.Clock, interval); err != nil {
			return err
		}
	}
}

// runTerminal runs the full-screen view until q (nil) or ctrl-c (exit 130).
func runTerminal(ctx context.Context, f *cmdutil.Factory, app string, refresh refreshFunc, interval time.Duration) error {
	m := newModel(ctx, app, refresh, interval, f.IO.Color)
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithAltScreen(), tea.WithInput(f.IO.In), tea.WithOutput(f.IO.Out))
	_, err := p.Run()
	switch {
	case ctx.Err() != nil:
		// SIGINT or SIGTERM from outside: Main's context, exit 130.
		return ctx.Err()
	case err != nil:
		return err
	case m.interrupted:
		return &cmdutil.ExitError{Code: cmdutil.ExitInterrupted, Err: errors.New("interrupted")}
	}
	return nil
}
