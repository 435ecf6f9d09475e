package doctor

import (
	"context"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/leasecore"
)

// Follower is doctor fed by another view's reads (kcltool top): the view
// scans the lease table and joins it with the stream on its own schedule,
// and each Observe turns its last window of those reads into a full
// report, every check included. A view that shows doctor's findings thus
// costs the table one Scan per refresh, not a second reader's.
type Follower struct {
	d       *Doctor
	scan    *fromScan
	samples []sample
}

// Follow returns a Follower. The Doctor is the Follower's from then on:
// do not Run or Watch it too.
func (d *Doctor) Follow() *Follower {
	d.watching, d.following = true, true
	fs := &fromScan{ReadAPI: d.coordAPI, table: d.opt.Table}
	d.coordAPI = fs
	return &Follower{d: d, scan: fs}
}

// Segments is how many parallel segments a full Scan of the lease table
// takes, as the KCL chooses them from the size New read.
func (d *Doctor) Segments() int { return d.segments }

// Observe adds one full read of the lease table, scanned from at, and the
// stream join the caller made of that read (nil: doctor probes the stream
// itself, once a window). It reports on the reads of the last Window: the
// newest read at or before the window's start is kept, so the reads
// always span the window once they can. Partial marks a report whose
// reads span less than the window (the first ones after the start).
//
// Report.Cost is what doctor read beyond the caller's scan and join: the
// KCL 3.x lock and metrics where they are not in the scan, the few probes
// the lag join leaves to doctor, the streams' consumers and CloudWatch
// (once a minute, its resolution).
func (f *Follower) Observe(ctx context.Context, at time.Time, scan leasecore.ScanResult, lag *inspect.Lag) (*Report, error) {
	d := f.d
	s := sampleOf(at, scan)
	f.scan.answer(s)
	d.readLock(ctx, &s)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.samples = append(f.samples, s)
	start := at.Add(-d.opt.Window)
	for len(f.samples) > 2 && !f.samples[1].at.After(start) {
		f.samples = f.samples[1:]
	}
	var given *inspect.Lag
	if lag != nil {
		// doctor probes a few rows further (stream.go); the caller's rows
		// stay as it read them.
		cp := *lag
		cp.Rows = slices.Clone(lag.Rows)
		given = &cp
	}
	rep, err := d.diagnoseWith(ctx, f.samples, given)
	if err != nil {
		return nil, err
	}
	rep.Partial = f.samples[len(f.samples)-1].at.Sub(f.samples[0].at) < d.opt.Window
	return rep, nil
}

// fromScan answers the coordination readers' GetItem on the lease table
// from the caller's last scan: the items Detect and ReadLock ask for there
// (Migration3.0, TableMigration3.5, the leader lock) are non-lease items,
// and the scan read every item of the table. Asking again would cost the
// table a strongly consistent read each, at every refresh. Requests to
// other tables, and every other request, go to the metered client.
type fromScan struct {
	coordination.ReadAPI
	table string
	items map[string]map[string]types.AttributeValue // non-lease items by key
}

func (f *fromScan) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if aws.ToString(in.TableName) != f.table {
		return f.ReadAPI.GetItem(ctx, in, opts...)
	}
	key, _ := in.Key[leasecore.AttrLeaseKey].(*types.AttributeValueMemberS)
	if key == nil {
		return f.ReadAPI.GetItem(ctx, in, opts...)
	}
	return &dynamodb.GetItemOutput{Item: f.items[key.Value]}, nil
}

// answer makes the scan s the one fromScan answers from.
func (f *fromScan) answer(s sample) {
	f.items = make(map[string]map[string]types.AttributeValue, len(s.nonLeases))
	for _, n := range s.nonLeases {
		f.items[n.Key] = n.Item
	}
}
