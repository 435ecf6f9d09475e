package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// testFactory returns a Factory over buffers, reaching the local DynamoDB.
func testFactory(t *testing.T, tty bool, env map[string]string) (*cmdutil.Factory, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	base := map[string]string{
		"AWS_ENDPOINT_URL_DYNAMODB": emulator.DynamoDBEndpoint(t),
		"AWS_ACCESS_KEY_ID":         "local", "AWS_SECRET_ACCESS_KEY": "local",
		"AWS_REGION": emulator.Region, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
	}
	for k, v := range env {
		base[k] = v
	}
	for k, v := range base {
		t.Setenv(k, v) // the SDK's config loader reads the process environment
	}
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	io := &cmdutil.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut, OutTTY: tty, ErrTTY: tty}
	if tty {
		io.Width = 200 // a terminal has a width; tables fit it
	}
	return cmdutil.NewFactory(io, func(k string) string { return base[k] }), out, errOut
}

func seedTable(t *testing.T, items ...map[string]types.AttributeValue) string {
	t.Helper()
	c := emulator.DynamoDB(t)
	table := emulator.Name(t, "ls")
	emulator.CreateLeaseTable(t, c, table)
	for _, it := range items {
		if _, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	return table
}

func fixtureItem(t *testing.T, name string) map[string]types.AttributeValue {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixturesDir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	item, err := leasecore.UnmarshalItemJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	return item
}

// TestLsJSONKeepsEveryFixtureAttribute checks, attribute by attribute, that
// the JSON of each fixture lease carries exactly the fixture's attributes
// under the KCL names, with numbers as numbers and hash keys and sequence
// numbers as strings, plus the derived state.
func TestLsJSONKeepsEveryFixtureAttribute(t *testing.T) {
	for _, name := range []string{"f1-kcl2-active.json", "f2-kcl35-active.json", "f2b-kcl3-handoff.json",
		"f3-shard-end-parent.json", "f4-child-waiting.json", "f5-multistream.json"} {
		t.Run(name, func(t *testing.T) {
			item := fixtureItem(t, name)
			table := seedTable(t, item)
			f, out, errOut := testFactory(t, false, nil)
			if code := Run(context.Background(), f, []string{"leases", "ls", "--app", table, "-o", "json"}); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var got []map[string]any
			dec := json.NewDecoder(out)
			dec.UseNumber()
			if err := dec.Decode(&got); err != nil || len(got) != 1 {
				t.Fatalf("decode %q: %v (%d leases)", out, err, len(got))
			}
			obj := got[0]
			if _, ok := obj["state"].(string); !ok {
				t.Errorf("no state in %v", obj)
			}
			delete(obj, "state")
			// Every documented key is there; those the item does not
			// have are null (lists []), and only those.
			for _, key := range schemaPaths("leases ls") {
				v, ok := obj[key]
				if !ok && key != "state" {
					t.Errorf("key %q missing", key)
				}
				if l, isList := v.([]any); v == nil || isList && len(l) == 0 {
					if _, has := item[key]; has {
						t.Errorf("%s: fixture has it, JSON has %v", key, v)
					}
					delete(obj, key)
				}
			}
			// shardId is derived when the item has none (single-stream
			// leases): the shard id, which is the lease key there.
			if _, has := item["shardId"]; !has {
				if obj["shardId"] != obj["leaseKey"] {
					t.Errorf("shardId %v, want the lease key %v", obj["shardId"], obj["leaseKey"])
				}
				delete(obj, "shardId")
			}
			if len(obj) != len(item) {
				t.Errorf("JSON has %d attributes, fixture %d: %v", len(obj), len(item), obj)
			}
			for attr, av := range item {
				assertAttr(t, attr, av, obj[attr])
			}
		})
	}
}

func assertAttr(t *testing.T, attr string, av types.AttributeValue, got any) {
	t.Helper()
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		if s, ok := got.(string); !ok || s != v.Value {
			t.Errorf("%s: got %#v, want string %q", attr, got, v.Value)
		}
	case *types.AttributeValueMemberN:
		n, ok := got.(json.Number)
		want, _ := new(big.Float).SetString(v.Value)
		have, _ := new(big.Float).SetString(string(n))
		if !ok || have == nil || want.Cmp(have) != 0 {
			t.Errorf("%s: got %#v, want number %s", attr, got, v.Value)
		}
	case *types.AttributeValueMemberSS:
		arr, ok := got.([]any)
		if !ok || len(arr) != len(v.Value) {
			t.Fatalf("%s: got %#v, want array %v", attr, got, v.Value)
		}
		for i := range arr {
			if arr[i] != v.Value[i] {
				t.Errorf("%s[%d]: got %v, want %s", attr, i, arr[i], v.Value[i])
			}
		}
	default:
		t.Errorf("%s: fixture type %T not covered by this test", attr, av)
	}
}

