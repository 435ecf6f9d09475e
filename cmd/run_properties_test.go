package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/cmd/run"
)

// propsRun runs kcltool run --properties FILE (FILE written from props)
// with the environment env, in process. It never reaches AWS: every call
// uses --print-config or fails before.
type propsResult struct {
	out, errOut string
	code        int
	f           *cmdutil.Factory
	doc         run.RunConfigJSON
}

func propsRun(t *testing.T, props string, env map[string]string, args ...string) propsResult {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "app.properties")
	if err := os.WriteFile(path, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	f := cmdutil.NewFactory(&cmdutil.IOStreams{Out: &out, ErrOut: &errOut}, func(k string) string { return env[k] })
	argv := append([]string{"run", "--properties", path, "--log-format", "text"}, args...)
	code := Run(context.Background(), f, argv)
	r := propsResult{out: out.String(), errOut: errOut.String(), code: code, f: f}
	if code == 0 && strings.Contains(strings.Join(args, " "), "-o json") {
		if err := json.Unmarshal(out.Bytes(), &r.doc); err != nil {
			t.Fatalf("-o json: %v\n%s", err, out.String())
		}
	}
	return r
}

func printJSON(args ...string) []string {
	return append([]string{"--print-config", "-o", "json"}, args...)
}

// setting returns one setting's value and source.
func (r propsResult) setting(t *testing.T, name string) (string, string) {
	t.Helper()
	for _, s := range r.doc.Settings {
		if s.Setting == name {
			return s.Value, s.Source
		}
	}
	t.Fatalf("no setting %q in %+v", name, r.doc.Settings)
	return "", ""
}

func (r propsResult) want(t *testing.T, name, value, source string) {
	t.Helper()
	if v, s := r.setting(t, name); v != value || s != source {
		t.Errorf("%s = %q from %s, want %q from %s", name, v, s, value, source)
	}
}

const baseProps = "applicationName = orders\nstreamName = orders\nRetrievalMode = POLLING\n"

