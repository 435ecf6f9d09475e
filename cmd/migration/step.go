package migration

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/inspect"
)

// stepOptions are the flags of start, rollback and finalize.
type stepOptions struct {
	statusOptions
	Execute   bool
	IndexWait time.Duration
}

// planFormats: a plan is a table or one JSON document.
var planFormats = []string{cmdutil.FormatTable, cmdutil.FormatJSON}

type stepDoc struct {
	use, short, long, example string
}

var stepDocs = map[string]stepDoc{
	inspect.MigrationStart: {
		use:   "start --app APP",
		short: "Start the KCL 2.x → 3.x upgrade: cv UPGRADE_FROM_2X and the index (dry run unless --execute)",
		long: `Start the upgrade of a KCL 2.x application (or roll forward a rolled-back
one) as deploying KCL 3.x with clientVersionConfig COMPATIBLE_WITH_2X does:

  1. Migration3.0 cv = CLIENT_VERSION_UPGRADE_FROM_2X: created where a KCL 3.x
     worker would create it when there is none (the lease table, or the
     CoordinatorState side table while it is in use), or changed from
     CLIENT_VERSION_2X where it is (KclMigrationTool.py rollforward). The
     write is conditional: a change by a worker meanwhile is not overwritten.
  2. the LeaseOwnerToLeaseKeyIndex added by UpdateTable as the KCL adds it
     (no throughput on an on-demand table, the table's own on a provisioned
     one), waited for until ACTIVE with a progress line on stderr.

Workers then report worker metrics (kcltool workers and KCL 3.x workers
alike) while leases are still taken the 2.x way. The leader flips cv to
CLIENT_VERSION_3X_WITH_ROLLBACK once the index is ACTIVE and every lease
owner has fresh metrics, steadily for 10 minutes; the plan names each of
these checks. Then run ` + "`kcltool migration finalize`" + `.`,
		example: `  kcltool migration start --app orders
  kcltool migration start --app orders --execute`,
	},
	inspect.MigrationRollback: {
		use:   "rollback --app APP",
		short: "Roll a KCL 3.x upgrade back to 2.x: cv 2X, then the index deleted (dry run unless --execute)",
		long: `Roll back as KclMigrationTool.py --mode rollback does:

  1. Migration3.0 cv = CLIENT_VERSION_2X, conditioned on the cv and mts read
     (CLIENT_VERSION_UPGRADE_FROM_2X or CLIENT_VERSION_3X_WITH_ROLLBACK); the
     workers return to 2.x lease taking at their next check (every minute).
  2. a wait of --index-wait (120s, the tool's) after cv 2X was written, so
     that no worker still queries the index;
  3. the LeaseOwnerToLeaseKeyIndex deleted by UpdateTable;
  4. for a KCL 3.0–3.4 fleet (Migration3.0 in the CoordinatorState table and
     no TableMigration3.5 item), the WorkerMetricStats table deleted, as that
     KCL's tool did.

CLIENT_VERSION_3X cannot be rolled back. Run again after a cut wait: the
steps already done are skipped, and the wait counts from cv's mts.`,
		example: `  kcltool migration rollback --app orders
  kcltool migration rollback --app orders --execute`,
	},
	inspect.MigrationFinalize: {
		use:   "finalize --app APP",
		short: "Make the KCL 3.x upgrade final: cv 3X (dry run unless --execute)",
		long: `Make the upgrade final as deploying the workers with clientVersionConfig
CLIENT_VERSION_CONFIG_3X does: Migration3.0 cv CLIENT_VERSION_3X_WITH_ROLLBACK
becomes CLIENT_VERSION_3X, conditioned on the cv and mts read. After it, no
rollback is possible.

Refused (exit 3) unless cv is CLIENT_VERSION_3X_WITH_ROLLBACK: while it is
CLIENT_VERSION_UPGRADE_FROM_2X the plan names the readiness checks the leader
still waits for (the index, fresh metrics per owner, the time left of its
10-minute wait).`,
		example: `  kcltool migration finalize --app orders
  kcltool migration finalize --app orders --execute -o json`,
	},
}

func newStepCmd(f *cmdutil.Factory, command string) *cobra.Command {
	o := &stepOptions{}
	d := stepDocs[command]
	c := &cobra.Command{
		Use:   d.use,
		Short: d.short,
		Long: d.long + `

Without --execute this is a dry run: it prints the plan (each write and each
check) and writes nothing. Exits 3 while something blocks the step (named in
the plan), 0 when the plan is applied or there is nothing to do, 1 on errors.
Works on Java fleets' tables in every layout (side tables, PENDING, lease
table).`,
		Example: d.example,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.CheckOutputOf(o.Output, planFormats...); err != nil {
				return err
			}
			table, ddb, err := o.Open(cmd, f)
			if err != nil {
				return err
			}
			t := o.tables(table)
			ctx := cmd.Context()
			plan, err := inspect.PlanMigration(ctx, ddb, t, f.Clock, command, inspect.MigrationPlanOptions{IndexWait: o.IndexWait})
			if err != nil {
				return cmdutil.ExplainAWS(err, f.AWSContext(table, ""))
			}
			done := make([]bool, len(plan.Writes))
			var applyErr error
			if o.Execute && !plan.Blocked() && len(plan.Writes) > 0 {
				prog := cmdutil.NewProgress(f)
				applyErr = coordination.MigrationApply(ctx, ddb, plan.Writes, coordination.MigrationApplyOptions{
					Clock:    f.Clock,
					Progress: func(what string, waited time.Duration) { prog.Show("%s (%s)", what, waited.Round(time.Second)) },
					Done: func(i int) {
						prog.Done()
						done[i] = true
						fmt.Fprintf(f.IO.ErrOut, "kcltool: done: %s\n", plan.Writes[i].Detail)
					},
				})
				prog.Done()
				if applyErr == nil {
					if err := plan.Reread(ctx, ddb, f.Clock); err != nil {
						return cmdutil.ExplainAWS(err, f.AWSContext(table, ""))
					}
				}
			}
			if err := printPlan(cmdutil.NewPrinter(f.IO, o.Output), plan, o.Execute, done); err != nil {
				return err
			}
			switch {
			case applyErr != nil:
				if errors.Is(applyErr, coordination.ErrMigrationStateChanged) {
					return applyErr
				}
				return cmdutil.ExplainAWS(applyErr, f.AWSContext(table, ""))
			case plan.Blocked():
				return &cmdutil.ExitError{Code: cmdutil.ExitProblems, Err: fmt.Errorf("migration %s is blocked: %s", command, strings.Join(plan.Blockers, "; "))}
			case plan.Done != "":
				fmt.Fprintf(f.IO.ErrOut, "kcltool: nothing to do: %s\n", plan.Done)
			case !o.Execute:
				fmt.Fprintf(f.IO.ErrOut, "kcltool: dry run: %s planned; nothing written. Add --execute to apply it\n", cmdutil.Plural(len(plan.Writes), "step"))
			}
			return nil
		},
	}
	o.Register(c)
	o.sideTableFlags(c)
	c.Flags().BoolVar(&o.Execute, "execute", false, "apply the plan (without it: a dry run that only prints the plan)")
	if command == inspect.MigrationRollback {
		c.Flags().DurationVar(&o.IndexWait, "index-wait", inspect.RollbackIndexWait, "the wait between cv CLIENT_VERSION_2X and the index deletion, counted from cv's mts (KclMigrationTool.py waits 120s)")
	}
	cmdutil.AddOutputFlagOf(c, &o.Output, "output format: table or json", planFormats...)
	return c
}
