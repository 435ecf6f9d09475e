package cmd

import (
	"bytes"
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/testenv/testfixtures"
	"github.com/kcltool/kcltool/leasecore"
)

// A KCL 3.x application that appears while run works switches it to the
// leader's assignment at the next state check (every
// --shard-sync-interval): it keeps running, keeps the leases it holds
// (renewed under the 3.x rules; none is taken any more) and logs the
// switch with the evidence. The 3.x markers: the 3.5 items in the lease
// table (testdata/kcl), or the 3.0 - 3.4 companion table with its
// Migration3.0 item, named after the application even when --table names
// the lease table differently.
func TestRunFollowsKCL3Appearing(t *testing.T) {
	t.Parallel() // long, and mostly waiting on the local servers: it overlaps others on CI's two cores
	for _, tc := range []struct {
		name     string
		table    string // --table, "" for the app name
		appear   func(t *testing.T, s e2eStack, table string)
		evidence string
	}{
		{"3.5 items in the lease table", "", putKCL35Items, "cv=CLIENT_VERSION_3X"},
		{"CoordinatorState table named after the app", "-leases", createCoordinatorStateCV3X, "-CoordinatorState"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newE2EStack(t, 2)
			table := s.app + tc.table
			w := startWorker(t, "A", nil, runArgs(s, "A", "--table", table, "--exec", "cat >/dev/null")...)
			eventuallyE2E(t, 60*time.Second, "A to hold both leases", func() bool { return ownersOf(t, s, table)["A"] == 2 })

			tc.appear(t, s, table)
			eventuallyE2E(t, 30*time.Second, "the switch logged", func() bool {
				return strings.Contains(w.logs.String(), "KCL 3.x state changed")
			})
			// Two more state checks: still running, still holding.
			time.Sleep(5 * time.Second)
			select {
			case <-w.done:
				t.Fatalf("run exited after a KCL 3.x application appeared: %v\n%s", w.err, w.logs.String())
			default:
			}
			var line string
			for _, l := range strings.Split(w.logs.String(), "\n") {
				if strings.Contains(l, "KCL 3.x state changed") {
					line = l
				}
			}
			for _, want := range []string{`"assignment":"leader"`, tc.evidence} {
				if !strings.Contains(line, want) {
					t.Errorf("the switch's log line lacks %q: %s", want, line)
				}
			}
			if o := ownersOf(t, s, table); o["A"] != 2 {
				t.Errorf("leases after the switch: %v, want both still A's", o)
			}
			w.signal(t, syscall.SIGTERM)
			if code := w.exitCode(t, 30*time.Second); code != 0 {
				t.Fatalf("exit %d after SIGTERM", code)
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
	// Polled as emulator.CreateLeaseTable does: the SDK's default waits
	// 20 s before its second look, and the table is ACTIVE after 20 ms.
	waiter := dynamodb.NewTableExistsWaiter(s.ddb, fastTableWaiter)
	if err := waiter.Wait(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(s.app + "-CoordinatorState")}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// createCoordinatorStateCV3X is a KCL 3.0 - 3.4 application's companion
// table with its Migration3.0 item at CLIENT_VERSION_3X.
func createCoordinatorStateCV3X(t *testing.T, s e2eStack, table string) {
	t.Helper()
	createCoordinatorState(t, s, table)
	_, err := s.ddb.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(s.app + "-CoordinatorState"),
		Item: map[string]ddbtypes.AttributeValue{
			"key": &ddbtypes.AttributeValueMemberS{Value: "Migration3.0"}, "cv": &ddbtypes.AttributeValueMemberS{Value: "CLIENT_VERSION_3X"},
			"mb": &ddbtypes.AttributeValueMemberS{Value: "worker-b"}, "mts": &ddbtypes.AttributeValueMemberN{Value: "1750000000000"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// At start too, the 3.0 - 3.4 companion table is looked for under the
// application name when --table names the lease table differently: the
// worker starts following the leader, says so, and takes nothing itself.
func TestRunStartsKCL3FromCompanionUnderAppName(t *testing.T) {
	t.Parallel() // its own stream, tables and leader, no process-wide state; mostly waiting on lease and leader timings
	s := newE2EStack(t, 1)
	createCoordinatorStateCV3X(t, s, "")
	w := startWorker(t, "A", nil, runArgs(s, "A", "--table", s.app+"-leases", "--exec", "cat >/dev/null")...)
	eventuallyE2E(t, 30*time.Second, "the mode logged", func() bool { return strings.Contains(w.logs.String(), "lease assignment mode") })
	time.Sleep(5 * time.Second)
	logs := w.logs.String()
	var line string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "lease assignment mode") {
			line = l
		}
	}
	if !strings.Contains(line, `"assignment":"leader"`) || !strings.Contains(line, s.app+"-CoordinatorState") {
		t.Fatalf("the mode line does not say leader mode from the app's CoordinatorState table: %s", line)
	}
	if o := ownersOf(t, s, s.app+"-leases"); len(o) != 0 {
		t.Fatalf("leases taken without a leader: %v", o)
	}
	w.signal(t, syscall.SIGTERM)
	if code := w.exitCode(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
}
