package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// lostResponseTable is a lease table of n unowned leases at checkpoint cp,
// leaseCounter 3.
func lostResponseTable(t *testing.T, n int, cp string) string {
	t.Helper()
	ddb := emulator.DynamoDB(t)
	table := emulator.Name(t, "app")
	emulator.CreateLeaseTable(t, ddb, table)
	for i := range n {
		l := leasecore.Lease{LeaseKey: shardID(i), LeaseCounter: 3, Checkpoint: leasecore.SequenceNumber{SequenceNumber: cp}}
		if _, err := ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: leasecore.EncodeLease(l)}); err != nil {
			t.Fatal(err)
		}
	}
	return table
}

// checkAllApplied checks a plan printed with -o json after --execute: every
// row applied, at least one confirmed by a read-back, and each lease in the
// table at cp with exactly one write applied (leaseCounter 4).
func checkAllApplied(t *testing.T, out string, table string, n int, cp string) {
	t.Helper()
	rows := jsonRows(t, out)
	if len(rows) != n {
		t.Fatalf("%d rows, want %d:\n%s", len(rows), n, out)
	}
	confirmed := 0
	for _, r := range rows {
		if r["result"] != "applied" {
			t.Errorf("%s: result %v (%v), want applied", r["leaseKey"], r["result"], r["detail"])
		}
		switch r["confirmedBy"] {
		case "read-back":
			confirmed++
		case nil:
		default:
			t.Errorf("%s: confirmedBy %v", r["leaseKey"], r["confirmedBy"])
		}
	}
	if confirmed == 0 {
		t.Errorf("no row confirmed by a read-back, though responses were lost:\n%s", out)
	}
	ddb := emulator.DynamoDB(t)
	for i := range n {
		l, ok, err := leasecore.GetLease(context.Background(), ddb, table, shardID(i), true)
		if err != nil || !ok || l.Checkpoint.SequenceNumber != cp || l.LeaseCounter != 4 {
			t.Errorf("%s in the table: %+v (%v, %v); want checkpoint %s written once (leaseCounter 4)", shardID(i), l, ok, err, cp)
		}
	}
}

// With 30% of the write responses lost (the write applied, its answer
// dropped, so the SDK's retry fails its condition on our own write), a
// reset reports every lease applied, the lost ones confirmed by a
// read-back, and exits 0; the table holds the new checkpoints.
func TestResetWithLostWriteResponses(t *testing.T) {
	const n = 20
	table := lostResponseTable(t, n, "100")
	var csv strings.Builder
	for i := range n {
		csv.WriteString(shardID(i) + ",TRIM_HORIZON\n")
	}
	file := filepath.Join(t.TempDir(), "positions.csv")
	if err := os.WriteFile(file, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	proxy := emulator.NewFaultProxy(t, emulator.DynamoDBEndpoint(t), emulator.LoseResponse, 0.3, "UpdateItem", 13)
	out, errOut, code := kcltoolEnv(t, []string{"AWS_ENDPOINT_URL_DYNAMODB=" + proxy.URL},
		"checkpoint", "reset", "--app", table, "--from-file", file, "--execute", "--sample", "100ms", "--backup-dir", t.TempDir(), "-o", "json")
	if proxy.Injected.Load() == 0 {
		t.Fatal("the proxy lost no response: the test proves nothing")
	}
	t.Logf("responses lost: %d of %d UpdateItem calls", proxy.Injected.Load(), proxy.Requests()["UpdateItem"])
	if code != 0 {
		t.Errorf("exit %d, want 0\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "applied 20") || !strings.Contains(errOut, "skipped 0") {
		t.Errorf("stderr:\n%s", errOut)
	}
	checkAllApplied(t, out, table, n, "TRIM_HORIZON")
}

// The same for an import: its PutItems lose 30% of their responses.
func TestImportWithLostWriteResponses(t *testing.T) {
	const n = 20
	table := lostResponseTable(t, n, "100")
	file := filepath.Join(t.TempDir(), "export.json")
	if _, errOut, code := kcltoolEnv(t, nil, "checkpoint", "export", "--app", table, "--file", file); code != 0 {
		t.Fatalf("export exit %d: %s", code, errOut)
	}
	ddb := emulator.DynamoDB(t)
	for i := range n { // moved on since the export, counter back at 3
		l := leasecore.Lease{LeaseKey: shardID(i), LeaseCounter: 3, Checkpoint: leasecore.SequenceNumber{SequenceNumber: "TRIM_HORIZON"}}
		if _, err := ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: leasecore.EncodeLease(l)}); err != nil {
			t.Fatal(err)
		}
	}
	proxy := emulator.NewFaultProxy(t, emulator.DynamoDBEndpoint(t), emulator.LoseResponse, 0.3, "PutItem", 13)
	out, errOut, code := kcltoolEnv(t, []string{"AWS_ENDPOINT_URL_DYNAMODB=" + proxy.URL},
		"checkpoint", "import", "--app", table, "--file", file, "--execute", "--sample", "100ms", "--backup-dir", t.TempDir(), "-o", "json")
	if proxy.Injected.Load() == 0 {
		t.Fatal("the proxy lost no response: the test proves nothing")
	}
	t.Logf("responses lost: %d of %d PutItem calls", proxy.Injected.Load(), proxy.Requests()["PutItem"])
	if code != 0 {
		t.Errorf("exit %d, want 0\n%s", code, errOut)
	}
	checkAllApplied(t, out, table, n, "100")
}
