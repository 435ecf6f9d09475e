package coordination

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/awserr"
	"github.com/kcltool/kcltool/leasecore"
)

// Detect reads the lease table's description, the Migration3.0 and
// TableMigration3.5 items and whether the side tables exist, and decides
// the State. Cheap enough to repeat every shard sync: three describes and
// two or three single-item reads, no scan.
//
// Where the items are, after KCL 3.5.1:
//   - TableMigration3.5 is read from <app>-CoordinatorState only
//     (TableMigrationStateMachineImpl.readStateFromLegacy). No item and no
//     side table is the KCL's short cut to COMPLETE (a new 3.5 application,
//     or a 2.x one migrating to 3.x: determineStatusForInitialization).
//   - The status decides where items are written (CoordinatorStateDAO,
//     WorkerMetricStatsDAO): INIT or DEPLOYED the side tables, PENDING or
//     COMPLETE the lease table. Reads merge both tables until COMPLETE.
//   - Migration3.0 is read from the side table first, then the lease table
//     (CoordinatorStateDAO.getCoordinatorState), from the lease table only
//     once COMPLETE.
func Detect(ctx context.Context, api DetectAPI, t Tables) (State, error) {
	var st State
	desc, err := leasecore.DescribeTable(ctx, api, t.Lease)
	if err != nil {
		return st, err
	}
	if desc == nil {
		return st, &leasecore.TableNotFoundError{Table: t.Lease, Region: leasecore.RegionOf(api)}
	}
	for _, gsi := range desc.GlobalSecondaryIndexes {
		if aws.ToString(gsi.IndexName) == leasecore.KCL3IndexName {
			st.Index = string(gsi.IndexStatus)
			if st.Index == "" {
				st.Index = "ACTIVE" // some emulators leave the status out
			}
		}
	}
	if st.CoordinatorStateTable, err = presence(ctx, api, t.CoordinatorState); err != nil {
		return st, err
	}
	if st.WorkerMetricsTable, err = presence(ctx, api, t.WorkerMetrics); err != nil {
		return st, err
	}

	// TableMigration3.5, from the side table.
	if st.CoordinatorStateTable != PresenceAbsent {
		item, p, err := getSide(ctx, api, t.CoordinatorState, keyTableMig)
		if err != nil {
			return st, err
		}
		st.CoordinatorStateTable = p
		if item != nil {
			st.TableMigration, st.TableMigrationIn = strAttr(item, attrTM), t.CoordinatorState
		}
	}
	if st.CoordinatorStateTable != PresencePresent {
		// The PENDING -> COMPLETE step writes COMPLETE to both tables, and
		// the side table may be deleted after: read the lease table's copy,
		// for the record and for a side table we may not read.
		item, err := getItem(ctx, api, t.Lease, attrLeaseKey, keyTableMig)
		if err != nil {
			return st, err
		}
		if item != nil {
			st.TableMigration, st.TableMigrationIn = strAttr(item, attrTM), t.Lease
		}
	}
	complete := st.effectiveTableMigration() == TableMigrationComplete

	// Migration3.0.
	var cvItem map[string]types.AttributeValue
	if !complete && st.CoordinatorStateTable == PresencePresent {
		if cvItem, err = getItem(ctx, api, t.CoordinatorState, attrCoordKey, keyMigration); err != nil {
			return st, err
		}
		if cvItem != nil {
			st.ClientVersionIn = t.CoordinatorState
		}
	}
	if cvItem == nil {
		if cvItem, err = getItem(ctx, api, t.Lease, attrLeaseKey, keyMigration); err != nil {
			return st, err
		}
		if cvItem != nil {
			st.ClientVersionIn = t.Lease
		}
	}
	if cvItem != nil {
		st.ClientVersion = strAttr(cvItem, attrCV)
		st.ClientVersionBy = strAttr(cvItem, attrMB)
		st.ClientVersionAt = epochMillis(cvItem, attrMTS)
	}
	st.SideTables = st.CoordinatorStateTable == PresencePresent || st.WorkerMetricsTable == PresencePresent

	kcl3 := st.ClientVersion != "" || st.Index != "" || st.TableMigration != ""
	if !kcl3 {
		// Nothing yet: a lease table that holds the leader lock (a KCL 3.5
		// application's first item) is a 3.x application all the same.
		item, err := getItem(ctx, api, t.Lease, attrLeaseKey, keyLeaderLock)
		if err != nil {
			return st, err
		}
		st.LeaderLockSeen = item != nil && !isLease(item)
		kcl3 = st.LeaderLockSeen
	}

	switch {
	case !kcl3:
		st.Layout = LayoutNone
	case complete:
		st.Layout = LayoutLeaseTable
	case st.effectiveTableMigration() == TableMigrationPending:
		st.Layout = LayoutPending
	default:
		st.Layout = LayoutSideTables
	}

	label := ""
	switch st.ClientVersion {
	case ClientVersion3X, ClientVersion3XWithRollback:
		st.Assignment, st.ReportMetrics, label = leasecore.AssignByLeader, true, "KCL 3.x"
	case ClientVersionUpgradeFrom2X:
		// MigrationClientVersionUpgradeFrom2xState: 2.x-compatible lease
		// taking (LAM not started) while reporting worker metrics, which
		// the leader waits for before it flips the fleet to 3.x.
		st.Assignment, st.ReportMetrics, label = leasecore.AssignByTaking, true, "KCL 3.x upgrading from 2.x"
	case ClientVersion2X:
		// MigrationClientVersion2xState: 2.x assignment, and the metrics
		// reporter is not started (stopped on a dynamic rollback).
		st.Assignment, st.ReportMetrics, label = leasecore.AssignByTaking, false, "KCL 3.x rolled back to 2.x"
	case "":
		if kcl3 {
			// MigrationClientVersionStateInitializer: with no Migration3.0
			// item, a worker with the default clientVersionConfig
			// (CLIENT_VERSION_CONFIG_3X, CoordinatorConfig) starts
			// CLIENT_VERSION_3X and writes the item as it enters the state.
			st.Assignment, st.ReportMetrics, label = leasecore.AssignByLeader, true, "KCL 3.x"
		} else {
			st.Assignment, st.ReportMetrics, label = leasecore.AssignByTaking, false, "KCL 2.x"
		}
	default:
		// A KCL newer than 3.5.1 may add a version: guessing its protocol
		// could fight its leader, so say what is known and what to do.
		return st, fmt.Errorf("lease table %q: item %q (in %s) has the client version cv=%q, which kcltool does not know (it knows %s, %s, %s and %s, as KCL 3.5.1 writes them); "+
			"a newer KCL may have written it: use a kcltool release that knows it, or check the item for a typo if it was edited by hand",
			t.Lease, keyMigration, st.ClientVersionIn, st.ClientVersion, ClientVersion3X, ClientVersion3XWithRollback, ClientVersionUpgradeFrom2X, ClientVersion2X)
	}
	st.Reason = label + " (" + strings.Join(st.evidence(t), "; ") + ")"
	return st, nil
}

