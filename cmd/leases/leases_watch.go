package leases

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/spf13/cobra"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/inspect/watch"
)

// checkWatch refuses what a watch cannot do: --sample already reads twice
// and its renewal counts would change on every read; --non-leases items do
// not change in ways worth a line.
func checkWatch(cmd *cobra.Command, w cmdutil.WatchFlags, sampled, nonLeases bool) error {
	if err := w.Check(); err != nil || !w.Watch {
		return err
	}
	if sampled {
		return cmdutil.UsageErrorf("--watch and %s cannot go together: a watch shows owners moving from read to read; use one or the other", cmdutil.FlagRef(cmd, "sample"))
	}
	if nonLeases {
		return cmdutil.UsageErrorf("--watch and --non-leases cannot go together")
	}
	return nil
}

// leaseWatchRows are a `leases ls` read as watch rows: keyed by lease key,
// named by shard id in a single-stream table. leaseCounter is not watched:
// every renewal moves it, so a healthy fleet would print every lease every
// read; ownerSwitchesSinceCheckpoint moves with leaseOwner.
func leaseWatchRows(rows []inspect.LeaseRow) []watch.Row {
	out := make([]watch.Row, 0, len(rows))
	for i := range rows {
		j := leaseRow(&rows[i])
		r := watch.Row{Key: j.LeaseKey, Object: j, Fields: []watch.Field{
			cmdutil.WatchField("leaseOwner", j.LeaseOwner),
			cmdutil.WatchField("checkpoint", j.Checkpoint),
			cmdutil.WatchField("checkpointSubSequenceNumber", j.CheckpointSubSequenceNumber),
			cmdutil.WatchField("pendingCheckpoint", j.PendingCheckpoint),
			cmdutil.WatchField("checkpointOwner", j.CheckpointOwner),
			cmdutil.WatchField("state", j.State),
			cmdutil.WatchField("blockedBy", j.BlockedBy),
		}}
		if j.StreamName == nil {
			r.Label = j.ShardID
		}
		out = append(out, r)
	}
	return out
}

// watchLeases prints the first read as `leases ls` does (as ADDED events
// in json and csv), then what changes (docs/watch.md).
func watchLeases(ctx context.Context, f *cmdutil.Factory, o *leasesLsOptions, table string, ddb *dynamodb.Client, first *inspect.Listing, firstAt time.Time) error {
	if o.Output == cmdutil.FormatTable || o.Output == cmdutil.FormatWide {
		if err := renderLeases(f.IO, o.Output, first); err != nil {
			return err
		}
	}
	return cmdutil.RunWatch(ctx, f, cmdutil.WatchSpec{
		Flags: o.Watch, Format: o.Output, What: "lease table \"" + table + "\"",
		First: leaseWatchRows(first.Leases), FirstAt: firstAt,
		Read: func(ctx context.Context) ([]watch.Row, error) {
			l, err := inspect.ListLeases(ctx, ddb, table, inspect.ListOptions{Owner: o.Owner, Shard: o.Shard, Clock: f.Clock})
			if err != nil {
				return nil, err
			}
			return leaseWatchRows(l.Leases), nil
		},
		CSV: LeaseCSVColumns,
		CSVRecord: func(obj any) []string {
			j := obj.(LeaseJSON)
			return j.csvRecord(nil)
		},
		Explain: func(err error) error { return cmdutil.ExplainAWS(err, f.AWSContext(table, "")) },
	})
}
