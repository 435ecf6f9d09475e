package coordination

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/awserr"
)

// Remove stops the reporter for good and deletes this worker's metrics
// item from the table it last wrote to (Table), at a graceful stop.
//
// The Java worker does not do this: at shutdown it only stops its
// reporter (WorkerMetricStatsReporter), and the leader deletes the item
// once it is stale (MigrationAwareLAMDataManager.
// deleteStaleWorkerMetricsAsync). Until then, up to two reporter periods
// (60 s at the defaults), the leader counts the stopped worker as active
// and assigns leases to it, the ones it has just evicted included. kcltool
// deletes the item at once, before it evicts its leases, so that the
// leader's next run no longer counts it.
//
// When SetState moved the reporter from one table to the other, an item
// may be left in the table written before: it is at least one period old
// and no longer refreshed, so the leader expires it as stale within two
// periods of its last write, as after a Java worker's move; only the item
// written last holds the worker in the leader's list now.
//
// The deletion is conditioned so that it can never delete anything else:
// in the lease table, a worker-metrics item (entityType); in the side
// table, an item that exists under this worker's wid. A failed condition
// or a missing item leaves nothing to delete and is no error.
func (r *Reporter) Remove(ctx context.Context) error {
	r.mu.Lock()
	r.removed = true
	r.mu.Unlock()
	if err := r.Stop(ctx); err != nil {
		return err
	}
	table := r.Table()
	if table == "" {
		return nil // nothing written
	}
	return r.deleteItem(ctx, table)
}

func (r *Reporter) isRemoved() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removed
}

// deleteItem deletes this worker's item from table, conditionally.
func (r *Reporter) deleteItem(ctx context.Context, table string) error {
	in := &dynamodb.DeleteItemInput{TableName: aws.String(table)}
	if table == r.tables.Lease {
		in.Key = map[string]types.AttributeValue{attrLeaseKey: &types.AttributeValueMemberS{Value: r.worker}}
		in.ConditionExpression = aws.String("#et = :et")
		in.ExpressionAttributeNames = map[string]string{"#et": attrEntity}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":et": &types.AttributeValueMemberS{Value: EntityWorkerMetrics}}
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	} else {
		in.Key = map[string]types.AttributeValue{attrWorkerID: &types.AttributeValueMemberS{Value: r.worker}}
		in.ConditionExpression = aws.String("attribute_exists(#k)")
		in.ExpressionAttributeNames = map[string]string{"#k": attrWorkerID}
	}
	_, err := r.api.DeleteItem(ctx, in)
	if err == nil || awserr.ConditionFailed(err) {
		return nil
	}
	return fmt.Errorf("delete worker metrics of %q from table %q: %w", r.worker, table, err)
}
