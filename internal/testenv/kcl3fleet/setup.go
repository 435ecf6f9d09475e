package kcl3fleet

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// Kind is where an application keeps its coordination items (the KCL's
// TableMigrationStatus as seen by its DAOs).
type Kind int

const (
	// NewApp is a KCL 3.5 application that never had side tables:
	// TableMigrationStateMachineImpl.determineStatusForInitialization
	// (v3.5.1 lines 449-462) treats "no state, no legacy table" as COMPLETE
	// without writing a TableMigration3.5 item, so everything, Migration3.0
	// included, is in the lease table.
	NewApp Kind = iota
	// SideTables is KCL 3.0-3.4, or tm INIT / DEPLOYED: <app>-CoordinatorState
	// holds the lock and Migration3.0 (and TableMigration3.5 when
	// Layout.TableMigration is set), <app>-WorkerMetricStats the metrics
	// (CoordinatorStateDAO.getWriteDelegate, lines 441-452, and
	// WorkerMetricStatsDAO.getWriteDelegate, lines 179-190: INIT and
	// DEPLOYED write to the legacy tables).
	SideTables
	// Pending is tm PENDING: the leader moved every CoordinatorState entry but
	// the lock and TableMigration3.5 to the lease table before it wrote
	// PENDING (TableMigrationStateMachineImpl class doc, lines 94-101, and the
	// move's skips, lines 856-866), so Migration3.0 is in the lease table; the
	// lock stays in the side table until COMPLETE (CoordinatorStateDAO class
	// doc "Lock Client", getDDBLockClient); metrics are written to the lease
	// table (WorkerMetricStatsDAO.getWriteDelegate, PENDING).
	Pending
	// Complete is tm COMPLETE: TableMigration3.5 is COMPLETE in both tables
	// (finalizeMigrationComplete, lines 974-1000), the side tables still
	// exist, and the lock, Migration3.0 and metrics are in the lease table.
	Complete
)

func (k Kind) String() string {
	switch k {
	case SideTables:
		return "side-tables"
	case Pending:
		return "pending"
	case Complete:
		return "complete"
	}
	return "new-app"
}

// Table migration states, the tm attribute (coordinator/migration/
// TableMigrationStatus.java, enum names, lines 69-110).
const (
	TableMigrationInit     = "TABLE_MIGRATION_STATUS_INIT"
	TableMigrationDeployed = "TABLE_MIGRATION_STATUS_DEPLOYED"
	TableMigrationPending  = "TABLE_MIGRATION_STATUS_PENDING"
	TableMigrationComplete = "TABLE_MIGRATION_STATUS_COMPLETE"
)

// Layout describes the application Setup creates.
type Layout struct {
	Kind Kind
	// LeaseTable defaults to a name unique to the test; App (the side
	// tables' prefix) defaults to LeaseTable.
	LeaseTable string
	App        string
	// ClientVersion is cv of Migration3.0, CLIENT_VERSION_3X when empty.
	ClientVersion string
	// NoMigrationItem leaves Migration3.0 out (a table that a 3.x worker
	// has not initialised yet).
	NoMigrationItem bool
	// TableMigration is tm for Kind SideTables: "" (KCL 3.0-3.4, no
	// TableMigration3.5 item), TableMigrationInit or TableMigrationDeployed.
	// Pending and Complete set it themselves.
	TableMigration string
}

// API is the DynamoDB calls the fleet makes: a *dynamodb.Client, or the
// in-process model of fleetsim (internal/testenv/ddbmodel).
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Fleet is one application's tables on the local DynamoDB server (or the
// model).
type Fleet struct {
	DDB    API
	Tables coordination.Tables
	Layout Layout
	// Clock is where the leader and the workers built from this Fleet take
	// their time (the real clock unless a test sets another before building
	// them).
	Clock clock.Clock
}

