// Package shards holds `kcltool shards`: the lineage of a stream's shards
// with their leases (also reachable as `kcltool lineage`).
package shards

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/inspect"
)

// NewCmd returns `kcltool shards` and its commands.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:     "shards",
		Short:   "Show a stream's shards and their parent/child lineage",
		GroupID: "operate",
	}
	c.AddCommand(NewLineageCmd(f, "lineage"))
	return c
}

type shardsLineageOptions struct {
	cmdutil.AppFlags
	Stream string
	Output string
}

// lineageFormats are lineage's -o formats: a read command's and dot.
var lineageFormats = append(append([]string{}, cmdutil.ReadFormats...), cmdutil.FormatDot)

// NewLineageCmd returns `shards lineage` named use: the root also files
// it as the top-level `lineage`.
func NewLineageCmd(f *cmdutil.Factory, use string) *cobra.Command {
	o := &shardsLineageOptions{}
	c := &cobra.Command{
		Use:   use + " --stream STREAM [--app APP]",
		Short: "Print the stream's parent→child shard tree, with lease states when --app is given",
		Long: `Print the shards of a stream as a tree of splits and merges, one shard a
line: SHARD (the tree drawing and the shard id), SHARE of the hash key space
and STATUS (open or closed). A merge child appears under both of its parents;
ALSO-UNDER names the other parent.

With --app, each shard also shows its lease: OWNER, CHECKPOINT, STATE (as in
leases ls) and WAITING-ON, the parents an idle child waits for because their
checkpoint is not SHARD_END. A shard without a lease shows "-" there. Leases
of shards the stream no longer has are listed after the tree with STATE
orphan-lease.

No cell contains a space and an empty one is "-", so awk counts the same
columns on every line: the tree drawing is made of no-break spaces.
-o wide adds HASH-RANGE and, with --app, SUBSEQ and LEASE-KEY.

-o dot prints a Graphviz digraph: kcltool lineage --stream S -o dot | dot -Tpng > lineage.png`,
		Example: `  kcltool shards lineage --stream orders
  kcltool lineage --stream orders --app orders
  kcltool lineage --stream orders --app orders | awk '$6 == "waiting-on-parent" {print $7}'
  kcltool lineage --stream orders --app orders -o dot | dot -Tsvg > lineage.svg`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.CheckOutputOf(o.Output, lineageFormats...); err != nil {
				return err
			}
			if err := cmdutil.RequireFlag("stream", o.Stream); err != nil {
				return err
			}
			return runShardsLineage(cmd, f, o)
		},
	}
	o.Register(c)
	cmdutil.AddOutputFlagOf(c, &o.Output, "output format: table, wide, json, csv or dot", lineageFormats...)
	cmdutil.AddTableFlags(c, f.IO, "SHARD", "SHARE", "STATUS", "OWNER", "CHECKPOINT", "STATE", "WAITING-ON", "ALSO-UNDER", "HASH-RANGE", "SUBSEQ", "LEASE-KEY")
	c.Flags().StringVar(&o.Stream, "stream", "", "stream name")
	return c
}

func runShardsLineage(cmd *cobra.Command, f *cmdutil.Factory, o *shardsLineageOptions) error {
	table := o.Table
	if table == "" {
		table = o.App
	}
	ctx := cmd.Context()
	kin, err := f.Kinesis(ctx)
	if err != nil {
		return err
	}
	ddb, err := f.DynamoDB(ctx)
	if err != nil {
		return err
	}
	lin, err := inspect.ShardLineage(ctx, kin, ddb, o.Stream, table, cmdutil.RetryFor(f))
	if err != nil {
		return cmdutil.ExplainAWS(err, f.AWSContext(table, o.Stream))
	}
	for _, m := range lin.Malformed {
		fmt.Fprintf(f.IO.ErrOut, "kcltool: warning: skipped malformed item: %v\n", m)
	}
	return renderLineage(f.IO, o.Output, lin)
}
