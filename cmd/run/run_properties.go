package run

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/internal/javaprops"
	"github.com/kcltool/kcltool/runner"
)

// run --properties reads a KCL MultiLangDaemon properties file. Each key
// fills the run flag that means the same, unless the command line or a
// KCLTOOL_* variable set that flag: flags, then the environment, then the
// file. docs/multilang.md has the table of keys.

// The keys that fill a run flag are the property column of runSettings
// (run_settings.go), each with its conv into the flag's syntax.

// pollingKeys select polling under RetrievalMode DEFAULT when any is set to
// a value other than 0 (PollingConfigBean.anyPropertiesSet).
var pollingKeys = []string{"maxRecords", "idleTimeBetweenReadsInMillis", "retryGetRecordsInSeconds",
	"maxGetRecordsThreadPool", "millisBehindLatestThresholdForReducedTps"}

// fanoutKeys configure enhanced fan-out (FanoutConfigBean); consumerName
// and consumerArn fill --consumer-name and --consumer-arn when fan-out is
// in effect (applyRetrieval), the retry settings are kcltool's own.
var fanoutKeys = map[string]bool{"consumerArn": true, "consumerName": true, "maxDescribeStreamSummaryRetries": true,
	"maxDescribeStreamConsumerRetries": true, "registerStreamConsumerRetries": true, "retryBackoffMillis": true}

// quietKeys change nothing kcltool does and are not worth a warning:
// processingLanguage only adds to the Java KCL's user agent, metricsLevel
// only tunes CloudWatch metrics (run publishes them with
// --cloudwatch-metrics).
var quietKeys = map[string]bool{"processingLanguage": true, "metricsLevel": true}

// multiLangKeys are the MultiLang child's: executableName is the program
// (takeCommand), callProcessRecordsEvenForEmptyRecordList sends it empty
// pages too (configure).
var multiLangKeys = map[string]bool{"executableName": true, "callProcessRecordsEvenForEmptyRecordList": true}

// specialKeys are handled by applyProperties itself.
var specialKeys = map[string]bool{"streamArn": true, "initialPositionInStreamExtended": true,
	"kinesisEndpoint": true, "dynamoDBEndpoint": true, "RetrievalMode": true, "cleanupLeasesUponShardCompletion": true}

func propMillis(v string) (string, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return "", fmt.Errorf("not a number of milliseconds")
	}
	return (time.Duration(n) * time.Millisecond).String(), nil
}

func propSeconds(v string) (string, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return "", fmt.Errorf("not a number of seconds")
	}
	if n < 0 { // the MultiLangDaemon: no timeout
		n = 0
	}
	return (time.Duration(n) * time.Second).String(), nil
}

// propUpper upper-cases an enum's value, as the MultiLangDaemon's
// converters do (ClientVersionConfig, BillingMode, ...).
func propUpper(v string) (string, error) { return strings.ToUpper(v), nil }

// propBool reads a Boolean key: true or false in any case, as for the
// other Boolean keys kcltool honours (cleanupLeasesUponShardCompletion);
// anything else is refused rather than read as the MLD's converter
// default.
func propBool(v string) (string, error) {
	switch strings.ToLower(v) {
	case "true", "false":
		return strings.ToLower(v), nil
	}
	return "", fmt.Errorf("use true or false")
}

func propInt(v string) (string, error) {
	if _, err := strconv.ParseInt(v, 10, 32); err != nil {
		return "", fmt.Errorf("not an integer")
	}
	return v, nil
}

// propertiesRun is what a properties file contributed to one run.
type propertiesRun struct {
	path  string
	props *javaprops.Properties
	// fromFile maps a flag the file set to the key that set it.
	fromFile map[string]javaprops.Entry
	// program is executableName split on spaces, its first word resolved.
	program []string
	// retrieval is what the file asks for: POLLING or FANOUT (and why).
	retrieval, retrievalWhy string
	// efoByRule: --efo was set by the DEFAULT rule, with no key naming it.
	efoByRule bool
	// credentials describes AwsCredentialsProvider; "" when absent.
	credentials string
	// emptyPages: callProcessRecordsEvenForEmptyRecordList = true.
	emptyPages bool
	// extra rows for --print-config: keys kcltool records but does not
	// apply yet, and the per-service endpoints.
	extra    []configRow
	warnings []string
	// leaderKeys are the KCL 3.x leader's assignment keys the file set,
	// checked (applyLeaderKeys).
	leaderKeys map[string]string
}

