package cmd

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/internal/testenv/proctest"
	"github.com/kcltool/kcltool/leasecore"
)

// `leases owners -w` in table format: the owners table first, then one
// timestamped line per changed worker, naming the fields from and to; a
// worker that appears is ADDED with its values. Ctrl-C (the context) ends
// it with 130.
func TestWatchTextLines(t *testing.T) {
	table := seedTable(t)
	ddb := emulator.DynamoDB(t)
	for _, id := range []string{"shardId-000000000000", "shardId-000000000001"} {
		l := leasecore.Lease{LeaseKey: id, LeaseOwner: "worker-a", Checkpoint: leasecore.SequenceNumber{SequenceNumber: leasecore.TRIM_HORIZON}}
		if _, err := leasecore.CreateLease(context.Background(), ddb, table, l); err != nil {
			t.Fatal(err)
		}
	}
	f, _, _ := testFactory(t, false, nil)
	out, errOut := &proctest.Output{}, &proctest.Output{}
	f.IO.Out, f.IO.ErrOut = out, errOut
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- Run(ctx, f, []string{"leases", "owners", "--app", table, "-w", "--interval", "1s"}) }()
	eventuallyE2E(t, 60*time.Second, "the owners table and the watch line on stderr", func() bool {
		return strings.Contains(out.String(), "worker-a") && strings.Contains(errOut.String(), "changes follow")
	})
	_, err := ddb.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(table),
		Key:                       map[string]ddbtypes.AttributeValue{"leaseKey": &ddbtypes.AttributeValueMemberS{Value: "shardId-000000000000"}},
		UpdateExpression:          aws.String("SET leaseOwner = :o"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":o": &ddbtypes.AttributeValueMemberS{Value: "worker-b"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	modified := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\dZ  MODIFIED  worker-a  leases 2 -> 1, shards shardId-000000000000,shardId-000000000001 -> shardId-000000000001$`)
	added := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\dZ  ADDED     worker-b  leases 1, shards shardId-000000000000, leader false$`)
	eventuallyE2E(t, 60*time.Second, "the change lines", func() bool {
		return modified.MatchString(out.String()) && added.MatchString(out.String())
	})
	cancel()
	select {
	case code := <-done:
		if code != cmdutil.ExitInterrupted {
			t.Errorf("exit %d after Ctrl-C, want 130; stderr:\n%s", code, errOut)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the watch did not end with its context")
	}
	if t.Failed() {
		t.Logf("stdout:\n%s", out)
	}
}

// --watch refuses what it cannot do, as usage errors (exit 2), before any
// AWS call: the lag checks (a watch has no exit code to fail with), a
// sample, non-lease items, and an interval under a second.
func TestWatchUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
		env  map[string]string
	}{
		// A variable left set is named, so the user knows what to unset.
		{[]string{"leases", "ls", "--app", "a", "-w"}, "--watch and KCLTOOL_SAMPLE (--sample from the environment) cannot go together", map[string]string{"KCLTOOL_SAMPLE": "1s"}},
		{[]string{"lag", "--app", "a", "--stream", "s", "-w", "--max-behind", "1m"}, "--watch cannot go with --fail-on or --max-behind", nil},
		{[]string{"checkpoint", "diff", "--app", "a", "--stream", "s", "-w", "--fail-on", "blocked"}, "--watch cannot go with --fail-on or --max-behind", nil},
		{[]string{"leases", "ls", "--app", "a", "-w", "--sample", "1s"}, "--watch and --sample cannot go together", nil},
		{[]string{"leases", "owners", "--app", "a", "-w", "--sample", "1s"}, "--watch and --sample cannot go together", nil},
		{[]string{"leases", "ls", "--app", "a", "-w", "--non-leases"}, "--watch and --non-leases cannot go together", nil},
		{[]string{"leases", "ls", "--app", "a", "-w", "--interval", "100ms"}, "--interval must be at least 1s", nil},
	} {
		f, _, errOut := testFactory(t, false, c.env)
		if code := Run(context.Background(), f, c.args); code != cmdutil.ExitUsage || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit 2 and %q", c.args, code, errOut, c.want)
		}
	}
}
