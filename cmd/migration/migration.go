// Package migration holds `kcltool migration`: the KCL 3.x migrations of
// an application (client version cv, table migration tm): status reads;
// start, rollback and finalize plan and, with --execute, write.
package migration

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/inspect"
)

// NewCmd returns `kcltool migration` and its commands.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:     "migration",
		Short:   "Show, start, roll back or finalize a KCL application's migration to KCL 3.x",
		GroupID: "operate",
	}
	c.AddCommand(newStatusCmd(f),
		newStepCmd(f, inspect.MigrationStart), newStepCmd(f, inspect.MigrationRollback), newStepCmd(f, inspect.MigrationFinalize))
	return c
}

type statusOptions struct {
	cmdutil.AppFlags
	CoordinatorStateTable string
	WorkerMetricsTable    string
	Output                string
}

func newStatusCmd(f *cmdutil.Factory) *cobra.Command {
	o := &statusOptions{}
	c := &cobra.Command{
		Use:   "status --app APP",
		Short: "Show cv, tm, the index, and each readiness check of the next migration step",
		Long: `Read a KCL application's migration state and judge its next step as the
KCL 3.x leader does (MigrationReadyMonitor, TableMigrationStateMachineImpl).

status reads, and never writes: the lease table's description (the
LeaseOwnerToLeaseKeyIndex and its status), the Migration3.0 item (cv, with who
wrote it and when), the TableMigration3.5 item (tm), the side tables, one scan
of the lease table and the worker metrics of both layouts. It works on tables
of Java fleets.

Each readiness check is named: the index ACTIVE, every lease owner with worker
metrics newer than 60s (the workers without are named), leases without an
owner, and the time left of the KCL's own waits (a check every minute and 10
minutes of stability before cv flips; the hour tm INIT bakes).

Exits 3 while something blocks the step the leader takes next, 0 otherwise, 1
on errors. start, rollback and finalize take the operator's steps.`,
		Example: `  kcltool migration status --app orders
  kcltool migration status --app orders -o json | jq '.steps[] | {step, blockers}'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.CheckOutput(o.Output); err != nil {
				return err
			}
			table, ddb, err := o.Open(cmd, f)
			if err != nil {
				return err
			}
			t := o.tables(table)
			st, err := inspect.ReadMigration(cmd.Context(), ddb, t, f.Clock)
			if err != nil {
				return cmdutil.ExplainAWS(err, f.AWSContext(table, ""))
			}
			if err := printStatus(cmdutil.NewPrinter(f.IO, o.Output), st); err != nil {
				return err
			}
			if st.Blocked() {
				return &cmdutil.ExitError{Code: cmdutil.ExitProblems, Err: fmt.Errorf("the next migration step is blocked: %s", cmdutil.Plural(blockers(st), "check"))}
			}
			return nil
		},
	}
	o.Register(c)
	o.sideTableFlags(c)
	cmdutil.AddOutputFlag(c, &o.Output)
	return c
}

func (o *statusOptions) sideTableFlags(c *cobra.Command) {
	c.Flags().StringVar(&o.CoordinatorStateTable, "coordinator-state-table", "", "the KCL 3.0-3.4 coordinator state table, when the application set coordinatorStateTableName (default: APP-CoordinatorState)")
	c.Flags().StringVar(&o.WorkerMetricsTable, "worker-metrics-table", "", "the KCL 3.0-3.4 worker metrics table, when the application set workerMetricsTableName (default: APP-WorkerMetricStats)")
}

// tables names the application's tables: the side tables after the app
// unless the flags name them.
func (o *statusOptions) tables(lease string) coordination.Tables {
	t := coordination.DefaultTables(lease, o.App)
	if o.CoordinatorStateTable != "" {
		t.CoordinatorState = o.CoordinatorStateTable
	}
	if o.WorkerMetricsTable != "" {
		t.WorkerMetrics = o.WorkerMetricsTable
	}
	return t
}

func blockers(st *inspect.MigrationStatus) int {
	n := 0
	for _, s := range st.Steps {
		n += len(s.Blockers)
	}
	return n
}