// loadProperties reads and applies a properties file to cmd's flags (those
// neither the command line nor the environment set) and to f.
func loadProperties(cmd *cobra.Command, f *cmdutil.Factory, path string) (*propertiesRun, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, cmdutil.UsageErrorf("--properties: %v", err)
	}
	defer file.Close()
	props, err := javaprops.Parse(file)
	if err != nil {
		return nil, cmdutil.UsageErrorf("--properties %s: %v", path, err)
	}
	p := &propertiesRun{path: path, props: props, fromFile: map[string]javaprops.Entry{}}
	return p, p.apply(cmd, f)
}

func (p *propertiesRun) where(e javaprops.Entry) string {
	return fmt.Sprintf("%s:%d", p.path, e.Line)
}

// entry returns a key's entry; keys are case-sensitive, as the
// MultiLangDaemon's bean setters are.
func (p *propertiesRun) entry(key string) (javaprops.Entry, bool) {
	for _, e := range p.props.Entries {
		if e.Key == key {
			e.Value = strings.TrimSpace(e.Value)
			return e, true
		}
	}
	return javaprops.Entry{}, false
}

func (p *propertiesRun) warn(f *cmdutil.Factory, msg string, e javaprops.Entry) {
	p.warnings = append(p.warnings, fmt.Sprintf("%s (%s)", msg, p.where(e)))
	f.Logger().Warn(msg, "key", e.Key, "file", p.where(e))
}

// set fills a flag from the file, unless the command line or the
// environment set it.
func (p *propertiesRun) set(cmd *cobra.Command, name, value string, e javaprops.Entry) error {
	fl := cmd.Flags().Lookup(name)
	if fl == nil || fl.Changed {
		return nil
	}
	if err := fl.Value.Set(value); err != nil {
		return cmdutil.UsageErrorf("invalid %s = %q in %s for --%s: %v", e.Key, e.Value, p.where(e), name, err)
	}
	fl.Changed = true
	p.fromFile[name] = e
	return nil
}

func (p *propertiesRun) apply(cmd *cobra.Command, f *cmdutil.Factory) error {
	keys := make([]string, 0, len(p.props.Entries))
	for _, e := range p.props.Entries {
		keys = append(keys, e.Key)
	}
	sort.Strings(keys) // flags fill and warnings come in one order
	for _, k := range keys {
		e, _ := p.entry(k)
		if pf, ok := settingOfProperty(k); ok {
			if k == "streamName" {
				if _, arn := p.entry("streamArn"); arn {
					continue // the ARN wins
				}
			}
			if k == "initialPositionInStream" {
				if _, ext := p.entry("initialPositionInStreamExtended"); ext {
					continue // the timestamp means AT_TIMESTAMP
				}
			}
			v := e.Value
			if pf.conv != nil {
				var err error
				if v, err = pf.conv(v); err != nil {
					return cmdutil.UsageErrorf("invalid %s = %q in %s: %v", k, e.Value, p.where(e), err)
				}
			}
			if err := p.set(cmd, pf.flag, v, e); err != nil {
				return err
			}
			continue
		}
		switch {
		case specialKeys[k], fanoutKeys[k], quietKeys[k], isCredentialsKey(k):
		case isKCL3Key(k): // applyKCL3Keys
		case k == "callProcessRecordsEvenForEmptyRecordList":
			if err := p.applyEmptyPages(e); err != nil {
				return err
			}
		case multiLangKeys[k]:
		case k == "retryGetRecordsInSeconds" || k == "maxGetRecordsThreadPool" || k == "millisBehindLatestThresholdForReducedTps":
			p.warn(f, "properties key "+k+" has no kcltool equivalent and is ignored (it still selects polling)", e)
		default:
			p.warn(f, "properties key "+k+" is not supported by kcltool and is ignored", e)
		}
	}
	if err := p.applyKCL3Keys(f); err != nil {
		return err
	}
	for _, step := range []func(*cobra.Command, *cmdutil.Factory) error{p.applyStreamARN, p.applyTimestamp, p.applyEndpoints,
		p.applyCleanup, p.applyRetrieval, p.applyCredentials, p.applyProgram} {
		if err := step(cmd, f); err != nil {
			return err
		}
	}
	return nil
}

