package runner

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/leasecore"
)

// KinesisAPI is the part of the Kinesis client a worker calls, with the
// SDK's own signatures so that *kinesis.Client satisfies it.
type KinesisAPI interface {
	ListShards(ctx context.Context, params *kinesis.ListShardsInput, optFns ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error)
	GetShardIterator(ctx context.Context, params *kinesis.GetShardIteratorInput, optFns ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, params *kinesis.GetRecordsInput, optFns ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error)
}

// DynamoDBAPI is the part of the DynamoDB client a worker calls: the lease
// coordinator's reads and conditional writes, table setup, lease creation by
// shard sync and shard end, and the deletion of finished parents. Query
// is the KCL 3.x lease discovery's (the LeaseOwnerToLeaseKeyIndex).
type DynamoDBAPI interface {
	leasecore.CoordinatorAPI
	leasecore.TableAPI
	leasecore.QueryAPI
	PutItem(ctx context.Context, params *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(ctx context.Context, params *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}
