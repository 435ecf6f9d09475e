package leasecore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/awserr"
)

// KCL3ProbeAPI is what ProbeKCL3 calls.
type KCL3ProbeAPI interface {
	DescribeTableAPI
	GetItemAPI
}

// kcl3Keys are the leaseKeys of the items a KCL 3.5 application keeps in
// its lease table from its first start: the leader lock and the migration
// state (docs/kcl-compat.md, KCL 3.x items).
var kcl3Keys = []string{"Leader", "Migration3.0"}

// ProbeKCL3 looks for a KCL 3.x application on a lease table that a running
// worker shares, cheaply enough to repeat while it runs: the
// LeaseOwnerToLeaseKeyIndex on the table, the 3.0 - 3.4 companion tables
// named after the lease table and after the application (KCL names them
// after applicationName, which a custom tableName does not change), and
// the 3.5 leader lock or migration item in the lease table. It reads two
// items and describes up to five tables; no scan. It returns a
// *KCL3TableError when it finds one, nil when it does not. A companion
// table the worker may not describe (AccessDenied) is not evidence.
func ProbeKCL3(ctx context.Context, api KCL3ProbeAPI, table, app string) error {
	if _, err := kcl3Structure(ctx, api, table, app); err != nil {
		return err
	}
	for _, key := range kcl3Keys {
		out, err := api.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(table),
			Key:       map[string]types.AttributeValue{AttrLeaseKey: &types.AttributeValueMemberS{Value: key}},
			// Answered like every lease-table call, so that it is counted.
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		if err != nil {
			return fmt.Errorf("read item %q of lease table %q: %w", key, table, err)
		}
		if out.Item == nil {
			continue
		}
		if _, err := DecodeLease(out.Item); err != nil {
			return &KCL3TableError{Table: table, Evidence: fmt.Sprintf("it holds the KCL 3.x item %q", key)}
		}
	}
	return nil
}

// kcl3Structure describes the lease table and returns its description, or
// a *KCL3TableError when its shape shows a KCL 3.x application: the
// LeaseOwnerToLeaseKeyIndex, or a 3.0 - 3.4 companion table named after
// the table or, when app differs, after the application. A companion table
// the worker may not describe (AccessDenied) is not evidence either way.
func kcl3Structure(ctx context.Context, api DescribeTableAPI, table, app string) (*types.TableDescription, error) {
	desc, err := describe(ctx, api, table)
	if err != nil {
		return nil, err
	}
	if desc == nil {
		return nil, &TableNotFoundError{Table: table, Region: regionOf(api)}
	}
	for _, gsi := range desc.GlobalSecondaryIndexes {
		if aws.ToString(gsi.IndexName) == KCL3IndexName {
			return nil, &KCL3TableError{Table: table, Evidence: "it has the global secondary index " + KCL3IndexName}
		}
	}
	names := []string{table}
	if app != "" && app != table {
		names = append(names, app)
	}
	for _, name := range names {
		for _, suffix := range []string{kcl3CoordinatorSuffix, kcl3WorkerMetricsSuffix} {
			other, err := describe(ctx, api, name+suffix)
			if err != nil && !awserr.AccessDenied(err) {
				return nil, err
			}
			if other != nil {
				return nil, &KCL3TableError{Table: table, Evidence: "table " + name + suffix + " exists"}
			}
		}
	}
	return desc, nil
}
