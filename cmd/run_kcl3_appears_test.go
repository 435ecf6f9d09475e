package cmd

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/testenv/testfixtures"
	"github.com/kcltool/kcltool/leasecore"
)

// A KCL 3.x application that appears while run works stops it: nothing
// more is taken, every lease is released, and it exits 1 saying why. The
// 3.x markers: the 3.5 items in the lease table (testdata/kcl), or the
// 3.0 - 3.4 companion table, named after the application even when --table
// names the lease table differently.
func TestRunStopsWhenKCL3Appears(t *testing.T) {
	for _, tc := range []struct {
		name     string
		table    string // --table, "" for the app name
		appear   func(t *testing.T, s e2eStack, table string)
		evidence string
	}{
		{"3.5 items in the lease table", "", putKCL35Items, `KCL 3.x item "Leader"`},
		{"CoordinatorState table named after the app", "-leases", createCoordinatorState, "-CoordinatorState exists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newE2EStack(t, 2)
			table := s.app + tc.table
			w := startWorker(t, "A", nil, runArgs(s, "A", "--table", table, "--exec", "cat >/dev/null")...)
			eventuallyE2E(t, 60*time.Second, "A to hold both leases", func() bool { return ownersOf(t, s, table)["A"] == 2 })

			tc.appear(t, s, table)
			if code := w.exitCode(t, 30*time.Second); code != 1 {
				t.Fatalf("exit %d after a KCL 3.x application appeared, want 1", code)
			}
			logs := w.logs.String()
			for _, want := range []string{"a KCL 3.x application appeared on lease table", tc.evidence, "released the leases it held"} {
				if !strings.Contains(logs, want) {
					t.Errorf("stderr lacks %q:\n%s", want, logs)
				}
			}
			if o := ownersOf(t, s, table); len(o) != 0 {
				t.Errorf("leases still owned after the stop: %v", o)
			}
		})
	}
}

func ownersOf(t *testing.T, s e2eStack, table string) map[string]int {
	t.Helper()
	res, err := leasecore.ScanTable(context.Background(), s.ddb, table, leasecore.ScanOptions{ConsistentRead: true})
	if err != nil {
		if strings.Contains(err.Error(), "ResourceNotFound") {
			return nil
		}
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, l := range res.Leases {
		if l.LeaseOwner != "" {
			out[l.LeaseOwner]++
		}
	}
	return out
}

func putKCL35Items(t *testing.T, s e2eStack, table string) {
	t.Helper()
	for _, line := range bytes.Split(bytes.TrimSpace(testfixtures.Read(t, "f6-kcl35-non-lease.jsonl")), []byte("\n")) {
		item, err := leasecore.UnmarshalItemJSON(line)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
}

func createCoordinatorState(t *testing.T, s e2eStack, _ string) {
	t.Helper()
	_, err := s.ddb.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(s.app + "-CoordinatorState"),
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("key"), KeyType: ddbtypes.KeyTypeHash}},
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("key"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// At start too, the 3.0 - 3.4 companion table is looked for under the
// application name when --table names the lease table differently.
func TestRunRefusesKCL3CompanionUnderAppName(t *testing.T) {
	s := newE2EStack(t, 1)
	createCoordinatorState(t, s, "")
	w := startWorker(t, "A", nil, runArgs(s, "A", "--table", s.app+"-leases", "--exec", "cat >/dev/null")...)
	if code := w.exitCode(t, 30*time.Second); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if logs := w.logs.String(); !strings.Contains(logs, "belongs to a KCL 3.x application") || !strings.Contains(logs, s.app+"-CoordinatorState exists") {
		t.Fatalf("stderr does not explain the refusal:\n%s", logs)
	}
	if o := ownersOf(t, s, s.app+"-leases"); len(o) != 0 {
		t.Fatalf("leases taken: %v", o)
	}
}
