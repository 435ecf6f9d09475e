package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// A lease written with wrong attribute types is a critical finding whose
// fix is an aws CLI command: run as printed (through the SDK), it makes the
// lease decode again, and run a second time, its condition refuses it.
func TestDoctorMalformedLeaseIsCriticalWithRepairCommand(t *testing.T) {
	t.Parallel()
	good := leasecore.EncodeLease(leasecore.Lease{LeaseKey: "shardId-000000000000", LeaseCounter: 3, Checkpoint: leasecore.SequenceNumber{SequenceNumber: leasecore.TRIM_HORIZON}})
	// leaseCounter as S "7", parentShardId as S: the KCL's types are N and SS.
	typed := leasecore.EncodeLease(leasecore.Lease{LeaseKey: "shardId-000000000001", LeaseOwner: "w'1", Checkpoint: leasecore.SequenceNumber{SequenceNumber: "49590338271490256608559692538361571095921575989136588898"}})
	typed[leasecore.AttrLeaseCounter] = &types.AttributeValueMemberS{Value: "7"}
	typed[leasecore.AttrParentShardID] = &types.AttributeValueMemberS{Value: "shardId-000000000000"}
	// No checkpoint at all: nothing to recover it from.
	lost := leasecore.EncodeLease(leasecore.Lease{LeaseKey: "shardId-000000000002", LeaseCounter: 2})
	table := seedTable(t, good, typed, lost)

	rep, out, code := runDoctorJSON(t, nil, "--app", table, "--failover-time", "1s", "--window", "1s", "--no-cloudwatch")
	if code != 3 {
		t.Errorf("exit %d, want 3", code)
	}
	fixes := map[string]string{}
	for _, f := range rep.Findings {
		if f.ID != "malformed-items" {
			continue
		}
		if f.Severity != "critical" || len(f.Evidence.Shards) != 1 {
			t.Errorf("finding %s %v: %s", f.Severity, f.Evidence.Shards, f.Summary)
			continue
		}
		fixes[f.Evidence.Shards[0]] = f.Fix
		if !strings.Contains(strings.Join(f.Evidence.Lines, "\n"), `"leaseKey":{"S":"`+f.Evidence.Shards[0]+`"}`) {
			t.Errorf("evidence does not show the item: %q", f.Evidence.Lines)
		}
	}
	if len(fixes) != 2 {
		t.Fatalf("want a malformed-items finding for each of the 2 malformed leases:\n%s", out)
	}

	ddb := emulator.DynamoDB(t)
	put := commandIn(t, fixes["shardId-000000000001"], "put-item")
	if put.table != table {
		t.Errorf("--table-name %q, want %q", put.table, table)
	}
	if err := put.run(ddb); err != nil {
		t.Fatalf("the printed repair failed: %v\n%s", err, fixes["shardId-000000000001"])
	}
	got, found, err := leasecore.GetLease(context.Background(), ddb, table, "shardId-000000000001", true)
	if err != nil || !found {
		t.Fatalf("after the repair the lease does not decode: found=%v err=%v", found, err)
	}
	if got.LeaseCounter != 7 || got.LeaseOwner != "w'1" || len(got.ParentShardIDs) != 1 || got.ParentShardIDs[0] != "shardId-000000000000" ||
		got.Checkpoint.SequenceNumber != "49590338271490256608559692538361571095921575989136588898" {
		t.Errorf("repaired lease %+v lost a value", got)
	}
	// The item is no longer as doctor read it: the same command is refused.
	var ccf *types.ConditionalCheckFailedException
	if err := put.run(ddb); !errors.As(err, &ccf) {
		t.Errorf("the repair run twice: %v, want ConditionalCheckFailedException", err)
	}

	// Unrecoverable: the fix says so and offers a conditional delete.
	if fix := fixes["shardId-000000000002"]; !strings.Contains(fix, "cannot be recovered") {
		t.Errorf("fix %q", fix)
	}
	del := commandIn(t, fixes["shardId-000000000002"], "delete-item")
	if err := del.run(ddb); err != nil {
		t.Fatalf("the printed delete failed: %v", err)
	}
	if _, found, _ := leasecore.GetLease(context.Background(), ddb, table, "shardId-000000000002", true); found {
		t.Error("the item is still there")
	}
}

// awsCommand is an `aws dynamodb put-item|delete-item` line as doctor
// prints it, parsed.
type awsCommand struct {
	op, table string
	flags     map[string]string
}

// commandIn finds the aws command in a fix and splits it as sh would.
func commandIn(t *testing.T, fix, op string) awsCommand {
	t.Helper()
	i := strings.Index(fix, "aws dynamodb "+op+" ")
	if i < 0 {
		t.Fatalf("no aws dynamodb %s command in the fix: %q", op, fix)
	}
	words := shellWords(t, strings.TrimSpace(fix[i:]))
	c := awsCommand{op: words[2], flags: map[string]string{}}
	for j := 3; j+1 < len(words); j += 2 {
		c.flags[words[j]] = words[j+1]
	}
	c.table = c.flags["--table-name"]
	return c
}

// shellWords splits a command line of bare words and '…' quoted parts.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			cur.WriteByte(c)
		case c == '\'':
			quoted, inWord = true, true
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		case c == ' ' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unterminated quote in %q", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// run sends what the aws CLI would send for the command.
func (c awsCommand) run(ddb *dynamodb.Client) error {
	var names map[string]string
	if err := json.Unmarshal([]byte(c.flags["--expression-attribute-names"]), &names); err != nil {
		return err
	}
	var values map[string]types.AttributeValue
	if v := c.flags["--expression-attribute-values"]; v != "" {
		var err error
		if values, err = leasecore.UnmarshalItemJSON([]byte(v)); err != nil {
			return err
		}
	}
	cond := aws.String(c.flags["--condition-expression"])
	switch c.op {
	case "put-item":
		item, err := leasecore.UnmarshalItemJSON([]byte(c.flags["--item"]))
		if err != nil {
			return err
		}
		_, err = ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(c.table), Item: item,
			ConditionExpression: cond, ExpressionAttributeNames: names, ExpressionAttributeValues: values})
		return err
	case "delete-item":
		key, err := leasecore.UnmarshalItemJSON([]byte(c.flags["--key"]))
		if err != nil {
			return err
		}
		_, err = ddb.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(c.table), Key: key,
			ConditionExpression: cond, ExpressionAttributeNames: names, ExpressionAttributeValues: values})
		return err
	}
	return errors.New("unknown operation " + c.op)
}
