package checkpoint

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reset"
)

type importOptions struct {
	cmdutil.AppFlags
	applyFlags
	File        string
	ToApp       string
	ToTable     string
	Shards      []string
	Prune       bool
	SkipInvalid bool
	CreateTable bool
	KCLVersion  int
}

func newCheckpointImportCmd(f *cmdutil.Factory) *cobra.Command {
	o := &importOptions{}
	c := &cobra.Command{
		Use:   "import --app APP --file F [--to-app OTHER] [--execute]",
		Short: "Restore checkpoints from an export: plan first, apply with --execute",
		Long: `Restore the leases of an export (checkpoint export, or the backup a reset
saved, a file or an s3://bucket/key) into the application's table: a lease that differs gets every
attribute back except leaseCounter, which only ever increases (the write
sets it to the current value + 1); a missing lease is created; an equal one is
left alone. Leases the export does not have are kept, or deleted with
--prune (which undoes a reset that recreated parent leases); --prune never
deletes a lease whose key the file names, usable or not. --shard limits the
import to those leases, as the undo a reset prints does; with --prune, a
--shard that neither the export nor the table has (a recreated lease since
finished and deleted) is a warning rather than an error. Items the export
recorded as non-lease (KCL 3.x) or malformed are carried as they are and
never written.

A file with any entry that cannot be used (its item does not parse, is
marked a lease but KCL could not read it, repeats a key, or disagrees with
its own checkpoint column) is refused whole: exit 2, nothing written, every
bad entry named with its line and item number. --skip-invalid applies the
rest and exits 3, naming the skipped ones.

A write whose answer was lost (a timeout, a reset connection, a 5xx, or the
SDK's retry of a write that had applied) is read back before it is
reported: "applied" with confirmedBy "read-back" when the lease is as
written.

--to-app OTHER copies the positions into another application's table
instead, for example to start a second consumer where the first one is:
existing leases get the exported checkpoint, missing ones are created
without an owner. A table that does not exist is reported; with
--create-table the dry run plans against an empty table and --execute
creates it first, the same table kcltool run --create-table creates (on
demand, a single hash key leaseKey; by default for KCL 3.x, with the
LeaseOwnerToLeaseKeyIndex and the Migration3.0 item, --kcl-version 2 for
KCL 2.x), then writes.

The safety of checkpoint reset applies: a dry run by default, and with
--execute a check that the application is stopped (--sample), a backup of
the table written to, and writes conditioned on each lease being as
planned; --force applies to a running application (the restored leases
then get no owner, so their holders lose them).`,
		Example: `  kcltool checkpoint import --app orders --file kcltool-reset-orders-20261101T100000.000Z.backup.json
  kcltool checkpoint import --app orders --file s3://team-backups/kcltool/kcltool-reset-orders-20261101T100000.000Z.backup.json
  kcltool checkpoint import --app orders --file orders-before-fix.json --prune --execute
  kcltool checkpoint import --app orders --file orders.json --to-app orders-replay --execute
  kcltool checkpoint import --app orders --file orders.json --to-app orders-new --create-table --execute`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.RequireFlag("file", o.File); err != nil {
				return err
			}
			if err := o.applyFlags.check(); err != nil {
				return err
			}
			if o.KCLVersion != 2 && o.KCLVersion != 3 {
				return cmdutil.UsageErrorf("--kcl-version must be 2 or 3, not %d", o.KCLVersion)
			}
			return runCheckpointImport(cmd, f, o)
		},
	}
	o.AppFlags.Register(c)
	o.applyFlags.register(c)
	fl := c.Flags()
	fl.StringVar(&o.File, "file", "", "the export to restore (JSON or CSV): a file, or s3://bucket/key")
	fl.StringVar(&o.ToApp, "to-app", "", "copy the positions into this application's lease table instead")
	fl.StringVar(&o.ToTable, "to-table", "", "with --to-app: its lease table, when it set tableName")
	fl.StringSliceVar(&o.Shards, "shard", nil, "only these shards (ids or lease keys, comma-separated)")
	fl.BoolVar(&o.Prune, "prune", false, "delete leases that are not in the export (never one whose key the file names)")
	fl.BoolVar(&o.SkipInvalid, "skip-invalid", false, "apply the usable entries of a file with some that cannot be used, and exit 3 naming them (without it, such a file is refused whole)")
	fl.BoolVar(&o.CreateTable, "create-table", false, "with --execute: create a missing lease table the way run does (on demand, hash key leaseKey; see --kcl-version)")
	fl.IntVar(&o.KCLVersion, "kcl-version", 3, "with --create-table, the KCL the new table is made for, as run --kcl-version: 3 (the LeaseOwnerToLeaseKeyIndex and the Migration3.0 item at CLIENT_VERSION_3X) or 2")
	return c
}

