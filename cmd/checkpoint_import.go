package cmd

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/kcltool/kcltool/reset"
)

type importOptions struct {
	appFlags
	applyFlags
	File    string
	ToApp   string
	ToTable string
	Shards  []string
	Prune   bool
}

func newCheckpointImportCmd(f *Factory) *cobra.Command {
	o := &importOptions{}
	c := &cobra.Command{
		Use:   "import --app APP --file F [--to-app OTHER] [--execute]",
		Short: "Restore checkpoints from an export: plan first, apply with --execute",
		Long: `Restore the leases of an export (checkpoint export, or the backup a reset
saved) into the application's table: a lease that differs gets every
attribute back except leaseCounter, which only ever increases (the write
sets it to the current value + 1); a missing lease is created; an equal one is
left alone. Leases the export does not have are kept, or deleted with
--prune (which undoes a reset that recreated parent leases). Non-lease items
of KCL 3.x and malformed items are never written.

--to-app OTHER copies the positions into another application's table
instead, for example to start a second consumer where the first one is:
existing leases get the exported checkpoint, missing ones are created
without an owner.

The safety of checkpoint reset applies: a dry run by default, and with
--execute a check that the application is stopped (--sample), a backup of
the table written to, and writes conditioned on each lease being as
planned; --force applies to a running application (the restored leases
then get no owner, so their holders lose them).`,
		Example: `  kcltool checkpoint import --app orders --file kcltool-reset-orders-20261101T100000.000Z.backup.json
  kcltool checkpoint import --app orders --file orders-before-fix.json --prune --execute
  kcltool checkpoint import --app orders --file orders.json --to-app orders-replay --execute`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlag("file", o.File); err != nil {
				return err
			}
			if err := o.applyFlags.check(); err != nil {
				return err
			}
			return runCheckpointImport(cmd, f, o)
		},
	}
	o.appFlags.register(c)
	o.applyFlags.register(c)
	fl := c.Flags()
	fl.StringVar(&o.File, "file", "", "the export to restore (JSON or CSV)")
	fl.StringVar(&o.ToApp, "to-app", "", "copy the positions into this application's lease table instead")
	fl.StringVar(&o.ToTable, "to-table", "", "with --to-app: its lease table, when it set tableName")
	fl.StringSliceVar(&o.Shards, "shard", nil, "only these shards (ids or lease keys, comma-separated)")
	fl.BoolVar(&o.Prune, "prune", false, "delete leases that are not in the export")
	return c
}

func runCheckpointImport(cmd *cobra.Command, f *Factory, o *importOptions) error {
	table, err := o.table()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(o.File)
	if err != nil {
		return usageErrorf("--file: %v", err)
	}
	e, err := reset.ReadExport(data)
	if err != nil {
		return usageErrorf("--file %s: %v", o.File, err)
	}
	if e.Table != "" && e.Table != table {
		return usageErrorf("%s is an export of table %q, not %q: pass --app or --table of the exported application (and --to-app to copy into another one)", o.File, e.Table, table)
	}
	dest, undo := table, undoCommand(o.appFlags)
	if o.ToApp != "" || o.ToTable != "" {
		to := appFlags{App: o.ToApp, Table: o.ToTable}
		if dest, err = to.table(); err != nil {
			return usageErrorf("--to-table needs --to-app")
		}
		undo = undoCommand(to)
	}
	ctx := cmd.Context()
	ddb, err := f.DynamoDB(ctx)
	if err != nil {
		return err
	}
	plan, err := reset.PlanImport(ctx, ddb, reset.ImportOptions{
		Table: dest, Export: e, File: o.File, Shards: o.Shards, PositionsOnly: dest != table, Prune: o.Prune, Clock: f.Clock,
	})
	if err != nil {
		return planError(err, f.awsContext(dest, ""))
	}
	return finishPlan(cmd, f, plan, &o.applyFlags, undo)
}
