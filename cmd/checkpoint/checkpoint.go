// Package checkpoint holds `kcltool checkpoint`: diff (also `kcltool lag`),
// reset, export, import and backups. It renders the plans and results of
// the reset and inspect packages and asks before any write.
package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/inspect"
)

// NewCmd returns `kcltool checkpoint` and its commands.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:     "checkpoint",
		Short:   "Compare checkpoints with the stream; reset, export and import them",
		GroupID: "operate",
	}
	c.AddCommand(NewDiffCmd(f, "diff"))
	c.AddCommand(newCheckpointWriteCmds(f)...)
	c.AddCommand(newCheckpointBackupsCmd(f))
	return c
}

type checkpointDiffOptions struct {
	cmdutil.AppFlags
	Stream      string
	Output      string
	FailOn      []string
	Shards      []string
	States      []string
	MaxBehind   time.Duration
	Concurrency int
	Watch       cmdutil.WatchFlags
}

// NewDiffCmd builds `checkpoint diff`; `kcltool lag` is the same
// command under a shorter name.
func NewDiffCmd(f *cmdutil.Factory, use string) *cobra.Command {
	o := &checkpointDiffOptions{}
	c := &cobra.Command{
		Use:   use + " --app APP --stream STREAM",
		Short: "Show each shard's checkpoint against the stream: lag, drained, blocked, orphaned",
		Long: `Join ListShards with the lease table: one row per shard or lease, with how far
each open shard's checkpoint is behind the tip. BEHIND comes from one GetRecords
call (Limit 1) after the checkpoint; no shard is read more than once.

STATE is one of:
  at-tip            nothing after the checkpoint
  behind            records after the checkpoint; BEHIND says how far
  not-started       sentinel checkpoint (TRIM_HORIZON, LATEST): no reads yet
  drained           SHARD_END (or the lease was cleaned up after it)
  closed-undrained  closed shard whose checkpoint is not SHARD_END: still reading, or stuck
  blocked           child waiting on a parent that is not at SHARD_END (named)
  missing-lease     a shard nobody has a lease for: its data is not consumed
  orphan-lease      a lease for a shard the stream does not have (trimmed,
                    or a deleted or recreated stream)

Closed shards are recognised by Kinesis's shard listing, SHARD_END checkpoints
and child shards, never by comparing EndingSequenceNumber, which some Kinesis
implementations report wrongly.

With --fail-on or --max-behind the command exits 3 when a row matches, for CI
and cron. --watch (-w) prints the table, then one line per change every
--interval until Ctrl-C; it cannot go with the checks (docs/watch.md).`,
		Example: `  kcltool checkpoint diff --app orders --stream orders
  kcltool lag --app orders --stream orders --max-behind 5m     # exit 3 if any shard is 5m behind
  kcltool lag --app orders --stream orders --fail-on blocked,missing-lease,orphan-lease -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.CheckOutput(o.Output); err != nil {
				return err
			}
			for _, s := range o.FailOn {
				if !validLagState(s) {
					return cmdutil.UsageErrorf("invalid --fail-on state %q: use %s", s, lagStateList())
				}
			}
			for _, s := range o.States {
				if !validLagState(s) {
					return cmdutil.UsageErrorf("invalid --state %q: use %s", s, lagStateList())
				}
			}
			if o.Concurrency < 0 {
				return cmdutil.UsageErrorf("--concurrency must be 0 (automatic) or more")
			}
			if err := checkLagWatch(o.Watch, o.FailOn, o.MaxBehind); err != nil {
				return err
			}
			return runCheckpointDiff(cmd, f, o)
		},
	}
	o.Register(c)
	cmdutil.AddOutputFlag(c, &o.Output)
	cmdutil.AddTableFlags(c, f.IO, "STREAM", "SHARD", "LEASE-OWNER", "CHECKPOINT", "SHARD-STATUS", "BEHIND", "STATE", "SUBSEQ", "PARENTS", "LEASE-KEY", "NOTE")
	c.Flags().StringVar(&o.Stream, "stream", "", "stream name (in a multi-stream lease table: only this stream)")
	c.Flags().StringSliceVar(&o.Shards, "shard", nil, "only these shards (repeat it, or comma-separated)")
	c.Flags().StringSliceVar(&o.States, "state", nil, "only rows in these states (comma-separated; the STATE column's words)")
	c.Flags().StringSliceVar(&o.FailOn, "fail-on", nil, "exit 3 when a row is in one of these states (comma-separated)")
	c.Flags().DurationVar(&o.MaxBehind, "max-behind", 0, "exit 3 when a shard is further behind than this")
	c.Flags().IntVar(&o.Concurrency, "concurrency", 0, "shards probed at once (0: chosen from the number of shards, 8 to 64)")
	o.Watch.Register(c)
	return c
}

func validLagState(s string) bool {
	for _, st := range inspect.LagStates {
		if string(st) == s {
			return true
		}
	}
	return false
}

func lagStateList() string {
	var s []string
	for _, st := range inspect.LagStates {
		s = append(s, string(st))
	}
	return strings.Join(s, ", ")
}

func runCheckpointDiff(cmd *cobra.Command, f *cmdutil.Factory, o *checkpointDiffOptions) error {
	table, ddb, err := o.Open(cmd, f)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	kin, err := f.Kinesis(ctx)
	if err != nil {
		return err
	}
	// One line on a terminal: the table read (once it takes a second), then
	// the shards probed.
	p := cmdutil.NewProgress(f)
	started := f.Clock.Now()
	scan := cmdutil.WatchScan(ddb, p, table, time.Second)
	lag, err := inspect.CheckpointDiff(ctx, kin, scan, table, inspect.LagOptions{Stream: o.Stream, Concurrency: o.Concurrency,
		Retry: cmdutil.RetryFor(f), Clock: f.Clock, Progress: p.Counter("probed", "shards")})
	scan.End()
	if err != nil {
		if errors.Is(err, inspect.ErrStreamRequired) {
			return cmdutil.UsageErrorf("--stream is required for a single-stream lease table (or set KCLTOOL_STREAM)")
		}
		return cmdutil.ExplainAWS(err, f.AWSContext(table, o.Stream))
	}
	for _, m := range lag.Malformed {
		fmt.Fprintf(f.IO.ErrOut, "kcltool: warning: skipped malformed item: %v\n", m)
	}
	filterLag(lag, o.Shards, o.States)
	if o.Watch.Watch {
		return watchLag(ctx, f, o, table, func(ctx context.Context) (*inspect.Lag, error) {
			l, err := inspect.CheckpointDiff(ctx, kin, ddb, table, inspect.LagOptions{Stream: o.Stream, Concurrency: o.Concurrency,
				Retry: cmdutil.RetryFor(f), Clock: f.Clock})
			if err == nil {
				filterLag(l, o.Shards, o.States)
			}
			return l, err
		}, lag, started)
	}
	if err := renderLag(f.IO, o.Output, lag); err != nil {
		return err
	}
	return lagCheck(lag, o.FailOn, o.MaxBehind)
}

// lagCheck turns --fail-on and --max-behind matches into exit 3.
func lagCheck(lag *inspect.Lag, failOn []string, maxBehind time.Duration) error {
	var problems []string
	counts := lag.Counts()
	for _, s := range failOn {
		if n := counts[inspect.LagState(s)]; n > 0 {
			problems = append(problems, fmt.Sprintf("%s %s", cmdutil.Plural(n, "shard"), s))
		}
	}
	if maxBehind > 0 {
		n := 0
		for _, r := range lag.Rows {
			if r.MillisBehindLatest != nil && time.Duration(*r.MillisBehindLatest)*time.Millisecond > maxBehind {
				n++
			}
		}
		if n > 0 {
			problems = append(problems, fmt.Sprintf("%s behind more than %s", cmdutil.Plural(n, "shard"), maxBehind))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return &cmdutil.ExitError{Code: cmdutil.ExitProblems, Err: fmt.Errorf("%s", strings.Join(problems, "; "))}
}
