package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// SIGTERM hands every lease over at once: the worker releases them, and the
// other worker holds all four well within the failover time (10s here, the
// KCL default), instead of waiting for them to expire.
func TestRunGracefulShutdownHandsLeasesOverWithoutFailoverWait(t *testing.T) {
	s := newE2EStack(t, 4)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	args := func(id string) []string {
		return append(runArgs(s, id, "--exec", `cat >> "$OUT"`), "--failover-time", "10s", "--taker-interval", "500ms")
	}
	a := startWorker(t, "A", []string{"OUT=" + out}, args("A")...)
	b := startWorker(t, "B", []string{"OUT=" + out}, args("B")...)
	eventuallyE2E(t, 60*time.Second, "A and B to hold two leases each", func() bool {
		o := s.owners(t)
		return o["A"] == 2 && o["B"] == 2
	})
	// A worker learns that a lease was stolen from it at its next renewal,
	// up to a renew interval (3.3s) later, and handles its shard until then:
	// let that settle, so that the count below sees only the handover.
	time.Sleep(3500 * time.Millisecond)
	s.putRound(t, keyNames(40), 0)
	eventuallyE2E(t, 30*time.Second, "40 records", func() bool { return len(records(t, out)) >= 40 })

	a.signal(t, syscall.SIGTERM)
	if code := a.exitCode(t, 30*time.Second); code != 0 {
		t.Fatalf("A exited %d after SIGTERM, want 0", code)
	}
	stopped := time.Now()
	eventuallyE2E(t, 8*time.Second, "B to hold all four leases before A's would expire", func() bool { return s.owners(t)["B"] == 4 })
	t.Logf("B held all leases %s after A exited (failover time 10s)", time.Since(stopped).Round(time.Millisecond))
	if !strings.Contains(a.logs.String(), "every lease released") {
		t.Error("A's log does not say it released its leases")
	}
	s.putRound(t, keyNames(40), 1)
	eventuallyE2E(t, 30*time.Second, "80 records", func() bool { return len(records(t, out)) >= 80 })
	b.signal(t, syscall.SIGINT)
	if code := b.exitCode(t, 30*time.Second); code != 0 {
		t.Fatalf("B exited %d after SIGINT, want 0", code)
	}
	if got := records(t, out); len(got) != 80 {
		t.Fatalf("%d records handled, want 80: a graceful handover handles nothing twice", len(got))
	}
}

// A second signal stops at once with exit 130: the running handler is
// killed and the lease is not released (nor checkpointed).
func TestRunSecondSignalExitsAtOnce(t *testing.T) {
	s := newE2EStack(t, 1)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	s.putRound(t, keyNames(3), 0)
	w := startWorker(t, "w", []string{"OUT=" + out}, runArgs(s, "w", "--exec", `touch "$OUT.started"; sleep 60; cat >> "$OUT"`)...)
	eventuallyE2E(t, 30*time.Second, "the handler to start", func() bool { _, err := os.Stat(out + ".started"); return err == nil })
	w.signal(t, syscall.SIGTERM)
	time.Sleep(300 * time.Millisecond) // the first signal waits for the handler (grace 30s)
	select {
	case <-w.done:
		t.Fatal("the first signal did not wait for the running handler")
	default:
	}
	w.signal(t, syscall.SIGTERM)
	if code := w.exitCode(t, 5*time.Second); code != 130 {
		t.Fatalf("exit %d after a second signal, want 130", code)
	}
	if !strings.Contains(w.logs.String(), "worker stopped at once") {
		t.Error("no explanation of the forced stop")
	}
	l := s.leases(t)["shardId-000000000000"]
	if l.LeaseOwner != "w" || l.Checkpoint.SequenceNumber != "TRIM_HORIZON" {
		t.Fatalf("lease owner %q checkpoint %s; want still w's (not released) and not checkpointed", l.LeaseOwner, l.Checkpoint.SequenceNumber)
	}
}

// A lease table of a KCL 3.x application is not refused any more: the
// worker follows the leader, says so with the evidence, and takes nothing
// itself. A missing table without --create-table names the flag.
func TestRunKCL3TableAndMissingTable(t *testing.T) {
	s := newE2EStack(t, 1)
	_, err := s.ddb.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:   aws.String(s.app),
		BillingMode: ddbtypes.BillingModePayPerRequest,
		KeySchema:   []ddbtypes.KeySchemaElement{{AttributeName: aws.String("leaseKey"), KeyType: ddbtypes.KeyTypeHash}},
		AttributeDefinitions: []ddbtypes.AttributeDefinition{
			{AttributeName: aws.String("leaseKey"), AttributeType: ddbtypes.ScalarAttributeTypeS},
			{AttributeName: aws.String("leaseOwner"), AttributeType: ddbtypes.ScalarAttributeTypeS},
		},
		GlobalSecondaryIndexes: []ddbtypes.GlobalSecondaryIndex{{
			IndexName: aws.String("LeaseOwnerToLeaseKeyIndex"),
			KeySchema: []ddbtypes.KeySchemaElement{{AttributeName: aws.String("leaseOwner"), KeyType: ddbtypes.KeyTypeHash},
				{AttributeName: aws.String("leaseKey"), KeyType: ddbtypes.KeyTypeRange}},
			Projection: &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeKeysOnly},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	w := startWorker(t, "w", nil, "run", "--app", s.app, "--stream", s.stream, "--exec", "cat", "--log-format", "json")
	eventuallyE2E(t, 30*time.Second, "the mode logged", func() bool { return strings.Contains(w.logs.String(), "lease assignment mode") })
	if logs := w.logs.String(); !strings.Contains(logs, `"assignment":"leader"`) || !strings.Contains(logs, "LeaseOwnerToLeaseKeyIndex") {
		t.Fatalf("the start-up log does not say leader mode and why:\n%s", logs)
	}
	w.signal(t, syscall.SIGTERM)
	if code := w.exitCode(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM on a KCL 3.x table, want 0", code)
	}

	w = startWorker(t, "w2", nil, "run", "--app", s.app+"-missing", "--stream", s.stream, "--exec", "cat")
	if code := w.exitCode(t, 30*time.Second); code != 1 {
		t.Fatalf("exit %d on a missing table, want 1", code)
	}
	if !strings.Contains(w.logs.String(), "--create-table") {
		t.Fatalf("stderr does not name --create-table:\n%s", w.logs.String())
	}
}
