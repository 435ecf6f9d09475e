package reset

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// TableAPI is the part of the DynamoDB client planning and applying use,
// with the SDK's own signatures so that *dynamodb.Client satisfies it.
type TableAPI interface {
	leasecore.ScanAPI
	leasecore.GetItemAPI
	leasecore.PutItemAPI
	leasecore.UpdateItemAPI
	leasecore.DeleteItemAPI
}

// StreamAPI is the part of the Kinesis client a reset reads the stream with:
// the shard list for the lineage, the retention, and records to turn a time
// into a sequence number or to check that a sequence number is in a shard.
type StreamAPI interface {
	reshard.KinesisAPI
	DescribeStreamSummary(ctx context.Context, params *kinesis.DescribeStreamSummaryInput, optFns ...func(*kinesis.Options)) (*kinesis.DescribeStreamSummaryOutput, error)
	GetShardIterator(ctx context.Context, params *kinesis.GetShardIteratorInput, optFns ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, params *kinesis.GetRecordsInput, optFns ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error)
}

var _ TableAPI = (*dynamodb.Client)(nil)
var _ StreamAPI = (*kinesis.Client)(nil)