// TestLsWaitingOnParent derives waiting-on-parent from a parent lease that is
// not at SHARD_END, and names the parent.
func TestLsWaitingOnParent(t *testing.T) {
	parent := fixtureItem(t, "f3-shard-end-parent.json")
	parent["checkpoint"] = &types.AttributeValueMemberS{Value: "49590338271490256608559692538361571095921575989136588898"}
	table := seedTable(t, parent, fixtureItem(t, "f4-child-waiting.json"))
	f, out, _ := testFactory(t, false, nil)
	if code := Run(context.Background(), f, []string{"leases", "ls", "--app", table}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out.String(), "waiting-on-parent(shardId-000000000000)") {
		t.Errorf("child not waiting on its parent:\n%s", out)
	}
}

// TestLsTerminalRendering: on a terminal long sequence numbers are shortened
// and the header is coloured; piped output keeps every digit and no escapes;
// NO_COLOR wins on a terminal; --color always forces colour into a pipe.
func TestLsTerminalRendering(t *testing.T) {
	table := seedTable(t, fixtureItem(t, "f1-kcl2-active.json"))
	const seq = "49590338271490256608559692538361571095921575989136588898"
	cases := []struct {
		name      string
		tty       bool
		env       map[string]string
		args      []string
		full, ans bool
	}{
		{"tty", true, nil, nil, false, true},
		{"pipe", false, nil, nil, true, false},
		{"tty NO_COLOR", true, map[string]string{"NO_COLOR": "1"}, nil, false, false},
		{"pipe --color always", false, nil, []string{"--color", "always"}, true, true},
		{"tty --color never", true, nil, []string{"--color", "never"}, false, false},
		{"env KCLTOOL_COLOR", false, map[string]string{"KCLTOOL_COLOR": "always"}, nil, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, out, _ := testFactory(t, c.tty, c.env)
			args := append([]string{"leases", "ls", "--app", table}, c.args...)
			if code := Run(context.Background(), f, args); code != 0 {
				t.Fatalf("exit %d", code)
			}
			if got := strings.Contains(out.String(), seq); got != c.full {
				t.Errorf("full sequence number shown = %v, want %v:\n%s", got, c.full, out)
			}
			if !c.full && !strings.Contains(out.String(), "4959…8898") {
				t.Errorf("shortened sequence number missing:\n%s", out)
			}
			if got := strings.Contains(out.String(), "\x1b["); got != c.ans {
				t.Errorf("ANSI escapes = %v, want %v:\n%q", got, c.ans, out)
			}
		})
	}
}

