package coordination

import (
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/leasecore"
)

// Keys and attribute names of the KCL 3.x coordination items, as KCL 3.5.1
// writes them.
const (
	// Hash keys: the side tables' (LegacyTableCoordinatorStateDAODelegate
	// COORDINATOR_STATE_TABLE_HASH_KEY_ATTRIBUTE_NAME, WorkerMetricStats
	// KEY_WORKER_ID); in the lease table every item is keyed leaseKey.
	attrCoordKey  = "key"
	attrWorkerID  = "wid"
	attrLeaseKey  = leasecore.AttrLeaseKey
	attrEntity    = leasecore.AttrEntityType
	keyMigration  = "Migration3.0"      // MigrationState.MIGRATION_HASH_KEY
	keyTableMig   = "TableMigration3.5" // TableMigrationState.TABLE_MIGRATION_HASH_KEY
	keyLeaderLock = "Leader"            // the DynamoDB lock client's partition key value

	// EntityType.getDdbValue() of the items the lease table holds besides
	// leases (leases/EntityType.java).
	EntityLeader          = "LEADER"
	EntityClientMigration = "CLIENT_VERSION_MIGRATION"
	EntityTableMigration  = "TABLE_MIGRATION"
	EntityWorkerMetrics   = "WORKER_METRIC_STATS"

	// MigrationState / TableMigrationState attributes.
	attrCV  = "cv"
	attrTM  = "tm"
	attrMB  = "mb"
	attrMTS = "mts"

	// WorkerMetricStats @DynamoDbAttribute names.
	attrLUT        = "lut"
	attrSTS        = "sts"
	attrOPR        = "opr"
	attrSUP        = "sup"
	attrSLU        = "slu"
	attrProperties = "properties"

	// The lock client's attributes (AmazonDynamoDBLockClient 1.4).
	attrOwnerName     = "ownerName"
	attrRecordVersion = "recordVersionNumber"
	attrLeaseDuration = "leaseDuration"
)

// Table migration statuses, tm of the TableMigration3.5 item
// (TableMigrationStatus.name()).
const (
	TableMigrationInit     = "TABLE_MIGRATION_STATUS_INIT"
	TableMigrationDeployed = "TABLE_MIGRATION_STATUS_DEPLOYED"
	TableMigrationPending  = "TABLE_MIGRATION_STATUS_PENDING"
	TableMigrationComplete = "TABLE_MIGRATION_STATUS_COMPLETE"
)

func strAttr(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// numAttr reads a number written as N, or as a numeric S (tolerated: some
// writers store numbers as strings, the lock client its leaseDuration).
func numAttr(item map[string]types.AttributeValue, name string) (float64, bool) {
	return numOf(item[name])
}

func numOf(av types.AttributeValue) (float64, bool) {
	var s string
	switch v := av.(type) {
	case *types.AttributeValueMemberN:
		s = v.Value
	case *types.AttributeValueMemberS:
		s = v.Value
	default:
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// epochSeconds reads an epoch-seconds attribute (lut, slu).
func epochSeconds(item map[string]types.AttributeValue, name string) time.Time {
	f, ok := numAttr(item, name)
	if !ok {
		return time.Time{}
	}
	return time.Unix(int64(f), 0).UTC()
}

// epochMillis reads mts, milliseconds since the epoch.
func epochMillis(item map[string]types.AttributeValue, name string) time.Time {
	f, ok := numAttr(item, name)
	if !ok {
		return time.Time{}
	}
	return time.UnixMilli(int64(f)).UTC()
}

// decodeWorkerMetrics reads a WorkerMetricStats item keyed by keyAttr.
func decodeWorkerMetrics(item map[string]types.AttributeValue, keyAttr, table string) WorkerMetrics {
	m := WorkerMetrics{
		WorkerID:            strAttr(item, keyAttr),
		LastUpdate:          epochSeconds(item, attrLUT),
		SupportsMigrationAt: epochSeconds(item, attrSLU),
		Table:               table,
	}
	if sup, ok := numAttr(item, attrSUP); ok && sup >= 1 {
		m.SupportsMigration = true
	}
	if sts, ok := item[attrSTS].(*types.AttributeValueMemberM); ok {
		m.Samples = make(map[string][]float64, len(sts.Value))
		for name, av := range sts.Value {
			var vals []float64
			if l, ok := av.(*types.AttributeValueMemberL); ok {
				for _, e := range l.Value {
					if f, ok := numOf(e); ok {
						vals = append(vals, f)
					}
				}
			}
			m.Samples[name] = vals
		}
	}
	if opr, ok := item[attrOPR].(*types.AttributeValueMemberM); ok {
		m.OperatingRange = make(map[string][]int64, len(opr.Value))
		for name, av := range opr.Value {
			var vals []int64
			if l, ok := av.(*types.AttributeValueMemberL); ok {
				for _, e := range l.Value {
					if f, ok := numOf(e); ok {
						vals = append(vals, int64(f))
					}
				}
			}
			m.OperatingRange[name] = vals
		}
	}
	return m
}
