// Package run holds `kcltool run`: its settings table (flags, KCLTOOL_*
// variables and MultiLangDaemon properties keys), --print-config, and the
// start and stop of a runner.Worker.
package run

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/runner"
	"github.com/kcltool/kcltool/runner/metrics"
)

// runOptions are the flags of `kcltool run`. The settings are listed in
// runSettings (run_settings.go): most are bound to cfg's fields, the rest
// are kept here for workerConfig to turn into cfg.
type runOptions struct {
	cmdutil.AppFlags
	// cfg holds the settings bound to runner.Config fields, from
	// runner.DefaultConfig().
	cfg runner.Config

	Stream      string   // the first --stream
	Streams     []string // every --stream
	MultiStream bool
	// multiStreamSet: --multi-stream was given, true or false.
	multiStreamSet bool
	Exec           string
	Argv           []string // after --
	Format         string

	// Properties is a MultiLangDaemon properties file; PrintConfig prints
	// the resolved settings instead of running, in Output.
	Properties  string
	PrintConfig bool
	Output      string
	// noCommand: --print-config without a handler command; Argv holds a
	// placeholder so that the rest is still checked.
	noCommand bool
	// fromExecutable: Argv is the properties file's executableName.
	fromExecutable bool

	InitialPosition    string
	initialPositionSet bool
	InitialTimestamp   string
	// EFO reads with enhanced fan-out, through the consumer ConsumerName
	// (registered when missing) or ConsumerARN.
	EFO          bool
	ConsumerName string
	ConsumerARN  string

	MetricsAddr       string
	CloudWatchMetrics bool

	// Assignment is --assignment: throughput or lease-count.
	Assignment string
}