// Item names and attribute names of the coordination entities.
const (
	// LeaderLock.LEADER_HASH_KEY (leader/LeaderLock.java line 38).
	LeaderKey = "Leader"
	// MigrationState.MIGRATION_HASH_KEY (MigrationState.java line 49).
	MigrationKey = "Migration3.0"
	// TableMigrationState.TABLE_MIGRATION_HASH_KEY (line 50).
	TableMigrationKey = "TableMigration3.5"
	// LegacyTableCoordinatorStateDAODelegate line 57.
	coordinatorStateHashKey = "key"
	// WorkerMetricStats.KEY_WORKER_ID (WorkerMetricStats.java line 83).
	workerMetricsHashKey = "wid"
	leaseKeyAttr         = "leaseKey"
	entityTypeAttr       = "entityType"
	// EntityType ddb values (leases/EntityType.java lines 31-57).
	entityLeader          = "LEADER"
	entityClientMigration = "CLIENT_VERSION_MIGRATION"
	entityTableMigration  = "TABLE_MIGRATION"
	entityWorkerMetrics   = "WORKER_METRIC_STATS"
	// Setup's and SetClientVersion's mb when the test names no one.
	defaultModifiedBy = "kcl3fleet"
)

// Setup creates the application's tables and items for the layout and
// returns the Fleet. It fails the test on any error.
func Setup(t testing.TB, ddb *dynamodb.Client, l Layout) *Fleet {
	t.Helper()
	if l.LeaseTable == "" {
		l.LeaseTable = emulator.Name(t, "kcl3")
	}
	if l.ClientVersion == "" {
		l.ClientVersion = coordination.ClientVersion3X
	}
	switch l.Kind {
	case Pending:
		l.TableMigration = TableMigrationPending
	case Complete:
		l.TableMigration = TableMigrationComplete
	case NewApp:
		l.TableMigration = ""
	}
	f := &Fleet{DDB: ddb, Tables: coordination.DefaultTables(l.LeaseTable, l.App), Layout: l, Clock: clock.RealClock()}
	ctx := context.Background()

	// The lease table as DynamoDBLeaseRefresher.createLeaseTableIfNotExists
	// makes it with the LeaseOwnerToLeaseKeyIndex (dynalite builds an index
	// only at CreateTable).
	emulator.CreateKCL3LeaseTable(t, ddb, l.LeaseTable)
	if l.Kind != NewApp {
		// KCL 3.0-3.4 created both side tables through DdbUtil.tableCreator
		// (utils/DdbUtil.java lines 43-70): the hash key alone, type S,
		// billing from DdbTableConfig (PAY_PER_REQUEST by default,
		// common/DdbTableConfig.java line 48). KCL 3.5.1 no longer creates
		// them, it only reads and writes them while they exist.
		createHashTable(t, ddb, f.Tables.CoordinatorState, coordinatorStateHashKey)
		createHashTable(t, ddb, f.Tables.WorkerMetrics, workerMetricsHashKey)
	}
	now := f.Clock.Now()
	if err := f.createMigrationItem(ctx); err != nil {
		t.Fatal(err)
	}
	if l.TableMigration != "" {
		// The state machine keeps TableMigration3.5 in the legacy table
		// (TableMigrationStateMachineImpl class doc lines 53-56,
		// readStateFromLegacy line 1132); PENDING -> COMPLETE writes it to
		// both tables (finalizeMigrationComplete, lines 974-1000).
		item := tableMigrationItem(coordinatorStateHashKey, l.TableMigration, defaultModifiedBy, now)
		if err := createIfNotExists(ctx, ddb, f.Tables.CoordinatorState, coordinatorStateHashKey, item); err != nil {
			t.Fatalf("kcl3fleet: create %s: %v", TableMigrationKey, err)
		}
		if l.Kind == Complete {
			item := tableMigrationItem(leaseKeyAttr, l.TableMigration, defaultModifiedBy, now)
			if err := createIfNotExists(ctx, ddb, f.Tables.Lease, leaseKeyAttr, item); err != nil {
				t.Fatalf("kcl3fleet: create %s in the lease table: %v", TableMigrationKey, err)
			}
		}
	}
	return f
}

