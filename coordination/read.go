package coordination

import (
	"context"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/leasecore"
)

// LockTable is where the leader lock lives: the lease table once the
// table migration is COMPLETE, <app>-CoordinatorState before, PENDING
// included (CoordinatorStateDAO.getDDBLockClient). The key attribute is the
// table's hash key.
func (s State) LockTable(t Tables) (table, keyAttr string) {
	if s.Layout == LayoutLeaseTable || s.CoordinatorStateTable == PresenceAbsent {
		return t.Lease, attrLeaseKey
	}
	return t.CoordinatorState, attrCoordKey
}

// ForReading is the state the readers (ReadLock, ListWorkerMetrics) are
// given by an operator view. Detect calls a table a 2.x one when no
// Migration3.0, tm, index or lock in the lease table shows 3.x; a view
// still reads what is there: side tables that exist as KCL 3.0-3.4's
// layout, and non-lease items in the lease table (nonLeases, from the
// view's own scan) as 3.5's. false: nothing of 3.x to read.
func (s State) ForReading(nonLeases int) (State, bool) {
	if s.Layout == LayoutNone {
		switch {
		case s.SideTables:
			s.Layout = LayoutSideTables
		case nonLeases > 0:
			s.Layout = LayoutLeaseTable
		default:
			return s, false
		}
	}
	return s, true
}

// MetricsTable is where this worker writes its metrics item: the lease
// table (keyed leaseKey, tagged entityType) under PENDING and COMPLETE,
// <app>-WorkerMetricStats (keyed wid) under INIT and DEPLOYED
// (WorkerMetricStatsDAO.getWriteDelegate).
func (s State) MetricsTable(t Tables) (table, keyAttr string) {
	if s.Layout == LayoutPending || s.Layout == LayoutLeaseTable {
		return t.Lease, attrLeaseKey
	}
	return t.WorkerMetrics, attrWorkerID
}

// mergedReads: until COMPLETE the KCL reads both tables, since workers
// rolled back and forth may have written to either (CoordinatorStateDAO,
// WorkerMetricStatsDAO class docs).
func (s State) mergedReads() bool { return s.Layout != LayoutLeaseTable }

// ReadLock reads the leader lock where the state says it is. When it is
// not in the side table, the lease table is read too: the step from
// PENDING to COMPLETE moves it there, and a worker may not have seen the
// step yet.
func ReadLock(ctx context.Context, api ReadAPI, t Tables, st State) (Lock, error) {
	table, keyAttr := st.LockTable(t)
	tries := []struct{ table, keyAttr string }{{table, keyAttr}}
	if table != t.Lease {
		tries = append(tries, struct{ table, keyAttr string }{t.Lease, attrLeaseKey})
	}
	for i, try := range tries {
		item, err := getItem(ctx, api, try.table, try.keyAttr, keyLeaderLock)
		if err != nil {
			if i > 0 && (awserr.NotFound(err) || awserr.AccessDenied(err)) {
				continue // the fallback is best effort
			}
			return Lock{}, err
		}
		if item == nil || (try.table == t.Lease && isLease(item)) {
			continue
		}
		return Lock{
			Found:         true,
			Owner:         strAttr(item, attrOwnerName),
			Version:       strAttr(item, attrRecordVersion),
			LeaseDuration: lockDurationOf(item),
			Table:         try.table,
		}, nil
	}
	return Lock{Table: table}, nil
}

// ListWorkerMetrics reads every worker's metrics item, merged over both
// layouts as the KCL reads them (the newest lut wins per worker). In the
// lease table only items with entityType WORKER_METRIC_STATS count
// (LeaseTableWorkerMetricStatsDAODelegate's filter); in the side table
// every item does, since 3.0 - 3.4 workers write no entityType
// (LegacyTableWorkerMetricStatsDAODelegate). Sorted by worker id.
func ListWorkerMetrics(ctx context.Context, api ReadAPI, t Tables, st State) ([]WorkerMetrics, error) {
	all, err := sideTableWorkerMetrics(ctx, api, t, st)
	if err != nil {
		return nil, err
	}
	items, err := scanAll(ctx, api, &dynamodb.ScanInput{
		TableName:                 aws.String(t.Lease),
		FilterExpression:          aws.String("#et = :et"),
		ExpressionAttributeNames:  map[string]string{"#et": attrEntity},
		ExpressionAttributeValues: map[string]types.AttributeValue{":et": &types.AttributeValueMemberS{Value: EntityWorkerMetrics}},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return nil, err
	}
	for _, item := range items {
		all = append(all, decodeWorkerMetrics(item, attrLeaseKey, t.Lease))
	}
	return newestPerWorker(all), nil
}

// sideTableWorkerMetrics reads <app>-WorkerMetricStats while reads merge
// both layouts (every item counts there: 3.0 - 3.4 workers write no
// entityType). A missing table, or one this caller may not describe and
// may not read, gives none.
func sideTableWorkerMetrics(ctx context.Context, api ReadAPI, t Tables, st State) ([]WorkerMetrics, error) {
	var all []WorkerMetrics
	if !st.mergedReads() || st.WorkerMetricsTable == PresenceAbsent {
		return nil, nil
	}
	items, err := scanAll(ctx, api, &dynamodb.ScanInput{TableName: aws.String(t.WorkerMetrics)})
	switch {
	case awserr.NotFound(err):
	case awserr.AccessDenied(err) && st.WorkerMetricsTable == PresenceUnknown:
	case err != nil:
		return nil, err
	}
	for _, item := range items {
		all = append(all, decodeWorkerMetrics(item, attrWorkerID, t.WorkerMetrics))
	}
	return all, nil
}

// newestPerWorker keeps one item per worker, the one with the newest lut
// (on a tie, the first read: the side table's).
func newestPerWorker(all []WorkerMetrics) []WorkerMetrics {
	by := map[string]int{}
	var out []WorkerMetrics
	for _, m := range all {
		i, ok := by[m.WorkerID]
		if !ok {
			by[m.WorkerID] = len(out)
			out = append(out, m)
			continue
		}
		if m.LastUpdate.After(out[i].LastUpdate) {
			out[i] = m
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].WorkerID < out[j].WorkerID })
	return out
}

func scanAll(ctx context.Context, api leasecore.ScanAPI, in *dynamodb.ScanInput) ([]map[string]types.AttributeValue, error) {
	var out []map[string]types.AttributeValue
	for {
		page, err := api.Scan(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("scan table %q: %w", aws.ToString(in.TableName), err)
		}
		out = append(out, page.Items...)
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}