// TestPropertiesPrecedence: the command line, then KCLTOOL_* variables,
// then the file, then the defaults.
func TestPropertiesPrecedence(t *testing.T) {
	props := `applicationName = fileapp
streamName = filestream
failoverTimeMillis = 20000
maxRecords = 500
shardSyncIntervalMillis = 5000
workerId = file-worker
idleTimeBetweenReadsInMillis = 250
timeoutInSeconds = 30
shutdownGraceMillis = 4000
maxLeasesForWorker = 8
maxLeasesToStealAtOneTime = 2
parentShardPollIntervalMillis = 1500
tableName = filetable
`
	env := map[string]string{"KCLTOOL_STREAM": "envstream", "KCLTOOL_FAILOVER_TIME": "30s", "KCLTOOL_MAX_RECORDS": "700"}
	r := propsRun(t, props, env, printJSON("--max-records", "100", "--exec", "cat")...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	r.want(t, "app", "fileapp", "file")
	r.want(t, "stream", "envstream", "env")
	r.want(t, "failover-time", "30s", "env")
	r.want(t, "max-records", "100", "flag")
	r.want(t, "exec", "cat", "flag")
	r.want(t, "shard-sync-interval", "5s", "file")
	r.want(t, "worker-id", "file-worker", "file")
	r.want(t, "idle-between-reads", "250ms", "file")
	r.want(t, "multilang-timeout", "30s", "file")
	r.want(t, "shutdown-grace", "4s", "file")
	r.want(t, "max-leases-for-worker", "8", "file")
	r.want(t, "max-leases-to-steal", "2", "file")
	r.want(t, "parent-poll-interval", "1.5s", "file")
	r.want(t, "table", "filetable", "file")
	r.want(t, "batch-size", "1000", "default")
	if *r.doc.Properties == "" || r.doc.Warnings == nil {
		t.Errorf("properties %v, warnings %v", r.doc.Properties, r.doc.Warnings)
	}
	for _, s := range r.doc.Settings {
		if s.Setting == "stream" && (s.Property == nil || *s.Property != "streamName") {
			t.Errorf("stream's property = %v, want streamName (overridden)", s.Property)
		}
	}
}

// TestPropertiesStreamARN: the ARN wins over streamName and gives the
// region; a region that differs is an error.
func TestPropertiesStreamARN(t *testing.T) {
	arn := "streamArn = arn:aws:kinesis:eu-west-1:123456789012:stream/from-arn\n"
	r := propsRun(t, "applicationName = a\nstreamName = by-name\n"+arn, nil, printJSON("--exec", "cat")...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	r.want(t, "stream", "from-arn", "file")
	r.want(t, "region", "eu-west-1", "file")

	r = propsRun(t, "applicationName = a\nregionName = eu-west-1\n"+arn, nil, printJSON("--exec", "cat")...)
	if r.code != 0 {
		t.Fatalf("same region: exit %d: %s", r.code, r.errOut)
	}
	for name, tc := range map[string]struct {
		props string
		args  []string
		env   map[string]string
		want  string
	}{
		"regionName":     {"applicationName = a\nregionName = us-east-1\n" + arn, nil, nil, "is in region eu-west-1, but regionName = us-east-1"},
		"--region":       {"applicationName = a\n" + arn, []string{"--region", "us-east-2"}, nil, "but --region is us-east-2"},
		"KCLTOOL_REGION": {"applicationName = a\n" + arn, nil, map[string]string{"KCLTOOL_REGION": "us-east-2"}, "but --region is us-east-2"},
		"not an ARN":     {"applicationName = a\nstreamArn = orders\n", nil, nil, `invalid streamArn = "orders"`},
	} {
		t.Run(name, func(t *testing.T) {
			r := propsRun(t, tc.props, tc.env, printJSON(append(tc.args, "--exec", "cat")...)...)
			if r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, tc.want) {
				t.Errorf("exit %d, stderr %s; want 2 and %q", r.code, r.errOut, tc.want)
			}
		})
	}
}

// TestPropertiesWarnings: every unsupported key is warned about once and
// never fatal; processingLanguage and metricsLevel are quiet.
func TestPropertiesWarnings(t *testing.T) {
	props := baseProps + "processingLanguage = python/3.8\nmetricsLevel = NONE\ntaskBackoffTimeMillis = 500\nnoSuchKey = 1\nnoSuchKey = 2\nvalidateSequenceNumberBeforeCheckpointing = true\n"
	r := propsRun(t, props, nil, printJSON("--exec", "cat")...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	for _, k := range []string{"taskBackoffTimeMillis", "noSuchKey", "validateSequenceNumberBeforeCheckpointing"} {
		if n := strings.Count(r.errOut, "properties key "+k+" "); n != 1 {
			t.Errorf("%s warned %d times, want once:\n%s", k, n, r.errOut)
		}
	}
	for _, k := range []string{"processingLanguage", "metricsLevel", "fan-out"} {
		if strings.Contains(r.errOut, k) {
			t.Errorf("stderr mentions %s:\n%s", k, r.errOut)
		}
	}
	if len(r.doc.Warnings) != 3 {
		t.Errorf("warnings = %q, want 3", r.doc.Warnings)
	}
}

// TestPropertiesRetrievalMode: a file that means fan-out, explicitly or by
// the MultiLangDaemon's DEFAULT rule, runs with --efo (no warning), its
// consumerName filling --consumer-name; a polling one does not.
func TestPropertiesRetrievalMode(t *testing.T) {
	app := "applicationName = a\nstreamName = s\n"
	for _, tc := range []struct {
		name, props string
		fanout      bool
	}{
		{"DEFAULT without polling keys", app, true},
		{"DEFAULT spelled out", app + "RetrievalMode = DEFAULT\n", true},
		{"DEFAULT with maxRecords", app + "maxRecords = 1000\n", false},
		{"DEFAULT with idleTimeBetweenReadsInMillis", app + "idleTimeBetweenReadsInMillis = 500\n", false},
		{"DEFAULT with an unsupported polling key", app + "maxGetRecordsThreadPool = 2\n", false},
		{"DEFAULT with maxRecords 0", app + "maxRecords = 0\n", true},
		{"POLLING", app + "RetrievalMode = polling\n", false},
		{"POLLING ignores consumerName", app + "RetrievalMode = POLLING\nconsumerName = c\n", false},
		{"FANOUT", app + "RetrievalMode = FANOUT\nconsumerName = c\n", true},
		{"FANOUT with polling keys", app + "RetrievalMode = FANOUT\nmaxRecords = 100\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := propsRun(t, tc.props, nil, printJSON("--exec", "cat")...)
			if tc.name == "DEFAULT with maxRecords 0" {
				// maxRecords 0 does not select polling, and run refuses it.
				if r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, "set by maxRecords = 0") {
					t.Fatalf("exit %d: %s", r.code, r.errOut)
				}
				return
			}
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.errOut)
			}
			if strings.Contains(r.errOut, "enhanced fan-out") {
				t.Errorf("a warning about fan-out:\n%s", r.errOut)
			}
			if tc.fanout {
				r.want(t, "efo", "true", "file")
			} else {
				r.want(t, "efo", "false", "default")
			}
			if strings.Contains(tc.props, "consumerName") {
				if tc.fanout {
					r.want(t, "consumer-name", "c", "file")
				} else {
					r.want(t, "consumer-name", "", "default")
				}
			}
		})
	}
	// The command line wins over the file, both ways.
	r := propsRun(t, app, nil, printJSON("--efo=false", "--exec", "cat")...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	r.want(t, "efo", "false", "flag")
	r = propsRun(t, app+"maxRecords = 1000\n", nil, printJSON("--efo", "--exec", "cat")...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	r.want(t, "efo", "true", "flag")
	r = propsRun(t, app+"RetrievalMode = STREAMING\n", nil, printJSON("--exec", "cat")...)
	if r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, `invalid RetrievalMode = "STREAMING"`) {
		t.Errorf("exit %d: %s", r.code, r.errOut)
	}
}

