package inspect

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
	"github.com/kcltool/kcltool/leasecore"
)

func TestMain(m *testing.M) { os.Exit(emulator.Main(m)) }

// creatingIndex answers DescribeTable with the lease table's index
// CREATING: dynalite (with scripts/dynalite-gsi.cjs) keeps an added index
// CREATING only for --updateTableMs, too short to read reliably, so the
// state is played by a wrapper.
type creatingIndex struct {
	coordination.ReadAPI
	table string
}

func (x creatingIndex) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	out, err := x.ReadAPI.DescribeTable(ctx, in, opts...)
	if err == nil && aws.ToString(in.TableName) == x.table {
		for i := range out.Table.GlobalSecondaryIndexes {
			out.Table.GlobalSecondaryIndexes[i].IndexStatus = ddbtypes.IndexStatusCreating
		}
	}
	return out, err
}

// ownedLease puts a lease held by owner, as a 2.x taker leaves it.
func ownedLease(t *testing.T, ddb *dynamodb.Client, table, key, owner string) {
	t.Helper()
	l := leasecore.Lease{LeaseKey: key, LeaseOwner: owner, LeaseCounter: 3, Checkpoint: leasecore.SequenceNumber{SequenceNumber: "TRIM_HORIZON"}}
	if _, err := ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: leasecore.EncodeLease(l)}); err != nil {
		t.Fatal(err)
	}
}

// upgradeFleet is a 2.x fleet deployed with COMPATIBLE_WITH_2X: cv
// UPGRADE_FROM_2X written now, w1 and w2 holding a lease each and w1
// reporting fresh metrics.
func upgradeFleet(t *testing.T, w2Metrics time.Time) *kcl3fleet.Fleet {
	t.Helper()
	ddb := emulator.DynamoDB(t)
	f := kcl3fleet.Setup(t, ddb, kcl3fleet.Layout{Kind: kcl3fleet.NewApp, ClientVersion: coordination.ClientVersionUpgradeFrom2X})
	ownedLease(t, ddb, f.Tables.Lease, "shardId-000000000000", "w1")
	ownedLease(t, ddb, f.Tables.Lease, "shardId-000000000001", "w2")
	ctx := context.Background()
	m := kcl3fleet.Metrics{Stats: map[string][]float64{"C": {10}}, Range: map[string][]int64{"C": {100}}}
	if err := f.PutWorkerMetrics(ctx, "w1", m, time.Now()); err != nil {
		t.Fatal(err)
	}
	if !w2Metrics.IsZero() {
		if err := f.PutWorkerMetrics(ctx, "w2", m, w2Metrics); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func readMigration(t *testing.T, api coordination.ReadAPI, tables coordination.Tables) *MigrationStatus {
	t.Helper()
	st, err := ReadMigration(context.Background(), api, tables, clock.RealClock())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func cvStepOf(t *testing.T, st *MigrationStatus) MigrationStep {
	t.Helper()
	for _, s := range st.Steps {
		if strings.HasPrefix(s.Name, "cv "+coordination.ClientVersionUpgradeFrom2X) {
			return s
		}
	}
	t.Fatalf("no cv step in %+v", st.Steps)
	return MigrationStep{}
}

// TestReadMigrationStaleWorker: a lease owner whose metrics are 5 minutes
// old holds the flip (MigrationReadyMonitor: every lease owner active),
// and is named.
func TestReadMigrationStaleWorker(t *testing.T) {
	t.Parallel()
	f := upgradeFleet(t, time.Now().Add(-5*time.Minute))
	st := readMigration(t, emulator.DynamoDB(t), f.Tables)
	s := cvStepOf(t, st)
	if !st.Blocked() || len(s.Workers) != 1 || s.Workers[0] != "w2" {
		t.Fatalf("blocked %v, workers %v, blockers %v", st.Blocked(), s.Workers, s.Blockers)
	}
	if got := strings.Join(s.Blockers, "\n"); !strings.Contains(got, "w2: owns 1 lease, no worker metrics newer than 1m0s") {
		t.Errorf("blockers:\n%s", got)
	}
	if c := st.Checks[1]; c.OK || !strings.Contains(c.Detail, "without: w2") {
		t.Errorf("metrics check %+v", c)
	}
}

// TestReadMigrationIndexCreating: every worker ready, the index still
// CREATING: the flip waits for ACTIVE.
func TestReadMigrationIndexCreating(t *testing.T) {
	t.Parallel()
	f := upgradeFleet(t, time.Now())
	st := readMigration(t, creatingIndex{emulator.DynamoDB(t), f.Tables.Lease}, f.Tables)
	s := cvStepOf(t, st)
	if !st.Blocked() || len(s.Blockers) != 1 || !strings.Contains(s.Blockers[0], "CREATING, not ACTIVE") {
		t.Fatalf("blockers %v", s.Blockers)
	}
	if st.Checks[0].OK {
		t.Errorf("index check %+v", st.Checks[0])
	}
}

// TestReadMigrationReady: nothing blocks; the KCL's own wait (1 min check
// + 10 min stability) since cv was written is still running.
func TestReadMigrationReady(t *testing.T) {
	t.Parallel()
	f := upgradeFleet(t, time.Now())
	st := readMigration(t, emulator.DynamoDB(t), f.Tables)
	s := cvStepOf(t, st)
	if st.Blocked() {
		t.Fatalf("blocked: %v", s.Blockers)
	}
	if s.WaitLeft <= 10*time.Minute || s.WaitLeft > 11*time.Minute {
		t.Errorf("wait left %s, want just under 11m", s.WaitLeft)
	}
	for _, c := range st.Checks {
		if !c.OK {
			t.Errorf("check %+v", c)
		}
	}
}

// TestReadMigrationFinal: a 3.x application with tm COMPLETE has nothing
// pending.
func TestReadMigrationFinal(t *testing.T) {
	t.Parallel()
	ddb := emulator.DynamoDB(t)
	f := kcl3fleet.Setup(t, ddb, kcl3fleet.Layout{Kind: kcl3fleet.Complete})
	ownedLease(t, ddb, f.Tables.Lease, "shardId-000000000000", "w1")
	st := readMigration(t, ddb, f.Tables)
	if len(st.Steps) != 0 || st.Blocked() || len(st.Checks) != 0 {
		t.Fatalf("steps %+v checks %+v", st.Steps, st.Checks)
	}
	if st.Facts.Coord.ClientVersion != coordination.ClientVersion3X || st.Facts.Coord.Layout != coordination.LayoutLeaseTable {
		t.Errorf("coord %+v", st.Facts.Coord)
	}
}

// TestReadMigration2x: a plain 2.x table: no 3.x state, nothing blocks.
func TestReadMigration2x(t *testing.T) {
	t.Parallel()
	ddb := emulator.DynamoDB(t)
	table := emulator.Name(t, "m2x")
	emulator.CreateLeaseTable(t, ddb, table)
	ownedLease(t, ddb, table, "shardId-000000000000", "w1")
	st := readMigration(t, ddb, coordination.DefaultTables(table, ""))
	if len(st.Steps) != 0 || st.Blocked() || st.Facts.Coord.Layout != coordination.LayoutNone || len(st.Owners) != 1 {
		t.Fatalf("%+v", st)
	}
}