// applyEmptyPages: callProcessRecordsEvenForEmptyRecordList = true sends
// a MultiLang child a processRecords for every GetRecords page, empty ones
// too, as the KCL's ProcessTask does. A per-batch handler (--exec) never
// gets an empty batch.
func (p *propertiesRun) applyEmptyPages(e javaprops.Entry) error {
	row := configRow{Setting: e.Key, Value: e.Value, Source: sourceFile, Property: e.Key}
	switch strings.ToLower(e.Value) {
	case "true":
		p.emptyPages = true
		row.Note = "a MultiLang child gets a processRecords for empty GetRecords pages too (records [])"
	case "false":
		row.Note = "a MultiLang child gets no empty processRecords"
	default:
		return cmdutil.UsageErrorf("invalid %s = %q in %s: use true or false", e.Key, e.Value, p.where(e))
	}
	p.extra = append(p.extra, row)
	return nil
}

// configure applies to the worker's config what the file says beyond the
// run flags; p may be nil (no --properties).
func (p *propertiesRun) configure(cfg *runner.Config) {
	if p == nil {
		return
	}
	cfg.MultiLangEmptyPages = p.emptyPages && cfg.MultiLang
	p.applyLeaderKeys(&cfg.KCL3.Assignment)
}

// applyStreamARN: streamArn names the stream and its region. A region
// given otherwise must be the same one.
func (p *propertiesRun) applyStreamARN(cmd *cobra.Command, f *cmdutil.Factory) error {
	e, ok := p.entry("streamArn")
	if !ok || e.Value == "" {
		return nil
	}
	region, name, err := parseStreamARN(e.Value)
	if err != nil {
		return cmdutil.UsageErrorf("invalid streamArn = %q in %s: %v", e.Value, p.where(e), err)
	}
	if r, ok := p.entry("regionName"); ok && r.Value != region {
		return cmdutil.UsageErrorf("streamArn = %s in %s is in region %s, but regionName = %s (%s): make them agree", e.Value, p.where(e), region, r.Value, p.where(r))
	}
	if fl := cmd.Flags().Lookup("region"); fl != nil && fl.Changed && fl.Value.String() != region {
		if _, byFile := p.fromFile["region"]; !byFile {
			return cmdutil.UsageErrorf("streamArn = %s in %s is in region %s, but --region is %s: make them agree", e.Value, p.where(e), region, fl.Value.String())
		}
	}
	if err := p.set(cmd, "stream", name, e); err != nil {
		return err
	}
	return p.set(cmd, "region", region, e)
}

// PropertiesAccount applies the properties file at path to run's flags, as
// run does, and returns the account of its streamArn, or "": iam-policy's
// view of run --properties.
func PropertiesAccount(run *cobra.Command, f *cmdutil.Factory, path string) (string, error) {
	props, err := loadProperties(run, f, path)
	if err != nil {
		return "", err
	}
	return props.streamAccount(), nil
}

// streamAccount is the account of the file's streamArn, or "" (for
// iam-policy run --properties, whose ARNs need one).
func (p *propertiesRun) streamAccount() string {
	e, ok := p.entry("streamArn")
	if !ok {
		return ""
	}
	if _, _, err := parseStreamARN(e.Value); err != nil {
		return ""
	}
	return strings.SplitN(e.Value, ":", 6)[4]
}

