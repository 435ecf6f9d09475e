package cmd

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// These tests drive the built binary's `__complete`, the hidden command
// every completion script calls on Tab, against the local servers.

// cobraNote is the one line cobra itself writes to stderr after every
// __complete; the completion scripts discard stderr. kcltool adds nothing.
const cobraNote = "Completion ended with directive: ShellCompDirectiveNoFileComp\n"

// completion is what one __complete printed.
type completion struct {
	values    []string // the candidates, descriptions cut off
	lines     []string // the candidates as printed, "value\tdescription"
	directive string   // the last line, ":4" for NoFileComp
	stderr    string
	took      time.Duration
}

// completionEnv is a clean environment: no AWS or KCLTOOL_ variable of the
// machine running the tests, no shared config files, no IMDS; extra is
// added.
func completionEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "KCLTOOL_") {
			env = append(env, kv)
		}
	}
	env = append(env, "AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE="+os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE="+os.DevNull)
	return append(env, extra...)
}

// localCreds are the static credentials the local servers accept.
var localCreds = []string{"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local"}

// localEnv reaches both local servers through the SDK's own variables.
func localEnv(t *testing.T, extra ...string) []string {
	env := append(completionEnv(localCreds...), "AWS_REGION="+emulator.Region,
		"AWS_ENDPOINT_URL_DYNAMODB="+emulator.DynamoDBEndpoint(t), "AWS_ENDPOINT_URL_KINESIS="+emulator.KinesisEndpoint(t))
	return append(env, extra...)
}

func runComplete(t *testing.T, env []string, args ...string) completion {
	t.Helper()
	// A completion that ignored its deadline would otherwise hang the test.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kcltool", append([]string{"__complete"}, args...)...)
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcltool __complete %q: %v\n%s", args, err, errOut.String())
	}
	c := completion{stderr: errOut.String(), took: time.Since(start)}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	c.directive = lines[len(lines)-1]
	c.lines = lines[:len(lines)-1]
	for _, l := range c.lines {
		v, _, _ := strings.Cut(l, "\t")
		c.values = append(c.values, v)
	}
	return c
}

// wantValues requires exactly these candidates, with NoFileComp and
// nothing of kcltool's own on stderr.
func wantValues(t *testing.T, c completion, want ...string) {
	t.Helper()
	if !slices.Equal(c.values, want) {
		t.Errorf("candidates %q, want %q", c.values, want)
	}
	if c.directive != ":4" {
		t.Errorf("directive %s, want :4 (NoFileComp)", c.directive)
	}
	if c.stderr != cobraNote {
		t.Errorf("stderr %q, want only cobra's note", c.stderr)
	}
}

func createTable(t *testing.T, c *dynamodb.Client, name string, keys ...types.KeySchemaElement) {
	t.Helper()
	var defs []types.AttributeDefinition
	for _, k := range keys {
		defs = append(defs, types.AttributeDefinition{AttributeName: k.AttributeName, AttributeType: types.ScalarAttributeTypeS})
	}
	_, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{TableName: aws.String(name),
		BillingMode: types.BillingModePayPerRequest, KeySchema: keys, AttributeDefinitions: defs})
	if err != nil {
		t.Fatal(err)
	}
}

func hashKey(name string) types.KeySchemaElement {
	return types.KeySchemaElement{AttributeName: aws.String(name), KeyType: types.KeyTypeHash}
}

// TestCompleteLeaseTables: --app and --table offer the lease tables and
// only them; --region and --endpoint-url on the line, or KCLTOOL_ variables,
// choose where to look.
func TestCompleteLeaseTables(t *testing.T) {
	ddb := emulator.DynamoDB(t)
	base := emulator.Name(t, "cmpl")
	emulator.CreateLeaseTable(t, ddb, base+"-orders")
	emulator.CreateLeaseTable(t, ddb, base+"-payments")
	createTable(t, ddb, base+"-plain", hashKey("id"))
	createTable(t, ddb, base+"-ranged", hashKey("leaseKey"), types.KeySchemaElement{AttributeName: aws.String("sort"), KeyType: types.KeyTypeRange})
	createTable(t, ddb, base+"-CoordinatorState", hashKey("key"))
	want := []string{base + "-orders", base + "-payments"}

	// Only the flags on the line say where: no AWS_REGION, no endpoint variable.
	onLine := completionEnv(localCreds...)
	at := []string{"--region", emulator.Region, "--endpoint-url", emulator.DynamoDBEndpoint(t)}
	wantValues(t, runComplete(t, onLine, append([]string{"leases", "ls"}, append(at, "--app", base)...)...), want...)
	wantValues(t, runComplete(t, onLine, append([]string{"lag"}, append(at, "--table", base)...)...), want...)
	wantValues(t, runComplete(t, onLine, append([]string{"checkpoint", "import"}, append(at, "--to-app", base+"-p")...)...), want[1:]...)

	// The same from KCLTOOL_ variables, which __complete must apply itself.
	fromEnv := completionEnv(append(localCreds, "KCLTOOL_REGION="+emulator.Region,
		"KCLTOOL_ENDPOINT_URL="+emulator.DynamoDBEndpoint(t))...)
	wantValues(t, runComplete(t, fromEnv, "doctor", "--app", base), want...)

	// Without a region nothing is asked.
	wantValues(t, runComplete(t, completionEnv(localCreds...), "leases", "ls", "--endpoint-url", emulator.DynamoDBEndpoint(t), "--app", base))
}

