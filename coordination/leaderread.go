package coordination

import (
	"context"

	"github.com/kcltool/kcltool/leasecore"
)

// WorkerMetricsFromScan is what the KCL 3.5 leader reads of the workers'
// metrics in one assignment run (MigrationAwareLAMDataManager.loadData):
// the WORKER_METRIC_STATS items its own full scan of the lease table found
// (DynamoDBLeaseTableDao.scanEntities reads leases and metrics in the same
// scan), plus, until the table migration is COMPLETE, every item of the
// side table <app>-WorkerMetricStats. nonLeases are that scan's non-lease
// items. Newest lut per worker, sorted by worker id, as ListWorkerMetrics.
// Unlike ListWorkerMetrics it does not scan the lease table a second time.
func WorkerMetricsFromScan(ctx context.Context, api ReadAPI, t Tables, st State, nonLeases []leasecore.NonLeaseItem) ([]WorkerMetrics, error) {
	all, err := sideTableWorkerMetrics(ctx, api, t, st)
	if err != nil {
		return nil, err
	}
	for _, n := range nonLeases {
		if n.EntityType == EntityWorkerMetrics && n.Item != nil {
			all = append(all, decodeWorkerMetrics(n.Item, attrLeaseKey, t.Lease))
		}
	}
	return newestPerWorker(all), nil
}