// Attach builds a Fleet on a lease table that exists already (with the
// LeaseOwnerToLeaseKeyIndex), such as fleetsim's model table: only the
// NewApp layout, one table, and the Migration3.0 item is written unless
// the layout says not to. clk is the fleet's clock.
func Attach(ctx context.Context, api API, l Layout, clk clock.Clock) (*Fleet, error) {
	if l.Kind != NewApp || l.LeaseTable == "" {
		return nil, fmt.Errorf("kcl3fleet: Attach needs the NewApp layout and a lease table name")
	}
	if l.ClientVersion == "" {
		l.ClientVersion = coordination.ClientVersion3X
	}
	f := &Fleet{DDB: api, Tables: coordination.DefaultTables(l.LeaseTable, l.App), Layout: l, Clock: clk}
	return f, f.createMigrationItem(ctx)
}

func (f *Fleet) createMigrationItem(ctx context.Context) error {
	if f.Layout.NoMigrationItem {
		return nil
	}
	table, keyAttr := f.migrationLocation()
	item := migrationItem(keyAttr, f.Layout.ClientVersion, defaultModifiedBy, f.Clock.Now())
	if err := createIfNotExists(ctx, f.DDB, table, keyAttr, item); err != nil {
		return fmt.Errorf("kcl3fleet: create %s in %s: %w", MigrationKey, table, err)
	}
	return nil
}

func createHashTable(t testing.TB, ddb *dynamodb.Client, name, hashKey string) {
	t.Helper()
	ctx := context.Background()
	_, err := ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String(hashKey), KeyType: ddbtypes.KeyTypeHash}},
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String(hashKey), AttributeType: ddbtypes.ScalarAttributeTypeS}},
	})
	if err != nil {
		t.Fatalf("kcl3fleet: create table %s: %v", name, err)
	}
	w := dynamodb.NewTableExistsWaiter(ddb, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 20 * time.Millisecond
		o.MaxDelay = 200 * time.Millisecond
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 30*time.Second); err != nil {
		t.Fatalf("kcl3fleet: wait for table %s: %v", name, err)
	}
}

// lockLocation is where the leader lock lives: the lease table when
// migration is COMPLETE (or a new 3.5 application), the legacy table in
// every other state (CoordinatorStateDAO.getDDBLockClient, v3.5.1 lines
// 373-378; the lock client is keyed by the delegate's partition key,
// CoordinatorStateDAODelegate.getDDBLockClientOptionsBuilder).
func (f *Fleet) lockLocation() (table, keyAttr string) {
	if f.Layout.Kind == NewApp || f.Layout.Kind == Complete {
		return f.Tables.Lease, leaseKeyAttr
	}
	return f.Tables.CoordinatorState, coordinatorStateHashKey
}

// migrationLocation is where Migration3.0 is: written where
// CoordinatorStateDAO.getWriteDelegate says (PENDING and COMPLETE: lease
// table; INIT, DEPLOYED and 3.0-3.4: legacy table), and moved to the lease
// table before PENDING (see Pending).
func (f *Fleet) migrationLocation() (table, keyAttr string) {
	if f.Layout.Kind == SideTables {
		return f.Tables.CoordinatorState, coordinatorStateHashKey
	}
	return f.Tables.Lease, leaseKeyAttr
}

// metricsLocation is where a worker writes its metrics item
// (WorkerMetricStatsDAO.getWriteDelegate, lines 179-190).
func (f *Fleet) metricsLocation() (table, keyAttr string) {
	if f.Layout.Kind == SideTables {
		return f.Tables.WorkerMetrics, workerMetricsHashKey
	}
	return f.Tables.Lease, leaseKeyAttr
}

// LockTable, MigrationTable and MetricsTable name the tables holding the
// leader lock, Migration3.0 and the workers' metrics items in this layout.
func (f *Fleet) LockTable() string      { t, _ := f.lockLocation(); return t }
func (f *Fleet) MigrationTable() string { t, _ := f.migrationLocation(); return t }
func (f *Fleet) MetricsTable() string   { t, _ := f.metricsLocation(); return t }

// CoordinationLayout is the coordination package's name for this layout.
func (f *Fleet) CoordinationLayout() coordination.Layout {
	switch f.Layout.Kind {
	case SideTables:
		return coordination.LayoutSideTables
	case Pending:
		return coordination.LayoutPending
	}
	return coordination.LayoutLeaseTable
}
