package leasecore

import (
	"context"
	"fmt"
	"github.com/kcltool/kcltool/internal/clock"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/awserr"
)

// The table-level calls, with the SDK's signatures.
type (
	DescribeTableAPI interface {
		DescribeTable(ctx context.Context, params *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	}
	// TableAPI is what EnsureTable needs.
	TableAPI interface {
		DescribeTableAPI
		CreateTable(ctx context.Context, params *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	}
)

// KCL3IndexName is KCL 3.x's global secondary index on the lease table
// (HASH leaseOwner, RANGE leaseKey, KEYS_ONLY), which workers query to
// discover the leases the leader gave them (docs/kcl-compat.md).
const KCL3IndexName = "LeaseOwnerToLeaseKeyIndex"

// How long EnsureTable waits for a table to become ACTIVE: KCL waits up to
// 600s. It polls every 10s; polling starts faster here because on-demand
// tables are usually ACTIVE within seconds.
const (
	tableWaitTimeout  = 10 * time.Minute
	tableFirstPoll    = 100 * time.Millisecond
	tableMaxPollDelay = 10 * time.Second
)

// EnsureTable makes sure the lease table exists and is ACTIVE. A missing
// table is created when create is set, exactly as KCL 2.x (≥ 2.3.7) creates
// it: on-demand (PAY_PER_REQUEST), a single hash key leaseKey of type S, no
// deletion protection, no PITR, no tags. Without create a missing table is a
// *TableNotFoundError. A table of another shape is refused: it is not a KCL
// lease table.
func EnsureTable(ctx context.Context, api TableAPI, table string, create bool) error {
	return ensureTable(ctx, api, table, create, clock.RealClock())
}

func ensureTable(ctx context.Context, api TableAPI, table string, create bool, clk clock.Clock) error {
	desc, err := DescribeTable(ctx, api, table)
	if err != nil {
		return err
	}
	if desc == nil {
		if !create {
			return &TableNotFoundError{Table: table, Region: RegionOf(api)}
		}
		_, err := api.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String(table),
			BillingMode:          types.BillingModePayPerRequest,
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(AttrLeaseKey), KeyType: types.KeyTypeHash}},
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(AttrLeaseKey), AttributeType: types.ScalarAttributeTypeS}},
		})
		// ResourceInUse: another worker created it first, as several
		// workers started together with --create-table will.
		if err != nil && !awserr.Is(err, "ResourceInUseException") {
			return fmt.Errorf("create lease table %q: %w", table, err)
		}
	} else if err := checkLeaseTableShape(table, desc); err != nil {
		return err
	}
	return waitActive(ctx, api, table, clk)
}

// DescribeTable describes table; nil (and no error) when it does not exist.
func DescribeTable(ctx context.Context, api DescribeTableAPI, table string) (*types.TableDescription, error) {
	out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if awserr.NotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("describe table %q: %w", table, err)
	}
	return out.Table, nil
}

func checkLeaseTableShape(table string, d *types.TableDescription) error {
	if len(d.KeySchema) == 1 && aws.ToString(d.KeySchema[0].AttributeName) == AttrLeaseKey && d.KeySchema[0].KeyType == types.KeyTypeHash {
		return nil
	}
	var keys []string
	for _, k := range d.KeySchema {
		keys = append(keys, fmt.Sprintf("%s (%s)", aws.ToString(k.AttributeName), k.KeyType))
	}
	return fmt.Errorf("table %q is not a KCL lease table: its key is %v, a lease table has a single hash key %q", table, keys, AttrLeaseKey)
}

func waitActive(ctx context.Context, api DescribeTableAPI, table string, clk clock.Clock) error {
	deadline := clk.Now().Add(tableWaitTimeout)
	delay := tableFirstPoll
	for {
		desc, err := DescribeTable(ctx, api, table)
		if err != nil {
			return err
		}
		if desc != nil && desc.TableStatus == types.TableStatusActive {
			return nil
		}
		if clk.Now().After(deadline) {
			return fmt.Errorf("lease table %q is not ACTIVE after %s", table, tableWaitTimeout)
		}
		if err := clock.Sleep(ctx, clk, delay); err != nil {
			return err
		}
		delay = min(delay*2, tableMaxPollDelay)
	}
}

// RegionOf reads the region from a *dynamodb.Client, for error messages;
// "" for any other client.
func RegionOf(api any) string {
	if c, ok := api.(interface{ Options() dynamodb.Options }); ok {
		return c.Options().Region
	}
	return ""
}