// parseStreamARN reads arn:PARTITION:kinesis:REGION:ACCOUNT:stream/NAME.
func parseStreamARN(arn string) (region, name string, err error) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "kinesis" || parts[3] == "" || !strings.HasPrefix(parts[5], "stream/") {
		return "", "", fmt.Errorf("want arn:aws:kinesis:REGION:ACCOUNT:stream/NAME")
	}
	name = strings.TrimPrefix(parts[5], "stream/")
	if name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("want arn:aws:kinesis:REGION:ACCOUNT:stream/NAME")
	}
	return parts[3], name, nil
}

// applyTimestamp: initialPositionInStreamExtended is epoch seconds and
// means AT_TIMESTAMP (DatePropertyValueDecoder).
func (p *propertiesRun) applyTimestamp(cmd *cobra.Command, f *cmdutil.Factory) error {
	e, ok := p.entry("initialPositionInStreamExtended")
	if !ok {
		return nil
	}
	if _, err := strconv.ParseInt(e.Value, 10, 64); err != nil {
		return cmdutil.UsageErrorf("invalid initialPositionInStreamExtended = %q in %s: want epoch seconds", e.Value, p.where(e))
	}
	if pos, ok := p.entry("initialPositionInStream"); ok && !strings.EqualFold(pos.Value, "AT_TIMESTAMP") {
		p.warn(f, "initialPositionInStream = "+pos.Value+" is overridden by initialPositionInStreamExtended (AT_TIMESTAMP)", pos)
	}
	// Both flags or neither: a timestamp from the file must not combine
	// with a position from the command line, nor the other way round.
	pos, ts := cmd.Flags().Lookup("initial-position"), cmd.Flags().Lookup("initial-timestamp")
	if pos.Changed || ts.Changed {
		return nil
	}
	if err := p.set(cmd, "initial-position", "AT_TIMESTAMP", e); err != nil {
		return err
	}
	return p.set(cmd, "initial-timestamp", e.Value, e)
}

// applyEndpoints: kinesisEndpoint and dynamoDBEndpoint override one
// service each, unless --endpoint-url (or KCLTOOL_ENDPOINT_URL) or the
// SDK's AWS_ENDPOINT_URL variables already say where to go.
func (p *propertiesRun) applyEndpoints(cmd *cobra.Command, f *cmdutil.Factory) error {
	for _, svc := range []struct{ key, env, setting string }{
		{"kinesisEndpoint", "AWS_ENDPOINT_URL_KINESIS", "kinesis-endpoint"},
		{"dynamoDBEndpoint", "AWS_ENDPOINT_URL_DYNAMODB", "dynamodb-endpoint"},
	} {
		e, ok := p.entry(svc.key)
		if !ok || e.Value == "" {
			continue
		}
		url := e.Value
		if !strings.Contains(url, "://") {
			url = "https://" + url
		}
		row := configRow{Setting: svc.setting, Value: url, Source: sourceFile, Property: svc.key}
		switch {
		case f.EndpointURL != "":
			row.Source, row.Value, row.Note = sourceOf(cmd.Flags().Lookup("endpoint-url")), f.EndpointURL, "--endpoint-url wins over "+svc.key
		case f.Getenv(svc.env) != "":
			row.Source, row.Value, row.Note = sourceEnv, f.Getenv(svc.env), svc.env+" wins over "+svc.key
		case f.Getenv("AWS_ENDPOINT_URL") != "":
			row.Source, row.Value, row.Note = sourceEnv, f.Getenv("AWS_ENDPOINT_URL"), "AWS_ENDPOINT_URL wins over "+svc.key
		case svc.key == "kinesisEndpoint":
			f.KinesisEndpoint = url
		default:
			f.DynamoDBEndpoint = url
		}
		p.extra = append(p.extra, row)
	}
	return nil
}

// applyCleanup: kcltool always deletes a finished parent's lease once its
// children have started (--cleanup-interval); false cannot be honoured.
func (p *propertiesRun) applyCleanup(_ *cobra.Command, f *cmdutil.Factory) error {
	e, ok := p.entry("cleanupLeasesUponShardCompletion")
	if !ok {
		return nil
	}
	switch strings.ToLower(e.Value) {
	case "true":
	case "false":
		p.warn(f, "cleanupLeasesUponShardCompletion = false is not supported: kcltool deletes finished parent leases once their children have started (--cleanup-interval)", e)
	default:
		return cmdutil.UsageErrorf("invalid cleanupLeasesUponShardCompletion = %q in %s: use true or false", e.Value, p.where(e))
	}
	return nil
}

