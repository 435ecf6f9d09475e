// Package leases holds `kcltool leases`: ls and owners, read from a KCL
// lease table and rendered as a table, JSON or CSV.
package leases

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/inspect"
)

// NewCmd returns `kcltool leases` and its commands.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:     "leases",
		Short:   "Show who holds which lease",
		GroupID: "operate",
	}
	c.AddCommand(newLeasesLsCmd(f), newLeasesOwnersCmd(f))
	return c
}

type leasesLsOptions struct {
	cmdutil.AppFlags
	Output    string
	Owner     string
	Shard     string
	Sample    time.Duration
	NonLeases bool
	Watch     cmdutil.WatchFlags
}

func newLeasesLsCmd(f *cmdutil.Factory) *cobra.Command {
	o := &leasesLsOptions{}
	c := &cobra.Command{
		Use:     "ls --app APP",
		Aliases: []string{"list"},
		Short:   "List the leases of a KCL application",
		Long: `List every lease in the application's lease table, one row per lease, sorted
by shard. Works on tables written by the Java KCL 2.x and 3.x and by kcltool.

STATE is the first of these that applies:
  shard-end           the shard is fully processed (checkpoint SHARD_END)
  handoff             KCL 3.x graceful handoff in progress (checkpointOwner set)
  waiting-on-parent   a parent shard's lease exists and is not at SHARD_END
  expired             with --sample only: the owner did not renew during the sample
  owned               held by a worker
  unassigned          no owner; the next worker to look takes it

Non-lease items of KCL 3.x (leader lock, migration state, worker metrics) are
skipped and counted; --non-leases lists them instead. A malformed item is
reported on stderr and skipped; it never aborts the listing.

With --watch (-w) the listing is followed by one line per change, read every
--interval, until Ctrl-C (docs/watch.md).`,
		Example: `  kcltool leases ls --app orders
  kcltool leases ls --app orders --owner worker-a -o wide
  kcltool leases ls --app orders --sample 10s      # tell expired leases apart
  kcltool leases ls --app orders -o json | jq '.[] | select(.state=="unassigned")'
  kcltool leases ls --app orders -w                # then one line per change`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.CheckOutput(o.Output); err != nil {
				return err
			}
			if o.Sample < 0 {
				return cmdutil.UsageErrorf("--sample must be positive")
			}
			if err := checkWatch(cmd, o.Watch, o.Sample > 0, o.NonLeases); err != nil {
				return err
			}
			return runLeasesLs(cmd, f, o)
		},
	}
	o.Register(c)
	cmdutil.AddOutputFlag(c, &o.Output)
	cmdutil.AddTableFlags(c, f.IO, append(append([]string{}, leaseColumns...), leaseWideColumns...)...)
	c.Flags().StringVar(&o.Owner, "owner", "", "only leases held by this worker")
	c.Flags().StringVar(&o.Shard, "shard", "", "only this shard id (or lease key)")
	c.Flags().DurationVar(&o.Sample, "sample", 0, "read the table twice this far apart to find expired leases (10s, the KCL failover time, when given without a value)")
	c.Flags().Lookup("sample").NoOptDefVal = "10s"
	c.Flags().BoolVar(&o.NonLeases, "non-leases", false, "list the non-lease items (KCL 3.x leader lock, migration state, worker metrics) instead")
	o.Watch.Register(c)
	return c
}

func runLeasesLs(cmd *cobra.Command, f *cmdutil.Factory, o *leasesLsOptions) error {
	table, ddb, err := o.Open(cmd, f)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if o.Sample > 0 {
		fmt.Fprintf(f.IO.ErrOut, "kcltool: sampling lease table %q for %s...\n", table, o.Sample)
	}
	// A large table takes a while to read: say so, from the second page or
	// after a second (not counting the sample's wait); a small one shows
	// nothing.
	started := f.Clock.Now()
	scan := cmdutil.WatchScan(ddb, cmdutil.NewProgress(f), table, time.Second+o.Sample)
	listing, err := inspect.ListLeases(ctx, scan, table, inspect.ListOptions{
		Owner: o.Owner, Shard: o.Shard, Sample: o.Sample, Clock: f.Clock,
	})
	scan.End()
	if err != nil {
		return cmdutil.ExplainAWS(err, f.AWSContext(table, ""))
	}
	for _, m := range listing.Malformed {
		fmt.Fprintf(f.IO.ErrOut, "kcltool: warning: skipped malformed item: %v\n", m)
	}
	if o.NonLeases {
		return renderNonLeases(f.IO, o.Output, listing)
	}
	if o.Watch.Watch {
		return watchLeases(ctx, f, o, table, ddb, listing, started)
	}
	return renderLeases(f.IO, o.Output, listing)
}