// effectiveTableMigration is the status a KCL 3.5 worker acts on: the
// item's, INIT when the side table exists without one, COMPLETE when there
// is no side table (determineStatusForInitialization). A side table we may
// not read counts as present unless the lease table says COMPLETE.
func (s State) effectiveTableMigration() string {
	switch {
	case s.TableMigration == TableMigrationComplete, s.CoordinatorStateTable == PresenceAbsent:
		return TableMigrationComplete
	case s.TableMigration == "":
		return TableMigrationInit
	}
	return s.TableMigration
}

func (s State) evidence(t Tables) []string {
	var ev []string
	switch {
	case s.ClientVersion != "":
		ev = append(ev, fmt.Sprintf("%s cv=%s in %s", keyMigration, s.ClientVersion, s.ClientVersionIn))
	case s.Layout != LayoutNone:
		ev = append(ev, "no "+keyMigration+" item: a worker with the default clientVersionConfig starts CLIENT_VERSION_3X")
	default:
		ev = append(ev, "no "+keyMigration+" item")
	}
	if s.Index != "" {
		ev = append(ev, "index "+leasecore.KCL3IndexName+" "+s.Index)
	} else {
		ev = append(ev, "no index "+leasecore.KCL3IndexName)
	}
	if s.TableMigration != "" {
		ev = append(ev, "tm "+strings.TrimPrefix(s.TableMigration, "TABLE_MIGRATION_STATUS_")+" in "+s.TableMigrationIn)
	} else if s.Layout != LayoutNone {
		if s.CoordinatorStateTable == PresenceAbsent {
			ev = append(ev, "no "+t.CoordinatorState+": all items in the lease table")
		} else {
			ev = append(ev, "no "+keyTableMig+" item: side tables")
		}
	}
	if s.LeaderLockSeen {
		ev = append(ev, "leader lock in "+t.Lease)
	}
	for _, side := range []struct {
		name string
		p    Presence
	}{{t.CoordinatorState, s.CoordinatorStateTable}, {t.WorkerMetrics, s.WorkerMetricsTable}} {
		switch {
		case side.p == PresenceUnknown:
			ev = append(ev, side.name+" may not be described (AccessDenied): its existence is unknown, no evidence")
		case side.p == PresencePresent && s.Layout == LayoutNone:
			ev = append(ev, side.name+" exists but holds no 3.x item")
		}
	}
	return ev
}