// applyRetrieval follows RetrievalMode and the MultiLangDaemon's DEFAULT
// rule: polling when any polling key is set, fan-out otherwise. Fan-out is
// --efo, with consumerName and consumerArn as --consumer-name and
// --consumer-arn; --efo on the command line (or KCLTOOL_EFO) wins either way.
func (p *propertiesRun) applyRetrieval(cmd *cobra.Command, f *cmdutil.Factory) error {
	mode := "DEFAULT"
	e, explicit := p.entry("RetrievalMode")
	if explicit {
		mode = strings.ToUpper(e.Value)
	}
	switch mode {
	case "POLLING":
		p.retrieval, p.retrievalWhy = "POLLING", "RetrievalMode = POLLING"
	case "FANOUT":
		p.retrieval, p.retrievalWhy = "FANOUT", "RetrievalMode = FANOUT"
	case "DEFAULT":
		for _, k := range pollingKeys {
			if v, ok := p.entry(k); ok && v.Value != "0" && v.Value != "" {
				p.retrieval, p.retrievalWhy = "POLLING", "RetrievalMode DEFAULT with the polling key "+k
				break
			}
		}
		if p.retrieval == "" {
			p.retrieval, p.retrievalWhy = "FANOUT", "RetrievalMode DEFAULT with no polling key set"
		}
	default:
		return cmdutil.UsageErrorf("invalid RetrievalMode = %q in %s: use POLLING, FANOUT or DEFAULT", e.Value, p.where(e))
	}
	if p.retrieval != "FANOUT" {
		return nil
	}
	if err := p.set(cmd, "efo", "true", e); err != nil {
		return err
	}
	if _, set := p.fromFile["efo"]; set && !explicit {
		// Set by a rule, not by a key: --print-config says which.
		delete(p.fromFile, "efo")
		p.efoByRule = true
	}
	if fl := cmd.Flags().Lookup("efo"); fl != nil && fl.Value.String() != "true" {
		return nil // --efo=false from the command line or the environment
	}
	for key, flag := range map[string]string{"consumerName": "consumer-name", "consumerArn": "consumer-arn"} {
		if ce, ok := p.entry(key); ok && ce.Value != "" {
			if err := p.set(cmd, flag, ce.Value, ce); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyProgram records executableName, split on spaces as the
// MultiLangDaemon splits it, its program resolved.
func (p *propertiesRun) applyProgram(cmd *cobra.Command, f *cmdutil.Factory) error {
	e, ok := p.entry("executableName")
	if !ok || e.Value == "" {
		return nil
	}
	argv := strings.Fields(strings.ReplaceAll(e.Value, "\t", " "))
	argv[0] = resolveProgram(argv[0], filepath.Dir(p.path))
	p.program = argv
	return nil
}

// resolveProgram finds a program as the MultiLangDaemon's ProcessBuilder
// does (a bare name on PATH, a path from the working directory) and, when
// it is not found so, in the properties file's folder.
func resolveProgram(prog, dir string) string {
	if filepath.IsAbs(prog) {
		return prog
	}
	if !strings.Contains(prog, "/") {
		if _, err := exec.LookPath(prog); err == nil {
			return prog
		}
	} else if _, err := os.Stat(prog); err == nil {
		return prog
	}
	if alt := filepath.Join(dir, prog); fileExists(alt) {
		return alt
	}
	return prog
}

func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}

// sourceOf says where a flag's value came from.
func sourceOf(fl *pflag.Flag) string {
	switch {
	case fl == nil || !fl.Changed:
		return sourceDefault
	case fl.Annotations[cmdutil.FromEnvAnnotation] != nil:
		return sourceEnv
	}
	return sourceFlag
}

const (
	sourceFlag    = "flag"
	sourceEnv     = "env"
	sourceFile    = "file"
	sourceDefault = "default"
)