// TestCompleteProfiles: --profile offers the shared files' profiles, and
// the chosen profile's region and credentials are used for the lookup.
func TestCompleteProfiles(t *testing.T) {
	ddb := emulator.DynamoDB(t)
	table := emulator.Name(t, "prof")
	emulator.CreateLeaseTable(t, ddb, table)
	dir := t.TempDir()
	cfg, creds := filepath.Join(dir, "config"), filepath.Join(dir, "credentials")
	writeFile(t, cfg, "[default]\nregion = eu-west-1\n[profile local]\nregion = "+emulator.Region+"\n[sso-session corp]\nsso_region = eu-west-1\n")
	writeFile(t, creds, "[local]\naws_access_key_id = local\naws_secret_access_key = local\n[ci]\naws_access_key_id = x\naws_secret_access_key = y\n")
	env := append(completionEnv(), "AWS_CONFIG_FILE="+cfg, "AWS_SHARED_CREDENTIALS_FILE="+creds)
	wantValues(t, runComplete(t, env, "leases", "ls", "--profile", ""), "ci", "default", "local")
	wantValues(t, runComplete(t, env, "leases", "ls", "--profile", "local", "--endpoint-url", emulator.DynamoDBEndpoint(t), "--app", table), table)
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCompleteStreams: --stream offers the streams, on every command that has it.
func TestCompleteStreams(t *testing.T) {
	kin := emulator.Kinesis(t)
	base := emulator.Name(t, "cmpl")
	emulator.CreateStream(t, kin, base+"-clicks", 1)
	emulator.CreateStream(t, kin, base+"-views", 1)
	env := localEnv(t)
	for _, cmd := range [][]string{{"shards", "lineage"}, {"lag"}, {"doctor"}, {"run"}, {"checkpoint", "reset"}} {
		wantValues(t, runComplete(t, env, append(cmd, "--stream", base)...), base+"-clicks", base+"-views")
	}
	wantValues(t, runComplete(t, env, "lineage", "--stream="+base+"-v"), base+"-views")
}

// TestCompleteShardsAndOwners: --shard and --owner offer what the lease
// table named by --app (on the line or in KCLTOOL_APP) holds. KCL 3.x's
// non-lease items are neither shards nor owners.
func TestCompleteShardsAndOwners(t *testing.T) {
	ddb := emulator.DynamoDB(t)
	table := emulator.Name(t, "cmpl")
	emulator.CreateLeaseTable(t, ddb, table)
	seedFiles(t, ddb, table, fixturesDir(t), "f3-shard-end-parent.json", "f1-kcl2-active.json",
		"f4-child-waiting.json", "f6-kcl35-non-lease.jsonl")
	putLease(t, ddb, table, "shardId-000000000003", "worker-b")
	env := localEnv(t)

	c := runComplete(t, env, "leases", "ls", "--app", table, "--shard", "")
	wantValues(t, c, "shardId-000000000000", "shardId-000000000001", "shardId-000000000002", "shardId-000000000003")
	if want := "shardId-000000000002\tno owner"; c.lines[2] != want {
		t.Errorf("line %q, want %q", c.lines[2], want)
	}
	c = runComplete(t, env, "leases", "ls", "--app", table, "--owner", "")
	wantValues(t, c, "worker-a", "worker-b")
	if want := []string{"worker-a\t2 leases", "worker-b\t1 lease"}; !slices.Equal(c.lines, want) {
		t.Errorf("lines %q, want %q", c.lines, want)
	}
	// --table names the table as well as --app.
	wantValues(t, runComplete(t, env, "leases", "ls", "--table", table, "--owner", "worker-b"), "worker-b")

	// A list flag completes after its last comma and skips what is given.
	wantValues(t, runComplete(t, env, "checkpoint", "reset", "--app", table, "--shard", "shardId-000000000001,shardId-000000000000,"),
		"shardId-000000000001,shardId-000000000000,shardId-000000000002", "shardId-000000000001,shardId-000000000000,shardId-000000000003")

	// KCLTOOL_APP counts, although PersistentPreRunE does not run for __complete.
	wantValues(t, runComplete(t, append(env, "KCLTOOL_APP="+table), "leases", "ls", "--shard", "shardId-0000000000"),
		"shardId-000000000000", "shardId-000000000001", "shardId-000000000002", "shardId-000000000003")

	// Without --app there is no table to read.
	wantValues(t, runComplete(t, env, "leases", "ls", "--owner", ""))
}

func putLease(t *testing.T, ddb *dynamodb.Client, table, key, owner string, attrs ...string) {
	t.Helper()
	item := map[string]types.AttributeValue{
		"leaseKey": &types.AttributeValueMemberS{Value: key}, "leaseCounter": &types.AttributeValueMemberN{Value: "1"},
		"checkpoint": &types.AttributeValueMemberS{Value: "TRIM_HORIZON"}, "ownerSwitchesSinceCheckpoint": &types.AttributeValueMemberN{Value: "0"},
	}
	if owner != "" {
		item["leaseOwner"] = &types.AttributeValueMemberS{Value: owner}
	}
	for i := 0; i+1 < len(attrs); i += 2 {
		item[attrs[i]] = &types.AttributeValueMemberS{Value: attrs[i+1]}
	}
	if _, err := ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatal(err)
	}
}

