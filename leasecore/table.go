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
	_, err := EnsureTableWith(ctx, api, table, TableOptions{Create: create})
	return err
}

// TableOptions say whether and how EnsureTableWith creates a missing table.
type TableOptions struct {
	Create bool
	// OwnerIndex gives a created table KCL 3.x's LeaseOwnerToLeaseKeyIndex
	// in the CreateTable call itself. KCL 3.5.1 creates the table as 2.x
	// does and adds the index right after with UpdateTable
	// (DynamicMigrationComponentsInitializer.createGsi); the table that
	// results is the same (hash leaseOwner, range leaseKey, KEYS_ONLY, no
	// throughput of its own on an on-demand table), one call sooner, and
	// an emulator that builds indexes only at creation (dynalite) has it.
	OwnerIndex bool
}

// EnsureTableWith is EnsureTable with the creation's options; created
// says this call created the table (not another worker racing it), which
// is when a new application's first items are to be written. A table
// created here is waited for until it and its indexes are ACTIVE; an
// existing one only until the table is.
func EnsureTableWith(ctx context.Context, api TableAPI, table string, o TableOptions) (created bool, err error) {
	return ensureTable(ctx, api, table, o, clock.RealClock())
}

func ensureTable(ctx context.Context, api TableAPI, table string, o TableOptions, clk clock.Clock) (created bool, err error) {
	desc, err := DescribeTable(ctx, api, table)
	if err != nil {
		return false, err
	}
	if desc == nil {
		if !o.Create {
			return false, &TableNotFoundError{Table: table, Region: RegionOf(api)}
		}
		_, err := api.CreateTable(ctx, createTableInput(table, o))
		switch {
		case err == nil:
			created = true
		case awserr.Is(err, "ResourceInUseException"):
			// Another worker created it first, as several workers started
			// together with --create-table will.
		default:
			return false, fmt.Errorf("create lease table %q: %w", table, err)
		}
	} else if err := checkLeaseTableShape(table, desc); err != nil {
		return false, err
	}
	return created, waitActive(ctx, api, table, created, clk)
}

// createTableInput is the CreateTable call of DynamoDBLeaseRefresher
// .createTableRequestBuilder with the KCL's defaults (billingMode
// PAY_PER_REQUEST, leaseTableDeletionProtectionEnabled and
// leaseTablePitrEnabled false, no tags), the same in KCL 2.x and 3.x,
// plus the 3.x index when asked (DynamoDBLeaseSerializer
// .getWorkerIdToLeaseKeyIndexKeySchema and its attribute definitions).
func createTableInput(table string, o TableOptions) *dynamodb.CreateTableInput {
	s := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeS}
	}
	in := &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(AttrLeaseKey), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{s(AttrLeaseKey)},
	}
	if o.OwnerIndex {
		in.AttributeDefinitions = append(in.AttributeDefinitions, s(AttrLeaseOwner))
		in.GlobalSecondaryIndexes = []types.GlobalSecondaryIndex{{
			IndexName: aws.String(KCL3IndexName),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(AttrLeaseOwner), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(AttrLeaseKey), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}}
	}
	return in
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

// waitActive polls until the table is ACTIVE, and with indexes its global
// secondary indexes too (an index given at CreateTable is built with the
// table; a status left out, as some emulators do, counts as ACTIVE).
func waitActive(ctx context.Context, api DescribeTableAPI, table string, indexes bool, clk clock.Clock) error {
	deadline := clk.Now().Add(tableWaitTimeout)
	delay := tableFirstPoll
	for {
		desc, err := DescribeTable(ctx, api, table)
		if err != nil {
			return err
		}
		if desc != nil && desc.TableStatus == types.TableStatusActive && (!indexes || indexesActive(desc)) {
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

func indexesActive(d *types.TableDescription) bool {
	for _, g := range d.GlobalSecondaryIndexes {
		if g.IndexStatus != "" && g.IndexStatus != types.IndexStatusActive {
			return false
		}
	}
	return true
}

// RegionOf reads the region from a *dynamodb.Client, for error messages;
// "" for any other client.
func RegionOf(api any) string {
	if c, ok := api.(interface{ Options() dynamodb.Options }); ok {
		return c.Options().Region
	}
	return ""
}