func runCheckpointImport(cmd *cobra.Command, f *cmdutil.Factory, o *importOptions) error {
	table, err := o.TableName()
	if err != nil {
		return err
	}
	data, err := readBackupFile(cmd.Context(), f, o.File)
	if err != nil {
		return err
	}
	e, err := reset.ReadExport(data)
	if err != nil {
		return cmdutil.UsageErrorf("--file %s: %v", o.File, err)
	}
	if e.Table != "" && e.Table != table {
		return cmdutil.UsageErrorf("%s is an export of table %q, not %q: pass --app or --table of the exported application (and --to-app to copy into another one)", o.File, e.Table, table)
	}
	dest, destFlags := table, o.AppFlags
	if o.ToApp != "" || o.ToTable != "" {
		destFlags = cmdutil.AppFlags{App: o.ToApp, Table: o.ToTable}
		if dest, err = destFlags.TableName(); err != nil {
			return cmdutil.UsageErrorf("--to-table needs --to-app")
		}
	}
	ctx := cmd.Context()
	ddb, err := f.DynamoDB(ctx)
	if err != nil {
		return err
	}
	noTable := false
	if o.CreateTable {
		if noTable, err = ensureImportTable(cmd, f, dest, o.Execute, o.KCLVersion); err != nil {
			return err
		}
	}
	scan := cmdutil.WatchScan(ddb, cmdutil.NewProgress(f), dest, time.Second)
	plan, err := reset.PlanImport(ctx, cmdutil.WatchedTable{TableAPI: ddb, Progress: scan}, reset.ImportOptions{
		Table: dest, Export: e, File: o.File, Shards: o.Shards, PositionsOnly: dest != table, Prune: o.Prune, SkipInvalid: o.SkipInvalid,
		NoTable: noTable, Clock: f.Clock,
	})
	scan.End()
	if tableNotFound(err) {
		return importTableMissing(f, dest, destFlags, destFlags != o.AppFlags)
	}
	if err != nil {
		return PlanError(err, f.AWSContext(dest, ""))
	}
	if noTable {
		fmt.Fprintf(f.IO.ErrOut, "kcltool: lease table %q does not exist in %s: --execute creates it (--create-table) before writing\n", dest, f.AWSContext(dest, "").Region)
	}
	return finishPlan(cmd, f, plan, &o.applyFlags, destFlags)
}

// ensureImportTable renders reset.PrepareImportTable for --create-table:
// a missing table is created with --execute and only reported in a dry
// run, which writes nothing. missing says the dry run is to plan against
// an empty table. The table is run's (coordination.EnsureLeaseTable) for
// kclVersion, with the items a KCL 3.5 worker under its default
// clientVersionConfig writes; ModifiedBy names this command, the writer.
func ensureImportTable(cmd *cobra.Command, f *cmdutil.Factory, table string, execute bool, kclVersion int) (missing bool, err error) {
	ctx := cmd.Context()
	ddb, err := f.DynamoDB(ctx)
	if err != nil {
		return false, err
	}
	app := coordination.NewApplication{}
	if kclVersion == 3 {
		app = coordination.NewKCL3Application(importWriter)
	}
	create := func(ctx context.Context) error {
		_, err := coordination.EnsureLeaseTable(ctx, ddb, coordination.Tables{Lease: table}, true, app, f.Clock)
		return err
	}
	got, err := reset.PrepareImportTable(ctx, ddb, table, execute, create)
	if err != nil {
		return false, cmdutil.ExplainAWS(err, f.AWSContext(table, ""))
	}
	if got == reset.ImportTableCreated {
		what := "on demand, hash key leaseKey: KCL 2.x"
		if app.Index {
			what = "on demand, hash key leaseKey, index " + leasecore.KCL3IndexName + ", " + app.ClientVersion + ": KCL 3.x, leases given by a leader"
		}
		fmt.Fprintf(f.IO.ErrOut, "kcltool: created lease table %q in %s (%s)\n", table, f.AWSContext(table, "").Region, what)
	}
	return got == reset.ImportTableMissing, nil
}

// importWriter is the mb (modified by) of the Migration3.0 item a created
// table gets: the KCL writes its worker identifier there.
const importWriter = "kcltool checkpoint import"

// importTableMissing explains a destination table that does not exist:
// which one, where, and the flag that creates it.
func importTableMissing(f *cmdutil.Factory, table string, dest cmdutil.AppFlags, other bool) error {
	appFlag, tableFlag := "--app", "--table"
	if other {
		appFlag, tableFlag = "--to-app", "--to-table"
	}
	by := appFlag + " " + dest.App
	if dest.Table != "" {
		by = tableFlag + " " + dest.Table
	}
	region := f.AWSContext(table, "").Region
	return &cmdutil.HintError{
		Err: fmt.Errorf("lease table %q (%s) not found in %s", table, by, region),
		Hints: []string{
			"add --create-table to create it the way kcltool run --create-table does (for KCL 3.x unless --kcl-version 2): the dry run shows the leases it would write, --execute creates the table and writes them",
			fmt.Sprintf("or check the name (%s when the application set tableName) and --region", tableFlag),
		},
	}
}

// tableNotFound reports a DynamoDB ResourceNotFoundException: the table does
// not exist (in this region and account).
func tableNotFound(err error) bool { return awserr.NotFound(err) }
