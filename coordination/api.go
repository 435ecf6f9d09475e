package coordination

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kcltool/kcltool/leasecore"
)

// DetectAPI is what Detect calls.
type DetectAPI interface {
	leasecore.DescribeTableAPI
	leasecore.GetItemAPI
}

// ReadAPI is what the readers call.
type ReadAPI interface {
	DetectAPI
	leasecore.ScanAPI
}

// WriteAPI is what the worker-metrics reporter calls.
type WriteAPI interface {
	ReadAPI
	PutItem(ctx context.Context, params *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	// DeleteItem removes the worker's own item at a graceful stop
	// (Reporter.Remove).
	leasecore.DeleteItemAPI
}