// presence describes a side table: AccessDenied is PresenceUnknown, not
// evidence (LegacyTableCoordinatorStateDAODelegate.initialize treats only
// ResourceNotFound as "absent").
func presence(ctx context.Context, api DetectAPI, table string) (Presence, error) {
	if table == "" {
		return PresenceAbsent, nil
	}
	d, err := leasecore.DescribeTable(ctx, api, table)
	switch {
	case awserr.AccessDenied(err):
		return PresenceUnknown, nil
	case err != nil:
		return PresenceAbsent, err
	case d == nil:
		return PresenceAbsent, nil
	}
	return PresencePresent, nil
}

// getSide reads an item of the CoordinatorState side table, and what the
// read tells of the table: a read that works shows it exists, one refused
// leaves it unknown.
func getSide(ctx context.Context, api leasecore.GetItemAPI, table, key string) (map[string]types.AttributeValue, Presence, error) {
	item, err := getItem(ctx, api, table, attrCoordKey, key)
	switch {
	case awserr.AccessDenied(err):
		return nil, PresenceUnknown, nil
	case awserr.NotFound(err):
		return nil, PresenceAbsent, nil
	case err != nil:
		return nil, PresenceAbsent, err
	}
	return item, PresencePresent, nil
}

// getItem reads one item consistently, as CoordinatorStateDAODelegate
// does; nil when there is none. A missing table is ResourceNotFound,
// returned as is so that callers can tell.
func getItem(ctx context.Context, api leasecore.GetItemAPI, table, keyAttr, key string) (map[string]types.AttributeValue, error) {
	out, err := api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:              aws.String(table),
		Key:                    map[string]types.AttributeValue{keyAttr: &types.AttributeValueMemberS{Value: key}},
		ConsistentRead:         aws.Bool(true),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return nil, fmt.Errorf("read item %q of table %q: %w", key, table, err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

// isLease: the item decodes as a lease (a lease that happens to be keyed
// "Leader" is no lock).
func isLease(item map[string]types.AttributeValue) bool {
	_, err := leasecore.DecodeLease(item)
	return err == nil
}

// lockDurationOf reads the lock client's leaseDuration: milliseconds,
// stored as a string.
func lockDurationOf(item map[string]types.AttributeValue) time.Duration {
	f, ok := numAttr(item, attrLeaseDuration)
	if !ok {
		return 0
	}
	return time.Duration(f) * time.Millisecond
}
