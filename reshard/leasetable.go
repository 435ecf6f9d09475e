package reshard

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/leasecore"
)

// The DynamoDB calls this package makes, one interface each, with the SDK's
// signatures so that *dynamodb.Client satisfies them all (and so do the
// leasecore interfaces of the same names, which these are passed on to).
type (
	GetItemAPI interface {
		GetItem(ctx context.Context, params *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	}
	PutItemAPI interface {
		PutItem(ctx context.Context, params *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	}
	UpdateItemAPI interface {
		UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	}
	DeleteItemAPI interface {
		DeleteItem(ctx context.Context, params *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	}
)

// Table names a lease table and how calls to it are retried.
type Table struct {
	Name  string
	Retry Retry
}

// The lease writes themselves are leasecore's (one attempt each, retrying
// is the caller's policy); these wrappers add this package's throttling
// retries. Retrying a conditional write after throttling is safe: a
// throttled request was not applied.

// getLease reads one lease strongly consistently; nil when absent.
// Consistent because the gating decisions made on it ("parent missing ⇒
// done") must not see a state older than the writes that preceded them, such
// as a parent lease created just before its child.
func getLease(ctx context.Context, api GetItemAPI, t Table, key string) (*leasecore.Lease, error) {
	var l leasecore.Lease
	var found bool
	err := t.Retry.do(ctx, "GetItem", awserr.Retryable, func() (err error) {
		l, found, err = leasecore.GetLease(ctx, api, t.Name, key, true)
		return err
	})
	if err != nil || !found {
		return nil, err
	}
	return &l, nil
}

func createLease(ctx context.Context, api PutItemAPI, t Table, l leasecore.Lease) (created bool, err error) {
	err = t.Retry.do(ctx, "PutItem", awserr.Retryable, func() (err error) {
		created, err = leasecore.CreateLease(ctx, api, t.Name, l)
		return err
	})
	return created, err
}

func setChildShardIDs(ctx context.Context, api UpdateItemAPI, t Table, key string, children []string) error {
	return t.Retry.do(ctx, "UpdateItem", awserr.Retryable, func() error {
		return leasecore.SetChildShardIDs(ctx, api, t.Name, key, children)
	})
}

func deleteFinishedLease(ctx context.Context, api DeleteItemAPI, t Table, key string) (deleted bool, err error) {
	err = t.Retry.do(ctx, "DeleteItem", awserr.Retryable, func() (err error) {
		deleted, err = leasecore.DeleteFinishedLease(ctx, api, t.Name, key)
		return err
	})
	return deleted, err
}

func scanLeases(ctx context.Context, api leasecore.ScanAPI, t Table) (leasecore.ScanResult, error) {
	return leasecore.ScanTable(ctx, api, t.Name, leasecore.ScanOptions{
		ConsistentRead: true, MaxRetries: t.Retry.MaxRetries, Sleep: t.Retry.sleep,
	})
}
