package coordination

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/leasecore"
)

// CreateAPI is what EnsureLeaseTable calls.
type CreateAPI interface {
	leasecore.TableAPI
	PutItem(ctx context.Context, params *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

// NewApplication is what a lease table created for a new application
// gets, as the first KCL worker of that application would make it.
type NewApplication struct {
	// Index: the LeaseOwnerToLeaseKeyIndex (KCL 3.x).
	Index bool
	// ClientVersion is the Migration3.0 item's cv, "" for no item (KCL 2.x,
	// or 3.x under CLIENT_VERSION_CONFIG_COMPATIBLE_WITH_2X_PHASE1, which
	// writes nothing).
	ClientVersion string
	// ModifiedBy is the item's mb: the worker identifier, as the KCL writes.
	ModifiedBy string
}

// NewKCL3Application is what KCL 3.5.1 makes of a new application under
// its default clientVersionConfig, CLIENT_VERSION_CONFIG_3X: the index and
// the Migration3.0 item at CLIENT_VERSION_3X, in the lease table.
//   - MigrationClientVersionStateInitializer.getNextClientVersionBasedOnConfigVersion
//     starts CLIENT_VERSION_3X when there is no Migration3.0 item; entering
//     the state writes the item (AbstractMigrationClientVersionState
//     .ensureDdbStateMatchesClientVersion) and creates the index
//     (DynamicMigrationComponentsInitializer.initializeClientVersionFor3x).
//   - TableMigrationStateMachineImpl writes no TableMigration3.5 item: with
//     no side table the status is COMPLETE in memory only
//     (determineStatusForInitialization), so every item goes to the lease
//     table (CoordinatorStateDAO.getWriteDelegate).
//   - Nothing else is written at start: the leader lock and the
//     worker-metrics items come with the running fleet; stream-info items
//     only when streamIdOnboardingState is ONBOARDED (default NOT_ONBOARDED).
func NewKCL3Application(modifiedBy string) NewApplication {
	return NewApplication{Index: true, ClientVersion: ClientVersion3X, ModifiedBy: modifiedBy}
}

// EnsureLeaseTable is leasecore.EnsureTableWith for an application's
// lease table: a table it creates also gets app's index and items (the
// single-table layout of KCL 3.5). A table that exists is left as it is,
// whatever its mode: only an operator's migration changes that. created
// says this call created the table.
func EnsureLeaseTable(ctx context.Context, api CreateAPI, t Tables, create bool, app NewApplication, clk clock.Clock) (created bool, err error) {
	created, err = leasecore.EnsureTableWith(ctx, api, t.Lease, leasecore.TableOptions{Create: create, OwnerIndex: app.Index})
	if err != nil || !created || app.ClientVersion == "" {
		return created, err
	}
	if clk == nil {
		clk = clock.RealClock()
	}
	// A worker that lost the CreateTable race (ResourceInUse) writes
	// nothing: the creator does, and Detect reads the index as 3.x until
	// then.
	_, err = CreateMigrationItem(ctx, api, t.Lease, app.ClientVersion, app.ModifiedBy, clk.Now())
	return created, err
}

// CreateMigrationItem writes the Migration3.0 item into the lease table as
// a KCL 3.5.1 worker does when it starts an application that has none:
// MigrationState(workerId) is CLIENT_VERSION_INIT, update() moves it to cv
// and keeps INIT as the one history entry, and
// CoordinatorStateDAODelegate.createCoordinatorStateIfNotExists puts it
// only where no item has the key (the KCL's Expected leaseKey
// exists=false, the same condition as attribute_not_exists here). An item
// already there is kept as it is and reported by wrote false.
func CreateMigrationItem(ctx context.Context, api CreateAPI, leaseTable, cv, modifiedBy string, now time.Time) (wrote bool, err error) {
	mts := &types.AttributeValueMemberN{Value: strconv.FormatInt(now.UnixMilli(), 10)}
	item := map[string]types.AttributeValue{
		attrLeaseKey: &types.AttributeValueMemberS{Value: keyMigration},
		attrEntity:   &types.AttributeValueMemberS{Value: EntityClientMigration},
		attrCV:       &types.AttributeValueMemberS{Value: cv},
		attrMB:       &types.AttributeValueMemberS{Value: modifiedBy},
		attrMTS:      mts,
		"h": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			attrCV:  &types.AttributeValueMemberS{Value: "CLIENT_VERSION_INIT"},
			attrMB:  &types.AttributeValueMemberS{Value: modifiedBy},
			attrMTS: mts,
		}}}},
	}
	_, err = api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(leaseTable),
		Item:                     item,
		ConditionExpression:      aws.String("attribute_not_exists(#k)"),
		ExpressionAttributeNames: map[string]string{"#k": attrLeaseKey},
		ReturnConsumedCapacity:   types.ReturnConsumedCapacityTotal,
	})
	switch {
	case awserr.ConditionFailed(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("write item %q of table %q: %w", keyMigration, leaseTable, err)
	}
	return true, nil
}