// TestLsAppFromEnvironment reads --app from KCLTOOL_APP; the flag wins.
func TestLsAppFromEnvironment(t *testing.T) {
	table := seedTable(t, fixtureItem(t, "f1-kcl2-active.json"))
	f, out, errOut := testFactory(t, false, map[string]string{"KCLTOOL_APP": table})
	if code := Run(context.Background(), f, []string{"leases", "ls", "-o", "csv"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out.String(), "shardId-000000000001,shardId-000000000001,worker-a,1542") {
		t.Errorf("KCLTOOL_APP not used:\n%s", out)
	}
	f, _, errOut = testFactory(t, false, map[string]string{"KCLTOOL_APP": table})
	if code := Run(context.Background(), f, []string{"leases", "ls", "--app", "other-" + table}); code != 1 {
		t.Fatalf("flag did not win over KCLTOOL_APP: exit %d", code)
	}
	if !strings.Contains(errOut.String(), `"other-`) {
		t.Errorf("error does not name the flag's table: %s", errOut)
	}
}

// TestLsMalformedItemWarnsAndContinues: a broken item is named on stderr and
// the rest of the table is still listed.
func TestLsMalformedItemWarnsAndContinues(t *testing.T) {
	bad := fixtureItem(t, "f4-child-waiting.json")
	delete(bad, "leaseCounter")
	worse := fixtureItem(t, "f3-shard-end-parent.json")
	worse["checkpoint"] = &types.AttributeValueMemberS{Value: "not-a-number"}
	table := seedTable(t, fixtureItem(t, "f1-kcl2-active.json"), bad, worse)
	f, out, errOut := testFactory(t, false, nil)
	if code := Run(context.Background(), f, []string{"leases", "ls", "--app", table}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"shardId-000000000002", "leaseCounter", "shardId-000000000000", "not-a-number"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("warning lacks %q:\n%s", want, errOut)
		}
	}
	if !strings.Contains(out.String(), "shardId-000000000001") || !strings.Contains(out.String(), "2 malformed items skipped") {
		t.Errorf("listing did not continue past the malformed items:\n%s", out)
	}
}

// TestLsSampleFindsExpiredLeases renews one lease during the sample and not
// the other: only the silent one is expired, and the renewals per owner show.
func TestLsSampleFindsExpiredLeases(t *testing.T) {
	live := fixtureItem(t, "f1-kcl2-active.json")
	dead := fixtureItem(t, "f3-shard-end-parent.json")
	dead["checkpoint"] = &types.AttributeValueMemberS{Value: "TRIM_HORIZON"}
	dead["leaseOwner"] = &types.AttributeValueMemberS{Value: "worker-dead"}
	table := seedTable(t, live, dead)
	c := emulator.DynamoDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { // worker-a renews shard 1 as a KCL worker would
		defer close(done)
		for ctx.Err() == nil {
			_, _ = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName:                 aws.String(table),
				Key:                       map[string]types.AttributeValue{"leaseKey": &types.AttributeValueMemberS{Value: "shardId-000000000001"}},
				UpdateExpression:          aws.String("ADD leaseCounter :one"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
			})
			time.Sleep(20 * time.Millisecond)
		}
	}()
	f, out, errOut := testFactory(t, false, nil)
	code := Run(context.Background(), f, []string{"leases", "ls", "--app", table, "--sample", "400ms"})
	cancel()
	<-done
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	s := out.String()
	for _, want := range []string{"shardId-000000000000   worker-dead", "expired", "1 expired", "worker-dead  0  (not renewing"} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "worker-a   1") || !strings.Contains(s, "owned") {
		t.Errorf("renewed lease not owned:\n%s", s)
	}
	if !strings.Contains(errOut.String(), "sampling") {
		t.Errorf("no progress note on stderr: %s", errOut)
	}
}

// TestInterruptExits130 cancels the command's context mid-sample.
func TestInterruptExits130(t *testing.T) {
	table := seedTable(t, fixtureItem(t, "f1-kcl2-active.json"))
	f, _, errOut := testFactory(t, false, nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	if code := Run(ctx, f, []string{"leases", "ls", "--app", table, "--sample", "1m"}); code != cmdutil.ExitInterrupted {
		t.Fatalf("exit %d, want 130: %s", code, errOut)
	}
	if !strings.Contains(errOut.String(), "interrupted") {
		t.Errorf("stderr: %s", errOut)
	}
}
