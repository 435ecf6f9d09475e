package checkpoint

import (
	"bytes"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/reset"
)

// exportFormats are export's -o formats; json is the default.
var exportFormats = []string{cmdutil.FormatJSON, cmdutil.FormatCSV}

type exportOptions struct {
	cmdutil.AppFlags
	Output string
	File   string
}

func newCheckpointExportCmd(f *cmdutil.Factory) *cobra.Command {
	o := &exportOptions{}
	c := &cobra.Command{
		Use:   "export --app APP [-o json|csv] [--file F]",
		Short: "Save a complete, lossless copy of a lease table",
		Long: `Write every item of the lease table, exactly as DynamoDB holds it, to stdout
or --file: leases, and also KCL 3.x non-lease items (leader lock, migration
state, worker metrics), each marked with its kind; an item KCL could not read
is kept and marked malformed. The read is strongly consistent.

-o json (the default) is one document with one item per line, each item in
DynamoDB JSON. -o csv has the columns leaseKey, checkpoint,
subSequenceNumber, kind and item (the item in DynamoDB JSON), so it is just
as complete, and its first three columns are what checkpoint reset
--from-file reads. checkpoint import restores either form.`,
		Example: `  kcltool checkpoint export --app orders --file orders-before-fix.json
  kcltool checkpoint export --app orders -o csv > orders.csv
  kcltool checkpoint export --app orders | jq '.items[] | select(.kind=="lease") | .checkpoint'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.CheckOutputOf(o.Output, exportFormats...); err != nil {
				return err
			}
			return runCheckpointExport(cmd, f, o)
		},
	}
	o.Register(c)
	cmdutil.AddOutputFlagOf(c, &o.Output, "json or csv", exportFormats...)
	c.Flags().StringVar(&o.File, "file", "", "write to this file (atomically) instead of stdout")
	return c
}

func runCheckpointExport(cmd *cobra.Command, f *cmdutil.Factory, o *exportOptions) error {
	table, ddb, err := o.Open(cmd, f)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	scan := cmdutil.WatchScan(ddb, cmdutil.NewProgress(f), table, 0)
	e, err := reset.ExportTable(ctx, scan, table, f.Clock)
	scan.End()
	if err != nil {
		return cmdutil.ExplainAWS(err, f.AWSContext(table, ""))
	}
	// The export file format is reset's: the printer only picks the form.
	var buf bytes.Buffer
	if err := cmdutil.PrintTo(f.IO, &buf, o.Output).Print(cmdutil.Output{
		Write: map[string]func(io.Writer) error{cmdutil.FormatJSON: e.WriteJSON, cmdutil.FormatCSV: e.WriteCSV},
	}); err != nil {
		return err
	}
	l, n, m := e.Counts()
	if o.File == "" {
		_, err = f.IO.Out.Write(buf.Bytes())
		return err
	}
	if err := cmdutil.WriteFileAtomic(o.File, buf.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "kcltool: exported %d leases, %d non-lease items and %d malformed items of table %q to %s\n", l, n, m, table, o.File)
	return nil
}
