package cmd

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	iampolicycmd "github.com/kcltool/kcltool/cmd/iampolicy"
	"github.com/kcltool/kcltool/iampolicy"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// Every kcltool process the end-to-end tests start talks to the local
// servers through recording proxies, one set per process, so each recorded
// call belongs to the exact command line that made it. After the tests,
// checkRecordedCalls computes `kcltool iam-policy` of each command line and
// fails on every call that policy does not allow.

// callsDirEnv passes the folder of the call logs to the kcltool processes
// the testscript scripts run (the test binary itself, see TestMain).
const callsDirEnv = "KCLTOOLTEST_CALLS_DIR"

// callsDir is this test binary's folder of call logs; "" records nothing.
var callsDir string

// testAccount is the account the recorded calls' ARNs are checked in.
const testAccount = "123456789012"

// endpointVars are the variables through which tests point kcltool at the
// local servers (and the CloudWatch fakes).
var endpointVars = []string{"AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_KINESIS", "AWS_ENDPOINT_URL_CLOUDWATCH", "AWS_ENDPOINT_URL_S3"}

// startCallRecording makes the folder of call logs; the returned function
// checks them and removes it.
func startCallRecording() (check func() error) {
	dir, err := os.MkdirTemp("", "kcltool-calls-")
	if err != nil {
		return func() error { return fmt.Errorf("recording AWS calls: %v", err) }
	}
	callsDir = dir
	return func() error {
		defer os.RemoveAll(dir)
		return checkRecordedCalls(dir)
	}
}

// keptForCallCheck are folders removed only after the iam-policy check,
// which computes the policy of each command line again: a --properties
// file a recorded command read must still be there.
var (
	keptForCallCheck   []string
	keptForCallCheckMu sync.Mutex
)

// dirKeptForCallCheck is a temporary folder that lives until the
// iam-policy check has run (t.TempDir is gone by then).
func dirKeptForCallCheck(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "kcltool-calls-files-")
	if err != nil {
		t.Fatal(err)
	}
	keptForCallCheckMu.Lock()
	keptForCallCheck = append(keptForCallCheck, d)
	keptForCallCheckMu.Unlock()
	return d
}

// recordCalls returns env (a process environment) with each AWS endpoint
// replaced by a recording proxy that logs the calls of the command line
// args. The proxies stop when the test ends.
func recordCalls(t testing.TB, args, env []string) []string {
	t.Helper()
	if callsDir == "" {
		return env
	}
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v // the last one wins, as in exec
	}
	log := emulator.NewCallLog(callsDir, args, flagVars(vars))
	t.Cleanup(func() {
		if err := log.Close(); err != nil {
			t.Errorf("call log: %v", err)
		}
	})
	for _, v := range endpointVars {
		if u := vars[v]; u != "" && reachable(u) {
			r, err := emulator.NewRecorder(u, log)
			if err != nil {
				t.Fatalf("recording proxy for %s: %v", u, err)
			}
			t.Cleanup(r.Close)
			env = append(env, v+"="+r.URL)
		}
	}
	return env
}

// mainRecordingCalls is the kcltool that testscript scripts run: Main,
// with its endpoints behind recording proxies when the script's
// environment names a folder for the logs.
func mainRecordingCalls() int {
	dir := os.Getenv(callsDirEnv)
	if dir == "" {
		return Main()
	}
	vars := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	log := emulator.NewCallLog(dir, os.Args[1:], flagVars(vars))
	defer func() {
		if err := log.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "kcltool test: call log: %v\n", err)
		}
	}()
	for _, v := range endpointVars {
		if u := vars[v]; u != "" && reachable(u) {
			r, err := emulator.NewRecorder(u, log)
			if err != nil {
				fmt.Fprintf(os.Stderr, "kcltool test: recording proxy for %s: %v\n", u, err)
				return 1
			}
			defer r.Close()
			os.Setenv(v, r.URL)
		}
	}
	return Main()
}

// flagVars keeps the variables that can set flags: the policy of a
// command line depends on them as the command does.
func flagVars(vars map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range vars {
		if strings.HasPrefix(k, "KCLTOOL_") {
			out[k] = v
		}
	}
	return out
}

