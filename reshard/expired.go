package reshard

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/leasecore"
)

// Attributes kcltool run writes when it finishes a shard whose data expired
// before it was read to its end (Kinesis answers ResourceNotFound for it).
// The KCL ignores attributes it does not know and keeps them through its own
// updates (all UpdateItem), so they are safe in a shared table; doctor reads
// them to report the data loss.
const (
	// AttrExpired on the finished parent: "<RFC 3339 time> <error>".
	AttrExpired = "kcltoolExpired"
	// AttrParentExpired on each child: "<parent shard id> <RFC 3339 time>".
	// It outlives the parent's lease, which the cleanup deletes once the
	// children have started.
	AttrParentExpired = "kcltoolParentExpired"

	// AttrTrimmed on a closed shard whose checkpoint was older than its
	// trim horizon (Kinesis refused it), which kcltool run then read again
	// from TRIM_HORIZON to its end: "<RFC 3339 time> <refused sequence
	// number> <error>". The records between the checkpoint and the trim
	// horizon were lost; the rest of the shard was not.
	AttrTrimmed = "kcltoolTrimmed"
	// AttrParentTrimmed on each child of such a shard, written with the
	// children's leases at its SHARD_END: "<parent shard id> <RFC 3339
	// time>". Like AttrParentExpired, it outlives the parent's lease.
	AttrParentTrimmed = "kcltoolParentTrimmed"
)

// MarkExpired sets one of the attributes above on a lease, conditional on
// the lease existing and without touching leaseCounter: like childShardIds,
// it is no claim on the lease, so it must not make its holder think it lost
// it.
func MarkExpired(ctx context.Context, api UpdateItemAPI, t Table, key, attr, value string) error {
	return t.Retry.do(ctx, "UpdateItem", awserr.Retryable, func() error {
		_, err := api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                aws.String(t.Name),
			Key:                      map[string]types.AttributeValue{leasecore.AttrLeaseKey: &types.AttributeValueMemberS{Value: key}},
			ConditionExpression:      aws.String("attribute_exists(#k)"),
			UpdateExpression:         aws.String("SET #a = :v"),
			ExpressionAttributeNames: map[string]string{"#k": leasecore.AttrLeaseKey, "#a": attr},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":v": &types.AttributeValueMemberS{Value: value},
			},
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		if awserr.ConditionFailed(err) {
			return fmt.Errorf("mark %s on %s: %w", attr, key, leasecore.ErrLeaseNotFound)
		}
		if err != nil {
			return fmt.Errorf("mark %s on %s: %w", attr, key, err)
		}
		return nil
	})
}
