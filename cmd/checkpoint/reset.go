package checkpoint

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reset"
)

// newCheckpointWriteCmds are the checkpoint commands that write: reset,
// export (which writes a file) and import.
func newCheckpointWriteCmds(f *cmdutil.Factory) []*cobra.Command {
	return []*cobra.Command{newCheckpointResetCmd(f), newCheckpointExportCmd(f), newCheckpointImportCmd(f)}
}

type resetOptions struct {
	cmdutil.AppFlags
	applyFlags
	Stream      string
	To          string
	At          string
	ByDuration  string
	ToSequence  string
	SubSequence int64
	FromFile    string
	SkipInvalid bool
	Shards      []string
}

func newCheckpointResetCmd(f *cmdutil.Factory) *cobra.Command {
	o := &resetOptions{}
	c := &cobra.Command{
		Use:   "reset --app APP --stream STREAM (--to trim-horizon|latest | --at TIME | --by-duration D | --to-sequence SEQ --shard ID | --from-file F)",
		Short: "Rewind or skip checkpoints: plan first, apply with --execute",
		Long: `Move the checkpoints of a KCL application, for example to reprocess everything
since 10:00 after shipping a fix, or to skip a backlog. Give exactly one target:

  --to trim-horizon   replay everything the stream still holds
  --to latest         skip to the tip (closed shards get SHARD_END)
  --at TIME           the first record processed afterwards is the first one
                      that arrived at or after TIME. RFC 3339, or short forms
                      such as 2026-11-01T10:00Z and 2026-11-01 (UTC unless a
                      zone is given), or epoch seconds
  --by-duration D     --at now minus D (90m, 2h, 1d12h)
  --to-sequence SEQ   this checkpoint for the one --shard: the record SEQ
                      counts as processed, processing resumes after it
  --from-file F       checkpoints per lease from a kcltool export, or a CSV of
                      leaseKey,checkpoint,subSequenceNumber (with or without
                      that header; leases ls -o csv output works too)

--at resolves the time shard by shard along the lineage, to the sequence
number of the last record before TIME (never the AT_TIMESTAMP sentinel, whose
time KCL workers take from their own configuration): a shard closed before
TIME gets SHARD_END, one without a record before TIME (created after it)
TRIM_HORIZON. A time older than the stream's retention gives TRIM_HORIZON and
a warning. Parents whose leases were cleaned up after SHARD_END are recreated
when TIME is before the reshard, so they are replayed before their children.

Without --execute this is a dry run: it prints the plan, one row per lease,
with its owner, before and after, and writes nothing; leases to change that
have owners are warned about at once. With --execute it first checks that
the application is stopped (no lease counter moves during --sample) and
refuses with exit 3 otherwise, naming the live workers; then it saves a
backup of the whole table and the plan in --backup-dir (by default
$XDG_STATE_HOME/kcltool/backups or ~/.local/state/kcltool/backups, or
s3://bucket/prefix, a bucket the team shares, from which any machine with
access lists and undoes; see checkpoint backups ls), prints the import
command that undoes the reset (the backup, limited by --shard to exactly the
leases it writes, with the --region, --profile and --endpoint-url given), and
writes. A backup that cannot be saved stops the reset before any write. Every
write is conditional on the lease being exactly as planned: a lease that
changed is reported and skipped (exit 3), never overwritten. A write whose
answer was lost (a timeout, a reset connection, a 5xx, or the SDK's retry of
a write that had applied) is read back before it is reported: "applied"
with confirmedBy "read-back" when the lease is as written.

A --from-file with any entry that cannot be used (a bad checkpoint, a
repeated lease, an export entry KCL could not read) is refused whole, exit
2, every bad entry named with its line; --skip-invalid applies the rest and
exits 3.

--force resets a running application: each write is conditioned on the
lease as just read, bumps its counter and removes its owner, so the worker
holding it loses it and its successor starts from the new checkpoint.
Records the old holder was processing may be handled twice, and it may
handle a few records past the reset before it notices (see docs/reset.md,
"--force"). --force also overrides a KCL 3.x graceful handoff.`,
		Example: `  kcltool checkpoint reset --app orders --stream orders --at 2026-11-01T10:00Z
  kcltool checkpoint reset --app orders --stream orders --by-duration 2h --execute
  kcltool checkpoint reset --app orders --stream orders --to latest --shard shardId-000000000003 --execute
  kcltool checkpoint reset --app orders --stream orders --to-sequence 4959...6898 --shard shardId-000000000001
  kcltool checkpoint reset --app orders --from-file positions.csv -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			target, err := o.target(f)
			if err != nil {
				return err
			}
			if err := o.applyFlags.check(); err != nil {
				return err
			}
			return runCheckpointReset(cmd, f, o, target)
		},
	}
	o.AppFlags.Register(c)
	o.applyFlags.register(c)
	fl := c.Flags()
	fl.StringVar(&o.Stream, "stream", "", "stream name (in a multi-stream lease table: the stream whose leases to reset)")
	fl.StringVar(&o.To, "to", "", "trim-horizon or latest")
	fl.StringVar(&o.At, "at", "", "a point in time: RFC 3339, 2026-11-01T10:00Z, 2026-11-01 (UTC unless zoned) or epoch seconds")
	fl.StringVar(&o.ByDuration, "by-duration", "", "a point in time this long ago: 90m, 2h, 1d12h")
	fl.StringVar(&o.ToSequence, "to-sequence", "", "a sequence number of the --shard (or TRIM_HORIZON, LATEST, SHARD_END)")
	fl.Int64Var(&o.SubSequence, "sub-sequence", 0, "with --to-sequence: the KPL sub-sequence number processed last")
	fl.StringVar(&o.FromFile, "from-file", "", "checkpoints per lease: a kcltool export or a leaseKey,checkpoint,subSequenceNumber CSV")
	fl.BoolVar(&o.SkipInvalid, "skip-invalid", false, "with --from-file: apply the usable entries of a file with some that cannot be used, and exit 3 naming them (without it, such a file is refused whole)")
	fl.StringSliceVar(&o.Shards, "shard", nil, "only these shards (ids or lease keys, comma-separated)")
	_ = c.RegisterFlagCompletionFunc("to", cobra.FixedCompletions([]string{"trim-horizon", "latest"}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

// target turns the target flags into a reset.Target, or a usage error.
func (o *resetOptions) target(f *cmdutil.Factory) (reset.Target, error) {
	var t reset.Target
	given := 0
	for _, v := range []string{o.To, o.At, o.ByDuration, o.ToSequence, o.FromFile} {
		if v != "" {
			given++
		}
	}
	if given != 1 {
		return t, cmdutil.UsageErrorf("give exactly one target: --to trim-horizon|latest, --at TIME, --by-duration D, --to-sequence SEQ or --from-file F")
	}
	if o.SubSequence != 0 && o.ToSequence == "" {
		return t, cmdutil.UsageErrorf("--sub-sequence goes with --to-sequence")
	}
	switch {
	case o.To != "":
		switch strings.ToLower(strings.ReplaceAll(o.To, "_", "-")) {
		case "trim-horizon":
			t.To = leasecore.TRIM_HORIZON
		case "latest":
			t.To = leasecore.LATEST
		default:
			return t, cmdutil.UsageErrorf("invalid --to %q: use trim-horizon or latest (--at TIME for a point in time)", o.To)
		}
	case o.At != "":
		at, err := reset.ParseTime(o.At)
		if err != nil {
			return t, cmdutil.UsageErrorf("invalid --at: %v", err)
		}
		t.At = at
	case o.ByDuration != "":
		d, err := reset.ParseAgo(o.ByDuration)
		if err != nil {
			return t, cmdutil.UsageErrorf("invalid --by-duration: %v", err)
		}
		t.At, t.Ago = f.Clock.Now().Add(-d), d
	case o.ToSequence != "":
		if len(o.Shards) != 1 {
			return t, cmdutil.UsageErrorf("--to-sequence needs exactly one --shard: a sequence number belongs to one shard")
		}
		cp, err := reset.ParseCheckpoint(o.ToSequence, o.SubSequence)
		if err != nil {
			return t, cmdutil.UsageErrorf("invalid --to-sequence: %w", err)
		}
		t.Sequence = &cp
	case o.FromFile != "":
		data, err := os.ReadFile(o.FromFile)
		if err != nil {
			return t, cmdutil.UsageErrorf("--from-file: %v", err)
		}
		pf, err := reset.ReadPositionsFile(data, o.FromFile)
		if err != nil {
			return t, cmdutil.UsageErrorf("--from-file: %v", err)
		}
		t.Positions, t.File, t.Invalid, t.SkipInvalid = pf.Positions, o.FromFile, pf.Invalid, o.SkipInvalid
		if t.Positions == nil {
			t.Positions = []reset.Position{} // a file of invalid entries only is still the target
		}
	}
	if o.SkipInvalid && o.FromFile == "" {
		return t, cmdutil.UsageErrorf("--skip-invalid goes with --from-file: it skips the entries of the file that cannot be used")
	}
	return t, nil
}

func runCheckpointReset(cmd *cobra.Command, f *cmdutil.Factory, o *resetOptions, target reset.Target) error {
	table, err := o.TableName()
	if err != nil {
		return err
	}
	if target.Positions == nil && o.Stream == "" {
		return cmdutil.UsageErrorf("--stream is required: the reset reads the stream's shards (or set KCLTOOL_STREAM)")
	}
	ctx := cmd.Context()
	ddb, err := f.DynamoDB(ctx)
	if err != nil {
		return err
	}
	var kin reset.StreamAPI
	if target.Positions == nil {
		k, err := f.Kinesis(ctx)
		if err != nil {
			return err
		}
		kin = k
	}
	if !target.At.IsZero() {
		fmt.Fprintf(f.IO.ErrOut, "kcltool: resolving %s per shard...\n", target)
	}
	// On a terminal: the table read (once it takes a second), then the
	// shards resolved for --at.
	p := cmdutil.NewProgress(f)
	scan := cmdutil.WatchScan(ddb, p, table, time.Second)
	plan, err := reset.PlanReset(ctx, cmdutil.WatchedTable{TableAPI: ddb, Progress: scan}, kin, reset.ResetOptions{
		Table: table, Stream: o.Stream, Shards: o.Shards, Target: target, Clock: f.Clock, Retry: cmdutil.RetryFor(f),
		Progress: p.Counter("resolved", "shards"),
	})
	scan.End()
	if err != nil {
		return PlanError(err, f.AWSContext(table, o.Stream))
	}
	return finishPlan(cmd, f, plan, &o.applyFlags, o.AppFlags)
}

// PlanError maps planning errors: bad input exits 2, AWS errors are
// explained.
func PlanError(err error, ac cmdutil.AWSContext) error {
	if reset.IsInputError(err) {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
	}
	return cmdutil.ExplainAWS(err, ac)
}

// undoCommand is the start of the import command that restores a backup
// of this application's table.
func undoCommand(f *cmdutil.Factory, a cmdutil.AppFlags) string {
	return "kcltool checkpoint import " + cmdutil.TableArgs(f, a)
}

// applyFlags are the flags of the commands that apply a plan.
type applyFlags struct {
	Execute   bool
	Force     bool
	Sample    time.Duration
	BackupDir string
	Output    string
}

func (a *applyFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.BoolVar(&a.Execute, "execute", false, "apply the plan (without it: a dry run that only prints the plan)")
	fl.BoolVar(&a.Force, "force", false, "apply even though the application is running or leases are in a KCL 3.x handoff")
	fl.DurationVar(&a.Sample, "sample", 10*time.Second, "with --execute: no lease counter may move for this long (KCL's failover time)")
	addBackupDirFlag(c, &a.BackupDir, "with --execute: the folder, or s3://bucket/prefix, the backup of the table and the plan are saved in")
	cmdutil.AddOutputFlag(c, &a.Output)
}

func (a *applyFlags) check() error {
	if err := cmdutil.CheckOutput(a.Output); err != nil {
		return err
	}
	if err := checkBackupDir(a.BackupDir); err != nil {
		return err
	}
	if a.Sample < 0 || (a.Sample == 0 && !a.Force) {
		return cmdutil.UsageErrorf("--sample must be positive: it is how long the application must be seen stopped (--force skips the requirement)")
	}
	return nil
}
