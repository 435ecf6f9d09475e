package run

import (
	"time"

	"bytes"
	"context"
	"github.com/kcltool/kcltool/coordination/assignment"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/runner"
)

// TestPropertiesCredentialChain: the first provider with credentials wins,
// the next is tried when one has none.
func TestPropertiesCredentialChain(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	loaded := credentials.NewStaticCredentialsProvider("LOADED", "secret", "")
	var ps []aws.CredentialsProvider
	for _, cp := range parseCredentialChain("EnvironmentVariableCredentialsProvider,DefaultCredentialsProvider") {
		ps = append(ps, buildProvider(cp, loaded, getenv))
	}
	chain := chainProvider(ps)
	c, err := chain.Retrieve(context.Background())
	if err != nil || c.AccessKeyID != "LOADED" {
		t.Fatalf("without AWS_ACCESS_KEY_ID: %v, %v; want the default chain's", c.AccessKeyID, err)
	}
	env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"] = "FROMENV", "s"
	if c, err = chain.Retrieve(context.Background()); err != nil || c.AccessKeyID != "FROMENV" {
		t.Fatalf("with AWS_ACCESS_KEY_ID: %v, %v", c.AccessKeyID, err)
	}
	only := chainProvider{buildProvider(credProvider{name: "ContainerCredentialsProvider"}, loaded, func(string) string { return "" })}
	if _, err := only.Retrieve(context.Background()); err == nil || !strings.Contains(err.Error(), "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") {
		t.Errorf("container without its variables: %v", err)
	}
}

// TestPropertiesEmptyRecordListConfigures: the file's
// callProcessRecordsEvenForEmptyRecordList sets runner.Config's
// MultiLangEmptyPages for a MultiLang child only (TestPropertiesEmptyRecordList
// in cmd checks --print-config shows the key).
func TestPropertiesEmptyRecordListConfigures(t *testing.T) {
	const baseProps = "applicationName = orders\nstreamName = orders\nRetrievalMode = POLLING\n"
	props := baseProps + "executableName = node app.js\ncallProcessRecordsEvenForEmptyRecordList = TRUE\n"
	for _, c := range []struct {
		props     string
		multiLang bool
		want      bool
	}{
		{props, true, true},
		{props, false, false}, // --exec: a per-batch handler
		{baseProps + "callProcessRecordsEvenForEmptyRecordList = false\n", true, false},
		{baseProps, true, false},
	} {
		path := filepath.Join(t.TempDir(), "app.properties")
		if err := os.WriteFile(path, []byte(c.props), 0o644); err != nil {
			t.Fatal(err)
		}
		f := cmdutil.NewFactory(&cmdutil.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, func(string) string { return "" })
		cmd := NewCmd(f)
		p, err := loadProperties(cmd, f, path)
		if err != nil {
			t.Fatal(err)
		}
		cfg := runner.Config{MultiLang: c.multiLang}
		p.configure(&cfg)
		if cfg.MultiLangEmptyPages != c.want {
			t.Errorf("%q, multilang %v: MultiLangEmptyPages %v, want %v", c.props, c.multiLang, cfg.MultiLangEmptyPages, c.want)
		}
	}
	var none *propertiesRun
	none.configure(&runner.Config{MultiLang: true}) // no --properties
}

// TestPropertiesProgramResolution: a program not found from the working
// directory or on PATH is looked for in the properties file's folder.
func TestPropertiesProgramResolution(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "sample_kclpy_app.py")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := resolveProgram("sample_kclpy_app.py", dir); got != script {
		t.Errorf("bare name: %q, want %q", got, script)
	}
	if got := resolveProgram("./sample_kclpy_app.py", dir); got != script {
		t.Errorf("relative path: %q, want %q", got, script)
	}
	if got := resolveProgram("sh", dir); got != "sh" {
		t.Errorf("on PATH: %q, want sh", got)
	}
	if got := resolveProgram("missing.py", dir); got != "missing.py" {
		t.Errorf("missing: %q, want it unchanged", got)
	}
}

// TestPropertiesLeaderKeys: the WorkerUtilizationAwareAssignmentConfig
// keys of a 3.x file reach the leader's assignment settings.
func TestPropertiesLeaderKeys(t *testing.T) {
	props := "applicationName = orders\nstreamName = orders\nRetrievalMode = POLLING\nexecutableName = node app.js\n" + `maxThroughputPerHostKBps = 4096
dampeningPercentage = 50
reBalanceThresholdPercentage = 15
allowThroughputOvershoot = false
varianceBalancingFrequency = 4
workerMetricsEMAAlpha = 0.4
staleWorkerMetricsEntryCleanupDuration = P1DT12H
`
	path := filepath.Join(t.TempDir(), "app.properties")
	if err := os.WriteFile(path, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	f := cmdutil.NewFactory(&cmdutil.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, func(string) string { return "" })
	p, err := loadProperties(NewCmd(f), f, path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg runner.Config
	p.configure(&cfg)
	a := cfg.KCL3.Assignment
	want := assignment.Config{MaxThroughputPerHostKBps: 4096, DampeningPercentage: 50, ReBalanceThresholdPercentage: 15,
		NoThroughputOvershoot: true, VarianceBalancingFrequency: 4, WorkerMetricsEMAAlpha: 0.4, StaleWorkerMetricsEntryCleanupDuration: 36 * time.Hour}
	if a != want {
		t.Errorf("assignment config %+v, want %+v", a, want)
	}
}
