package leases

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/inspect/watch"
)

// ownerWatchRows are a `leases owners` read as watch rows, one per worker.
// Watched: its lease count, its shards and the leadership; not the fair
// share (the same in every row: a worker coming or going says it), nor
// the KCL 3.x throughput and metrics, which move on every update.
func ownerWatchRows(o *inspect.Owners) []watch.Row {
	rows := ownersJSON(o, false)
	out := make([]watch.Row, 0, len(rows))
	for _, j := range rows {
		out = append(out, watch.Row{Key: j.Worker, Object: j, Fields: []watch.Field{
			cmdutil.WatchField("leases", j.Leases),
			cmdutil.WatchField("shards", j.Shards),
			cmdutil.WatchField("leader", j.Leader),
		}})
	}
	return out
}

// readOwners is one read of `leases owners` without --sample. The KCL 3.x
// state is best effort, as in the one-shot command: without it the leader
// is not known.
func readOwners(ctx context.Context, ddb *dynamodb.Client, table, app string, f *cmdutil.Factory) (*inspect.Owners, error) {
	listing, err := inspect.ListLeases(ctx, ddb, table, inspect.ListOptions{Clock: f.Clock})
	if err != nil {
		return nil, err
	}
	mode, k3, _ := inspect.ReadKCL3State(ctx, ddb, coordination.DefaultTables(table, app), len(listing.NonLeases))
	return inspect.OwnersOf(listing).WithKCL3(k3).WithMode(mode), nil
}

// watchOwners prints the first read as `leases owners` does (as ADDED
// events in json and csv), then what changes (docs/watch.md).
func watchOwners(ctx context.Context, f *cmdutil.Factory, o *leasesOwnersOptions, table string, ddb *dynamodb.Client, first *inspect.Owners, firstAt time.Time) error {
	if o.Output == cmdutil.FormatTable || o.Output == cmdutil.FormatWide {
		if err := renderOwners(f, o.Output, first, false); err != nil {
			return err
		}
	}
	return cmdutil.RunWatch(ctx, f, cmdutil.WatchSpec{
		Flags: o.Watch, Format: o.Output, What: "lease table \"" + table + "\"",
		First: ownerWatchRows(first), FirstAt: firstAt,
		Read: func(ctx context.Context) ([]watch.Row, error) {
			ow, err := readOwners(ctx, ddb, table, o.App, f)
			if err != nil {
				return nil, err
			}
			return ownerWatchRows(ow), nil
		},
		CSV: OwnersCSVColumns,
		CSVRecord: func(obj any) []string {
			r := obj.(OwnerJSON)
			return []string{r.Worker, strconv.Itoa(r.Leases), strconv.Itoa(r.FairShare), strings.Join(r.Shards, ";"), kbps(r.ThroughputKBps)}
		},
		Explain: func(err error) error { return cmdutil.ExplainAWS(err, f.AWSContext(table, "")) },
	})
}
