package cmd

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/internal/testenv/kcl3fleet"
	"github.com/kcltool/kcltool/leasecore"
)

func putOwnedLease(t *testing.T, ddb *dynamodb.Client, table, key, owner string) {
	t.Helper()
	l := leasecore.Lease{LeaseKey: key, LeaseOwner: owner, LeaseCounter: 3, Checkpoint: leasecore.SequenceNumber{SequenceNumber: "TRIM_HORIZON"}}
	if _, err := ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: leasecore.EncodeLease(l)}); err != nil {
		t.Fatal(err)
	}
}

// TestMigrationStatusStaleWorker: a Java-style fleet upgrading from 2.x
// (cv UPGRADE_FROM_2X) where w2 holds a lease and its metrics are 5
// minutes old: the leader cannot flip cv, status names w2 and exits 3.
func TestMigrationStatusStaleWorker(t *testing.T) {
	t.Parallel()
	ddb := emulator.DynamoDB(t)
	f := kcl3fleet.Setup(t, ddb, kcl3fleet.Layout{Kind: kcl3fleet.NewApp, ClientVersion: coordination.ClientVersionUpgradeFrom2X})
	putOwnedLease(t, ddb, f.Tables.Lease, "shardId-000000000000", "w1")
	putOwnedLease(t, ddb, f.Tables.Lease, "shardId-000000000001", "w2")
	m := kcl3fleet.Metrics{Stats: map[string][]float64{"C": {10}}, Range: map[string][]int64{"C": {100}}}
	if err := f.PutWorkerMetrics(context.Background(), "w1", m, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := f.PutWorkerMetrics(context.Background(), "w2", m, time.Now().Add(-5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runBinary(t, nil, "migration", "status", "--app", f.Tables.Lease)
	if code != 3 {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"blocked by w2: owns 1 lease, no worker metrics newer than 1m0s", "without: w2", "CLIENT_VERSION_UPGRADE_FROM_2X → CLIENT_VERSION_3X_WITH_ROLLBACK (by the leader)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestMigrationStatusGolden pins -o json for a plain 2.x table (next:
// `migration start`) and a 3.x one whose migrations are final:
// exit 0 for both.
func TestMigrationStatusGolden(t *testing.T) {
	t.Parallel()
	ddb := emulator.DynamoDB(t)
	plain := emulator.Name(t, "m2x")
	emulator.CreateLeaseTable(t, ddb, plain)
	putOwnedLease(t, ddb, plain, "shardId-000000000000", "w1")
	final := kcl3fleet.Setup(t, ddb, kcl3fleet.Layout{Kind: kcl3fleet.Complete})
	putOwnedLease(t, ddb, final.Tables.Lease, "shardId-000000000000", "w1")
	for _, tc := range []struct{ table, golden string }{{plain, "migration-status-2x.json"}, {final.Tables.Lease, "migration-status-final.json"}} {
		out, errOut, code := runBinary(t, nil, "migration", "status", "--app", tc.table, "-o", "json")
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", tc.golden, code, out, errOut)
		}
		out = strings.ReplaceAll(out, tc.table, "APP")
		// mts and tm's mts are written by Setup at the time of the test.
		out = mtsRE.ReplaceAllString(out, `"$1": "TIME"`)
		golden(t, tc.golden, out)
	}
}

var mtsRE = regexp.MustCompile(`"(mts|tmMts)": "[^"]+"`)