// NewCmd returns `kcltool run`.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	o := &runOptions{cfg: runner.DefaultConfig()}
	c := &cobra.Command{
		Use:     "run --app APP --stream STREAM (--exec 'CMD' | -- CMD [ARGS...])",
		Short:   "Consume a stream as one worker of a fleet, running a command per batch",
		GroupID: "consume",
		Long: `Run one worker of a consumer fleet. It shares the stream's shards with the other
workers of the application through the KCL lease table (the Java KCL 2.x
protocol), reads the shards it holds, pipes each batch of records to the
command, and checkpoints only after the command succeeds. Start the same
command on more machines and the fleet rebalances.

The command gets one process per batch: --exec runs it through sh -c (pipes
and quoting work), -- CMD ARGS runs it directly. Records arrive on stdin as
JSON Lines (--format raw: bare data, one per line). Exit 0 checkpoints the
batch; a Lambda-style {"batchItemFailures":[...]} on stdout checkpoints before
the first failed record and retries from it; anything else retries the batch
with backoff. The command's stderr goes to kcltool's log at info, line by line,
with the shard and the batch's sequence range (the first and last 50 lines of
each run). See the handler contract (docs/handler.md) for the environment
(KCLTOOL_SHARD_ID, KCLTOOL_ATTEMPT, ...) and --max-retries, --max-record-age,
--bisect-on-error and --on-failure for giving up on records.

--multilang runs the command instead as a KCL MultiLangDaemon record
processor (aws-kcl, kclpy, ...): one long-lived child per held lease,
speaking the MLD's JSON protocol on stdin and stdout, that checkpoints
itself; kcltool validates each checkpoint. The batch and failure flags and
--max-parallel do not apply; --max-leases-for-worker bounds the children. A
child that exits, breaks the protocol or stays silent past
--multilang-timeout is killed and only its shard restarts, with a new child
after a backoff. See docs/multilang.md.

Records of a shard reach the command in order, one batch at a time; a child
shard starts only after its parents are finished, so each key's order
survives splits and merges. Delivery is at least once.

SIGTERM or Ctrl-C stops gracefully: reading stops, running commands may
finish (--shutdown-grace), their batches are checkpointed, every lease is
released so that the other workers take over at once, and kcltool exits 0.
A second signal exits at once with 130 (leases then expire after the
failover time).

The lease table's KCL 3.x state (its LeaseOwnerToLeaseKeyIndex, the
Migration3.0 item's cv, the TableMigration3.5 item's tm) decides how leases
are assigned, read at start and every --shard-sync-interval: on a KCL 2.x
table run takes and steals them; on a KCL 3.x table it follows the fleet's
elected leader, reports its worker metrics and hands leases over gracefully
when the leader moves them. The start-up log says which mode and why; a
change (a 3.x application appearing, a rollback to 2.x) is followed without
a restart.

--efo reads with enhanced fan-out instead of polling GetRecords: one
SubscribeToShard subscription per held shard, records pushed as they
arrive, a dedicated 2 MB/s per shard. The stream consumer (--consumer-name,
default the application name) is registered when missing and shared by the
application's workers; --consumer-arn uses an existing one and never
registers. Subscriptions are renewed every 5 minutes from the last event,
so nothing is skipped or read twice. See docs/run.md, Enhanced fan-out.

--stream may be repeated: the worker then reads every stream given, with the
Java KCL's multi-stream lease table (keys account:stream:epoch:shardId), and
never takes a lease of a stream it was not given. A table that already holds
such leases selects that mode for one --stream too; --multi-stream selects it
on an empty table. A table whose leases are of the other kind is refused.

--properties FILE reads a KCL MultiLangDaemon properties file (Java
Properties syntax): applicationName, streamName or streamArn, regionName,
initialPositionInStream, failoverTimeMillis, maxRecords and the other keys
with a run flag fill that flag, unless the command line or a KCLTOOL_*
variable set it. Unsupported keys get one warning each. RetrievalMode =
FANOUT, or the MultiLangDaemon's DEFAULT rule (no polling key set), means
--efo, with consumerName and consumerArn. Without --exec or --,
executableName runs as a MultiLang child (--multilang). --print-config prints every resolved setting
and where it came from (flag, env, file, default), and exits without
touching AWS. See docs/multilang.md.`,
		Example: `  kcltool run --app orders --stream orders --exec ./handler.sh
  kcltool run --app orders --stream orders --format raw --exec 'cat >> orders.log'
  kcltool run --app orders --stream orders --initial-position TRIM_HORIZON --create-table -- ./handler --verbose
  kcltool run --app orders --stream orders --bisect-on-error --max-retries 3 --on-failure /var/lib/orders/failed --exec ./handler.sh
  kcltool run --app orders --stream orders --efo --exec ./handler.sh
  kcltool run --properties app.properties --print-config
  kcltool run --properties app.properties --exec ./handler.sh`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.PrintConfig {
				if err := cmdutil.CheckOutputOf(o.Output, cmdutil.FormatTable, cmdutil.FormatWide, cmdutil.FormatJSON); err != nil {
					return err
				}
			}
			var props *propertiesRun
			if o.Properties != "" {
				p, err := loadProperties(cmd, f, o.Properties)
				if err != nil {
					return err
				}
				props = p
			}
			if err := o.takeCommand(cmd, args, props); err != nil {
				return err
			}
			o.initialPositionSet = cmd.Flags().Changed("initial-position")
			o.multiStreamSet = cmd.Flags().Changed("multi-stream")
			cfg, err := o.workerConfig(f)
			if err != nil {
				return fromFileHint(err, props)
			}
			props.configure(&cfg)
			if o.PrintConfig {
				return printRunConfig(cmd, f, o, props, cfg)
			}
			return runWorker(cmd.Context(), f, o, cfg)
		},
	}
	o.Register(c)
	registerRunSettings(c, o)
	fl := c.Flags()
	fl.StringVar(&o.Properties, "properties", "", "read settings from a KCL MultiLangDaemon properties file (flags and KCLTOOL_* variables win over it; see docs/multilang.md)")
	fl.BoolVar(&o.PrintConfig, "print-config", false, "print the resolved settings and where each came from (flag, env, file, default), and the lease-assignment mode read from the table (DescribeTable and GetItem only; printed as unknown when AWS cannot be reached), then exit")
	cmdutil.AddOutputFlagOf(c, &o.Output, "with --print-config: table, wide (adds a note per setting) or json", cmdutil.FormatTable, cmdutil.FormatWide, cmdutil.FormatJSON)
	_ = c.MarkFlagFilename("properties", "properties")
	return c
}