// TestCompleteMultiStreamShards: in a multi-stream table a shard id comes
// from the shardId attribute or, without it, from the lease key split as
// KCL splits it; --stream narrows to one stream, by name or identifier;
// a word with a colon completes whole lease keys.
func TestCompleteMultiStreamShards(t *testing.T) {
	ddb := emulator.DynamoDB(t)
	table := emulator.Name(t, "multi")
	emulator.CreateLeaseTable(t, ddb, table)
	seedFiles(t, ddb, table, fixturesDir(t), "f5-multistream.json") // orders shard 7, worker-c, with shardId and streamName
	// No shardId or streamName attribute: derived from the key.
	putLease(t, ddb, table, "123456789012:payments:1700000001:shardId-000000000007", "worker-d")
	putLease(t, ddb, table, "123456789012:payments:1700000001:shardId-000000000008", "")
	env := localEnv(t)

	c := runComplete(t, env, "leases", "ls", "--app", table, "--shard", "")
	wantValues(t, c, "shardId-000000000007", "shardId-000000000008")
	if want := []string{"shardId-000000000007\torders, payments: worker-c, worker-d", "shardId-000000000008\tpayments: no owner"}; !slices.Equal(c.lines, want) {
		t.Errorf("lines %q, want %q", c.lines, want)
	}
	for _, stream := range []string{"orders", "123456789012:orders:1700000000"} {
		wantValues(t, runComplete(t, env, "checkpoint", "reset", "--app", table, "--stream", stream, "--shard", ""), "shardId-000000000007")
	}
	wantValues(t, runComplete(t, env, "leases", "ls", "--app", table, "--shard", "123456789012:p"),
		"123456789012:payments:1700000001:shardId-000000000007", "123456789012:payments:1700000001:shardId-000000000008")
	wantValues(t, runComplete(t, env, "leases", "ls", "--app", table, "--owner", ""), "worker-c", "worker-d")
}