// TestPropertiesCredentialProviders maps AwsCredentialsProvider to the
// SDK's providers, and refuses what kcltool cannot do.
func TestPropertiesCredentialProviders(t *testing.T) {
	for _, tc := range []struct {
		value   string
		args    []string
		profile string // --profile afterwards
		chain   bool   // a chain replaces the SDK's credentials
		err     string
	}{
		{value: "DefaultCredentialsProvider"},
		{value: "DefaultAWSCredentialsProviderChain"},
		{value: "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider"},
		{value: "ProfileCredentialsProvider"},
		{value: "ProfileCredentialsProvider|ops", profile: "ops"},
		{value: "ProfileCredentialsProvider|ops", args: []string{"--profile", "dev"}, profile: "dev"},
		{value: "EnvironmentVariableCredentialsProvider", chain: true},
		{value: "InstanceProfileCredentialsProvider", chain: true},
		{value: "ContainerCredentialsProvider", chain: true},
		{value: "EnvironmentVariableCredentialsProvider, ProfileCredentialsProvider|ops,DefaultCredentialsProvider", chain: true},
		{value: "STSAssumeRoleSessionCredentialsProvider|arn:aws:iam::1:role/r|s", err: "role_arn and source_profile"},
		{value: "StsAssumeRoleCredentialsProvider|arn:aws:iam::1:role/r|s", err: "role_arn and source_profile"},
		{value: "com.example.MyProvider", err: "cannot use the Java credentials provider MyProvider"},
		{value: "SystemPropertyCredentialsProvider", err: "AwsCredentialsProvider = SystemPropertyCredentialsProvider"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			r := propsRun(t, baseProps+"AwsCredentialsProvider = "+tc.value+"\n", nil, printJSON(append(tc.args, "--exec", "cat")...)...)
			if tc.err != "" {
				if r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, tc.err) {
					t.Fatalf("exit %d, stderr %s; want 2 and %q", r.code, r.errOut, tc.err)
				}
				return
			}
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.errOut)
			}
			if r.f.Profile != tc.profile {
				t.Errorf("--profile = %q, want %q", r.f.Profile, tc.profile)
			}
			if (r.f.Credentials != nil) != tc.chain {
				t.Errorf("chain set = %v, want %v", r.f.Credentials != nil, tc.chain)
			}
			r.want(t, "credentials", tc.value, "file")
		})
	}
	// The keys are read in any case; another provider for DynamoDB is refused.
	r := propsRun(t, baseProps+"awscredentialsprovider = ProfileCredentialsProvider|ops\n", nil, printJSON("--exec", "cat")...)
	if r.code != 0 || r.f.Profile != "ops" {
		t.Errorf("lower-case key: exit %d, profile %q: %s", r.code, r.f.Profile, r.errOut)
	}
	r = propsRun(t, baseProps+"AwsCredentialsProvider = DefaultCredentialsProvider\nAwsCredentialsProviderDynamoDB = ProfileCredentialsProvider|ddb\n", nil, printJSON("--exec", "cat")...)
	if r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, "remove AwsCredentialsProviderDynamoDB") {
		t.Errorf("exit %d: %s", r.code, r.errOut)
	}
}