// takeCommand reads the handler command from --exec or from after --, or
// else from a properties file's executableName, which is a MultiLang child
// (--multilang): a child written for that protocol would misread batches.
func (o *runOptions) takeCommand(cmd *cobra.Command, args []string, props *propertiesRun) error {
	dash := cmd.ArgsLenAtDash()
	if dash < 0 && len(args) > 0 {
		return cmdutil.UsageErrorf("unexpected argument %q: give the handler command after -- or with --exec", args[0])
	}
	if dash > 0 {
		return cmdutil.UsageErrorf("unexpected argument %q before --", args[0])
	}
	if dash == 0 {
		o.Argv = args
	}
	switch {
	case o.Exec != "" && len(o.Argv) > 0:
		return cmdutil.UsageErrorf("give the handler command either with --exec or after --, not both")
	case o.Exec == "" && len(o.Argv) == 0 && props != nil && len(props.program) > 0:
		// As the MultiLangDaemon runs it: one long-lived child per lease.
		o.Argv, o.cfg.MultiLang, o.fromExecutable = props.program, true, true
	case o.Exec == "" && len(o.Argv) == 0 && o.PrintConfig:
		o.noCommand, o.Argv = true, []string{"-"}
	case o.Exec == "" && len(o.Argv) == 0:
		return cmdutil.UsageErrorf("no handler command: pass --exec 'CMD' or -- CMD [ARGS...] (or set KCLTOOL_EXEC)")
	}
	return nil
}

// runWorker runs the worker until it stops, and turns signals into its two
// kinds of stop: the first is graceful, a second one is immediate.
func runWorker(ctx context.Context, f *cmdutil.Factory, o *runOptions, cfg runner.Config) error {
	ddb, err := f.DynamoDB(ctx)
	if err != nil {
		return err
	}
	kin, err := f.Kinesis(ctx)
	if err != nil {
		return err
	}
	if o.CloudWatchMetrics {
		cw, err := f.CloudWatch(ctx)
		if err != nil {
			return err
		}
		cfg.CloudWatch = cw
	}
	if cfg.FanOut != nil {
		cfg.FanOut.API = kin
	}
	// The worker metrics of a KCL 3.x fleet: CPU on EC2, ECS and EKS,
	// found as the KCL finds the platform (run_platform.go).
	plat := defaultPlatform(f.Getenv, f.Clock)
	cfg.KCL3.Samplers = plat.samplers
	log := cfg.Log
	w, err := runner.NewWorker(cfg, ddb, kin)
	if err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	// Signals are counted here rather than through ctx: cmd.Main's context
	// ends at the first one, and the second must still be seen.
	sigs, stopSignals := notifySignals()
	defer stopSignals()
	// The worker's own context ends only on the second signal (or when this
	// function returns): ending it is the immediate stop.
	hard, cancelHard := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelHard()
	if o.MetricsAddr != "" {
		addr, err := metrics.Serve(hard, o.MetricsAddr, cfg.Metrics, log)
		if err != nil {
			return fmt.Errorf("--metrics-addr %s: %w", o.MetricsAddr, err)
		}
		base := "http://" + addr.String()
		log.Info("serving Prometheus metrics", "url", base+"/metrics", "livez", base+"/livez", "readyz", base+"/readyz")
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(hard) }()

	parentDone := ctx.Done()
	signals := 0
	for {
		select {
		case err := <-done:
			if err != nil {
				return cmdutil.ExplainAWS(err, f.AWSContext(cfg.Table, o.Stream))
			}
			return nil
		case <-parentDone:
			parentDone = nil
			w.Shutdown()
		case sig := <-sigs:
			signals++
			if signals == 1 {
				log.Info("stopping gracefully; send the signal again to stop at once", "signal", sig.String(), "grace", cfg.ShutdownGrace)
				w.Shutdown()
				continue
			}
			cancelHard()
			select {
			case <-done:
			case <-time.After(forcedStopWait):
			}
			return &cmdutil.ExitError{Code: cmdutil.ExitInterrupted, Err: errors.New("stopped at once on a second signal: running handlers were killed and leases were not released (they expire after the failover time)")}
		}
	}
}

// forcedStopWait bounds how long a second signal waits for the handlers to
// be killed before kcltool exits anyway.
const forcedStopWait = 2 * time.Second