// TestCompleteEnumValues: every flag with a fixed set of values offers it,
// without file names, including the command-specific sets.
func TestCompleteEnumValues(t *testing.T) {
	env := completionEnv()
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"leases", "ls", "-o", ""}, []string{"table", "wide", "json", "csv"}},
		{[]string{"lag", "--output", ""}, []string{"table", "wide", "json", "csv"}},
		{[]string{"shards", "lineage", "-o", ""}, []string{"table", "wide", "json", "csv", "dot"}},
		{[]string{"checkpoint", "export", "-o", ""}, []string{"json", "csv"}},
		{[]string{"doctor", "--fail-on", ""}, []string{"info", "warn", "critical", "never"}},
		{[]string{"lag", "--fail-on", "b"}, []string{"behind", "blocked"}},
		{[]string{"lag", "--fail-on", "behind,c"}, []string{"behind,closed-undrained"}},
		{[]string{"leases", "ls", "--color", ""}, []string{"auto", "always", "never"}},
		{[]string{"run", "--initial-position", ""}, []string{"TRIM_HORIZON", "LATEST", "AT_TIMESTAMP"}},
		{[]string{"run", "--format", ""}, []string{"json", "raw"}},
		{[]string{"run", "--log-level", ""}, []string{"debug", "info", "warn", "error"}},
		{[]string{"run", "--log-format", ""}, []string{"auto", "text", "json"}},
		{[]string{"checkpoint", "reset", "--to", ""}, []string{"trim-horizon", "latest"}},
		{[]string{"checkpoint", "reset", "--to-sequence", ""}, []string{"TRIM_HORIZON", "LATEST", "SHARD_END"}},
		// Free values complete nothing rather than file names.
		{[]string{"run", "--batch-size", ""}, nil},
		{[]string{"doctor", "--window", ""}, nil},
		{[]string{"checkpoint", "reset", "--at", ""}, nil},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			wantValues(t, runComplete(t, env, tc.args...), tc.want...)
		})
	}
}

// TestEveryFlagCompletes walks the command tree: every flag that takes a
// value has a completion, so none falls back to file names unless it names
// a file. A new flag fails here until it is given one in complete_flags.go.
func TestEveryFlagCompletes(t *testing.T) {
	root := NewRootCmd(cmdutil.NewFactory(&cmdutil.IOStreams{}, func(string) string { return "" }))
	walk(root, func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
			if fl.NoOptDefVal != "" || hasPathAnnotation(fl) {
				return // a bool, or a value the flag need not be given
			}
			if _, ok := c.GetFlagCompletionFunc(fl.Name); !ok {
				t.Errorf("%s --%s (%s) has no completion: add it to complete_flags.go", c.CommandPath(), fl.Name, fl.Value.Type())
			}
		})
	})
}

// TestCompleteFailsSilently: whatever goes wrong, nothing is offered,
// nothing of kcltool's is printed, and the answer comes quickly: a refused
// connection at once, a server that never answers at the 2 s deadline.
func TestCompleteFailsSilently(t *testing.T) {
	closed := closedPort(t)
	hang := hangingServer(t)
	deny := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"__type":"com.amazonaws.dynamodb.v20120810#AccessDeniedException","message":"not authorized"}`)
	}))
	t.Cleanup(deny.Close)
	ddbURL := emulator.DynamoDBEndpoint(t)
	region := "AWS_REGION=" + emulator.Region
	cases := []struct {
		name   string
		env    []string
		args   []string
		within time.Duration
	}{
		{"closed port", completionEnv(append(localCreds, region)...), []string{"leases", "ls", "--endpoint-url", closed, "--app", ""}, 3 * time.Second},
		{"closed port from KCLTOOL_ENDPOINT_URL", completionEnv(append(localCreds, region, "KCLTOOL_ENDPOINT_URL="+closed)...), []string{"lag", "--stream", ""}, 3 * time.Second},
		{"server hangs", completionEnv(append(localCreds, region)...), []string{"leases", "ls", "--endpoint-url", hang, "--app", ""}, 5 * time.Second},
		{"server hangs on the scan", completionEnv(append(localCreds, region)...), []string{"leases", "ls", "--endpoint-url", hang, "--app", "orders", "--shard", ""}, 5 * time.Second},
		{"access denied", completionEnv(append(localCreds, region)...), []string{"leases", "ls", "--endpoint-url", deny.URL, "--app", ""}, 3 * time.Second},
		{"no credentials", completionEnv(region), []string{"leases", "ls", "--endpoint-url", ddbURL, "--app", ""}, 3 * time.Second},
		{"unknown profile", completionEnv(region), []string{"leases", "ls", "--profile", "nope", "--endpoint-url", ddbURL, "--app", ""}, 3 * time.Second},
		{"invalid KCLTOOL_COLOR", completionEnv(append(localCreds, region, "KCLTOOL_COLOR=purple")...), []string{"leases", "ls", "--endpoint-url", closed, "--app", ""}, 3 * time.Second},
		{"no such table", completionEnv(append(localCreds, region)...), []string{"leases", "ls", "--endpoint-url", ddbURL, "--app", "no-such-table", "--owner", ""}, 3 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := runComplete(t, tc.env, tc.args...)
			wantValues(t, c)
			if c.took > tc.within {
				t.Errorf("took %s, want under %s", c.took, tc.within)
			}
		})
	}
}

// closedPort returns the URL of a local port that refuses connections.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// hangingServer accepts connections and never answers.
func hangingServer(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + l.Addr().String()
}