// TestPropertiesExecutableName: without --exec or --, the file's program
// runs as a MultiLang child (--multilang); --exec or -- give a per-batch
// handler instead, and --print-config shows which.
func TestPropertiesExecutableName(t *testing.T) {
	props := baseProps + "executableName = node  sample_kcl_app.js\n"
	r := propsRun(t, props, nil, printJSON()...)
	if r.code != 0 {
		t.Fatalf("--print-config: exit %d: %s", r.code, r.errOut)
	}
	r.want(t, "executableName", "node sample_kcl_app.js", "file")
	r.want(t, "command", "node sample_kcl_app.js", "file")
	r.want(t, "multilang", "true", "file")
	r = propsRun(t, props, nil, printJSON("--", "./handler")...)
	r.want(t, "command", "./handler", "flag")
	r.want(t, "multilang", "false", "default")
	r = propsRun(t, props, map[string]string{"KCLTOOL_EXEC": "cat"}, printJSON()...)
	r.want(t, "exec", "cat", "env")
}

// TestPropertiesEmptyRecordList: callProcessRecordsEvenForEmptyRecordList
// = true sends a MultiLang child empty pages (runner.Config
// MultiLangEmptyPages; TestMultiLangEmptyPages runs it); a per-batch
// handler never gets an empty batch.
func TestPropertiesEmptyRecordList(t *testing.T) {
	props := baseProps + "executableName = node app.js\ncallProcessRecordsEvenForEmptyRecordList = TRUE\n"
	r := propsRun(t, props, nil, printJSON()...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	r.want(t, "callProcessRecordsEvenForEmptyRecordList", "TRUE", "file")
	if strings.Contains(r.errOut, "callProcessRecordsEvenForEmptyRecordList") {
		t.Errorf("a warning about a key that is honoured:\n%s", r.errOut)
	}
}

// TestPropertiesInitialPosition: initialPositionInStreamExtended is epoch
// seconds and means AT_TIMESTAMP.
func TestPropertiesInitialPosition(t *testing.T) {
	r := propsRun(t, baseProps+"initialPositionInStream = TRIM_HORIZON\n", nil, printJSON("--exec", "cat")...)
	r.want(t, "initial-position", "TRIM_HORIZON", "file")
	r = propsRun(t, baseProps+"initialPositionInStream = TRIM_HORIZON\ninitialPositionInStreamExtended = 1636609142\n", nil, printJSON("--exec", "cat")...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	r.want(t, "initial-position", "AT_TIMESTAMP", "file")
	r.want(t, "initial-timestamp", "1636609142", "file")
	if strings.Count(r.errOut, "overridden by initialPositionInStreamExtended") != 1 {
		t.Errorf("no warning about initialPositionInStream:\n%s", r.errOut)
	}
	r = propsRun(t, baseProps+"initialPositionInStreamExtended = 1636609142\n", nil, printJSON("--exec", "cat", "--initial-position", "LATEST")...)
	r.want(t, "initial-position", "LATEST", "flag")
	r.want(t, "initial-timestamp", "", "default")
	r = propsRun(t, baseProps+"initialPositionInStreamExtended = yesterday\n", nil, printJSON("--exec", "cat")...)
	if r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, "want epoch seconds") {
		t.Errorf("exit %d: %s", r.code, r.errOut)
	}
}

// TestPropertiesEndpoints: kinesisEndpoint and dynamoDBEndpoint stay per
// service; --endpoint-url and the SDK's variables win over them.
func TestPropertiesEndpoints(t *testing.T) {
	props := baseProps + "kinesisEndpoint = http://127.0.0.1:4567\ndynamoDBEndpoint = localhost:8000\n"
	r := propsRun(t, props, nil, printJSON("--exec", "cat")...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	if r.f.KinesisEndpoint != "http://127.0.0.1:4567" || r.f.DynamoDBEndpoint != "https://localhost:8000" || r.f.EndpointURL != "" {
		t.Errorf("endpoints: kinesis %q, dynamodb %q, all %q", r.f.KinesisEndpoint, r.f.DynamoDBEndpoint, r.f.EndpointURL)
	}
	r.want(t, "kinesis-endpoint", "http://127.0.0.1:4567", "file")
	r = propsRun(t, props, map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://ddb:1"}, printJSON("--exec", "cat")...)
	if r.f.DynamoDBEndpoint != "" || r.f.KinesisEndpoint == "" {
		t.Errorf("AWS_ENDPOINT_URL_DYNAMODB: kinesis %q, dynamodb %q", r.f.KinesisEndpoint, r.f.DynamoDBEndpoint)
	}
	r.want(t, "dynamodb-endpoint", "http://ddb:1", "env")
	r = propsRun(t, props, nil, printJSON("--exec", "cat", "--endpoint-url", "http://all:1")...)
	if r.f.DynamoDBEndpoint != "" || r.f.KinesisEndpoint != "" {
		t.Errorf("--endpoint-url: kinesis %q, dynamodb %q", r.f.KinesisEndpoint, r.f.DynamoDBEndpoint)
	}
	r.want(t, "kinesis-endpoint", "http://all:1", "flag")
}

// TestPropertiesBadValues: a value run refuses names the key and line.
func TestPropertiesBadValues(t *testing.T) {
	for props, want := range map[string]string{
		baseProps + "failoverTimeMillis = ten\n":                     `invalid failoverTimeMillis = "ten"`,
		baseProps + "maxRecords = 20000\n":                           "--max-records must be between 1 and 10000 (set by maxRecords = 20000 in ",
		baseProps + "cleanupLeasesUponShardCompletion = yes\n":       `invalid cleanupLeasesUponShardCompletion = "yes"`,
		baseProps + "callProcessRecordsEvenForEmptyRecordList = 1\n": `invalid callProcessRecordsEvenForEmptyRecordList = "1"`,
		baseProps + "initialPositionInStream = EARLIEST\n":           "set by initialPositionInStream = EARLIEST",
		"a = \\u12zz\n": `malformed \uxxxx`,
	} {
		r := propsRun(t, props, nil, printJSON("--exec", "cat")...)
		if r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, want) {
			t.Errorf("%q: exit %d, stderr %s; want 2 and %q", props, r.code, r.errOut, want)
		}
	}
	r := propsRun(t, baseProps+"cleanupLeasesUponShardCompletion = false\n", nil, printJSON("--exec", "cat")...)
	if r.code != 0 || strings.Count(r.errOut, "cleanupLeasesUponShardCompletion = false is not supported") != 1 {
		t.Errorf("cleanup false: exit %d: %s", r.code, r.errOut)
	}
}
