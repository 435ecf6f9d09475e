package checkpoint

import (
	"context"
	"strings"
	"time"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/inspect/watch"
)

// checkLagWatch refuses --watch with --fail-on or --max-behind: a check's
// answer is the exit code, and a watch ends only by Ctrl-C (130), so the
// answer could never be given. CI runs the check once; a person watches.
func checkLagWatch(w cmdutil.WatchFlags, failOn []string, maxBehind time.Duration) error {
	if err := w.Check(); err != nil || !w.Watch {
		return err
	}
	if len(failOn) > 0 || maxBehind > 0 {
		return cmdutil.UsageErrorf("--watch cannot go with --fail-on or --max-behind: a watch ends only by Ctrl-C, so it has no exit code to fail with; run the check without --watch")
	}
	return nil
}

// lagWatchRows are a `lag` read as watch rows, keyed streamName/shardId
// (a shard keeps its key when its lease appears or goes), named by shard
// id in a single-stream table.
func lagWatchRows(l *inspect.Lag) []watch.Row {
	multi := multiStream(l)
	out := make([]watch.Row, 0, len(l.Rows))
	for _, r := range l.Rows {
		j := toLagJSON(r)
		row := watch.Row{Key: r.Stream + "/" + r.ShardID, Object: j, Fields: []watch.Field{
			cmdutil.WatchField("leaseOwner", j.LeaseOwner),
			cmdutil.WatchField("checkpoint", j.Checkpoint),
			cmdutil.WatchField("shardStatus", j.ShardStatus),
			cmdutil.WatchField("millisBehindLatest", j.MillisBehindLatest),
			cmdutil.WatchField("state", j.State),
			cmdutil.WatchField("blockedBy", j.BlockedBy),
		}}
		if !multi {
			row.Label = r.ShardID
		}
		out = append(out, row)
	}
	return out
}

// lagCSVRecord is a row's LagCSVColumns record, as renderLag writes it.
func lagCSVRecord(obj any) []string {
	j := obj.(LagJSON)
	status := cmdutil.Deref(j.ShardStatus)
	return []string{string(j.StreamName), j.ShardID, cmdutil.Deref(j.LeaseKey), cmdutil.Deref(j.LeaseOwner), cmdutil.Deref(j.Checkpoint),
		status, millis(j.MillisBehindLatest), j.State, strings.Join(j.BlockedBy, ";")}
}

// watchLag prints the first read as `lag` does (as ADDED events in json
// and csv), then what changes (docs/watch.md). Each read probes every open
// shard once, as the one-shot command does.
func watchLag(ctx context.Context, f *cmdutil.Factory, o *checkpointDiffOptions, table string, read func(ctx context.Context) (*inspect.Lag, error), first *inspect.Lag, firstAt time.Time) error {
	if o.Output == cmdutil.FormatTable || o.Output == cmdutil.FormatWide {
		if err := renderLag(f.IO, o.Output, first); err != nil {
			return err
		}
	}
	return cmdutil.RunWatch(ctx, f, cmdutil.WatchSpec{
		Flags: o.Watch, Format: o.Output, What: "lease table \"" + table + "\" and its stream",
		First: lagWatchRows(first), FirstAt: firstAt,
		Read: func(ctx context.Context) ([]watch.Row, error) {
			l, err := read(ctx)
			if err != nil {
				return nil, err
			}
			return lagWatchRows(l), nil
		},
		CSV: LagCSVColumns, CSVRecord: lagCSVRecord,
		Explain: func(err error) error { return cmdutil.ExplainAWS(err, f.AWSContext(table, o.Stream)) },
	})
}