// reachable: an endpoint nothing listens on is left alone, so that the
// tests of "cannot reach the endpoint" still see kcltool's own error.
func reachable(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return false
	}
	c, err := net.DialTimeout("tcp", u.Host, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// checkRecordedCalls computes the policy of every logged command line, as
// `kcltool iam-policy ARGS --account 123456789012` does, and lists each
// call it does not allow.
func checkRecordedCalls(dir string) error {
	invs, err := emulator.ReadCallLogs(dir)
	if err != nil {
		return err
	}
	problems := map[string]bool{}
	calls := 0
	granted, called := map[string]bool{}, map[string]bool{} // "command action"
	for _, inv := range invs {
		if len(inv.Calls) == 0 || isCompletion(inv.Argv) {
			continue
		}
		line := commandLine(inv)
		env := inv.Env
		f := cmdutil.NewFactory(&cmdutil.IOStreams{Out: io.Discard, ErrOut: io.Discard}, func(k string) string { return env[k] })
		p, err := iampolicycmd.PolicyFor(f, iamPolicyTree(), append(append([]string{}, inv.Argv...), "--account", testAccount))
		if err != nil {
			problems[fmt.Sprintf("%s: made %d AWS calls, but kcltool iam-policy fails: %v", line, len(inv.Calls), err)] = true
			continue
		}
		name := commandName(inv.Argv)
		for _, st := range p.Statement {
			for _, a := range st.Action {
				granted[name+" "+a] = true
			}
		}
		for _, c := range inv.Calls {
			calls++
			r := requestOf(c)
			called[name+" "+r.Action] = true
			if !p.Allows(r) {
				on := r.Resource
				if on == "" {
					on = "(no resource named)"
				}
				if c.Namespace != "" {
					on += " (namespace " + c.Namespace + ")"
				}
				problems[fmt.Sprintf("%s: %s on %s", line, r.Action, on)] = true
			}
		}
	}
	if testing.Verbose() {
		fmt.Printf("iam-policy check: %d command lines made %d distinct AWS calls\n", len(invs), calls)
		// Granted but called by no test: a path the tests do not reach, or
		// a grant too many.
		var unused []string
		for g := range granted {
			if !called[g] {
				unused = append(unused, g)
			}
		}
		sort.Strings(unused)
		fmt.Printf("iam-policy check: granted, never called by these tests: %s\n", strings.Join(unused, "; "))
	}
	if len(problems) == 0 {
		return nil
	}
	var list []string
	for p := range problems {
		list = append(list, "  "+p)
	}
	sort.Strings(list)
	return fmt.Errorf("%d AWS calls made by the end-to-end tests are missing from the policy kcltool iam-policy prints for their command line (iampolicy/rules.go):\n%s",
		len(list), strings.Join(list, "\n"))
}

// isCompletion: the shell's completion requests are not a command a
// policy is asked for.
func isCompletion(argv []string) bool {
	return len(argv) > 0 && strings.HasPrefix(argv[0], "__complete")
}

// requestOf turns a recorded call into what a policy judges, in the test
// account and the region the request was signed for.
func requestOf(c emulator.Call) iampolicy.Request {
	if c.Service == "s3" {
		return s3RequestOf(c)
	}
	r := iampolicy.Request{Action: c.Service + ":" + c.Action, Namespace: c.Namespace}
	region := c.Region
	if region == "" {
		region = emulator.Region
	}
	stream := c.Stream
	if c.StreamARN != "" {
		_, stream, _ = strings.Cut(c.StreamARN, ":stream/")
	}
	// A consumer's ARN is stream/NAME/consumer/CONSUMER:TIMESTAMP; named
	// on its stream, any timestamp. Registering one is authorized on the
	// stream.
	consumer := ""
	if _, rest, ok := strings.Cut(c.ConsumerARN, ":stream/"); ok {
		consumer = iampolicy.StreamARN(region, testAccount, rest)
	} else if c.ConsumerName != "" && stream != "" && c.Action != "RegisterStreamConsumer" {
		consumer = iampolicy.StreamARN(region, testAccount, stream) + "/consumer/" + c.ConsumerName + ":*"
	}
	switch {
	case consumer != "":
		r.Resource = consumer
	case c.Table != "" && c.Index != "":
		r.Resource = iampolicy.TableARN(region, testAccount, c.Table) + "/index/" + c.Index
	case c.Table != "":
		r.Resource = iampolicy.TableARN(region, testAccount, c.Table)
	case stream != "":
		r.Resource = iampolicy.StreamARN(region, testAccount, stream)
	}
	return r
}

// s3RequestOf: IAM authorizes S3 calls by actions that are not always the
// operation's name (a ListObjectsV2 is s3:ListBucket, on the bucket, with
// its prefix as s3:prefix); object calls are judged on the object's ARN.
func s3RequestOf(c emulator.Call) iampolicy.Request {
	switch c.Action {
	case "ListObjectsV2":
		return iampolicy.Request{Action: "s3:ListBucket", Resource: iampolicy.S3ARN(c.Bucket, ""), Prefix: c.Prefix}
	case "HeadObject":
		return iampolicy.Request{Action: "s3:GetObject", Resource: iampolicy.S3ARN(c.Bucket, c.Key)}
	case "CreateBucket":
		return iampolicy.Request{Action: "s3:CreateBucket", Resource: iampolicy.S3ARN(c.Bucket, "")}
	}
	return iampolicy.Request{Action: "s3:" + c.Action, Resource: iampolicy.S3ARN(c.Bucket, c.Key)}
}

// commandLine is the invocation as a shell would take it, with the
// variables that set flags in front.
func commandLine(inv emulator.Invocation) string {
	var words []string
	for k, v := range inv.Env {
		words = append(words, k+"="+cmdutil.ShellQuote(v))
	}
	sort.Strings(words)
	words = append(words, "kcltool")
	for _, a := range inv.Argv {
		words = append(words, cmdutil.ShellQuote(a))
	}
	return strings.Join(words, " ")
}

// commandName is the command path of an argv, the flags left out.
func commandName(argv []string) string {
	root := NewRootCmd(cmdutil.NewFactory(&cmdutil.IOStreams{Out: io.Discard, ErrOut: io.Discard}, func(string) string { return "" }))
	c, _, err := root.Find(argv)
	if err != nil {
		return "?"
	}
	return strings.TrimPrefix(c.CommandPath(), "kcltool ")
}
