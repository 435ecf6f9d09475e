package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/iampolicy"
	"github.com/kcltool/kcltool/leasecore"
)

// TestIAMPolicyTableMatchesTheCommandTree: every command of the table is a
// runnable command, and every flag its conditions read is one of that
// command's flags. A renamed flag would otherwise turn a row silently on or
// off, and only a missing grant shows in the recorded calls.
func TestIAMPolicyTableMatchesTheCommandTree(t *testing.T) {
	root := NewRootCmd(cmdutil.NewFactory(&cmdutil.IOStreams{Out: io.Discard, ErrOut: io.Discard}, func(string) string { return "" }))
	for _, name := range iampolicy.Commands() {
		c, _, err := root.Find(strings.Fields(name))
		if err != nil || c == root || !c.Runnable() || strings.TrimPrefix(c.CommandPath(), "kcltool ") != name {
			t.Errorf("%q is not a kcltool command (found %q, %v)", name, c.CommandPath(), err)
			continue
		}
		for _, fl := range iampolicy.FlagsOf(name) {
			if c.Flags().Lookup(fl) == nil {
				t.Errorf("the table reads --%s of %q, which has no such flag", fl, name)
			}
		}
	}
}

func iamPolicy(t *testing.T, env map[string]string, args ...string) (*iampolicy.Policy, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := cmdutil.NewFactory(&cmdutil.IOStreams{Out: &out, ErrOut: &errOut}, func(k string) string { return env[k] })
	code := Run(context.Background(), f, append([]string{"iam-policy"}, args...))
	if code != 0 {
		return nil, errOut.String(), code
	}
	var p iampolicy.Policy
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatalf("not a policy: %v\n%s", err, out.String())
	}
	return &p, errOut.String(), code
}

func statement(p *iampolicy.Policy, sid string) iampolicy.Statement {
	for _, st := range p.Statement {
		if st.Sid == sid {
			return st
		}
	}
	return iampolicy.Statement{}
}

// TestIAMPolicyParsesTheTargetsFlags: the target command's own flags, the
// global ones, KCLTOOL_ variables, the --sample shorthand and --account
// anywhere after iam-policy reach the policy.
func TestIAMPolicyParsesTheTargetsFlags(t *testing.T) {
	p, _, code := iamPolicy(t, map[string]string{"KCLTOOL_STREAM": "events"},
		"--account", "123456789012", "run", "--region", "eu-west-1", "--app", "orders", "--create-table", "--exec", "cat")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if p.Version != "2012-10-17" {
		t.Errorf("Version %q", p.Version)
	}
	if got := statement(p, "LeaseTable").Resource; !slices.Equal(got, []string{"arn:aws:dynamodb:eu-west-1:123456789012:table/orders"}) {
		t.Errorf("table: %v", got)
	}
	if !slices.Contains(statement(p, "LeaseTable").Action, "dynamodb:CreateTable") {
		t.Errorf("--create-table: %v", statement(p, "LeaseTable").Action)
	}
	if got := statement(p, "Stream").Resource; !slices.Equal(got, []string{"arn:aws:kinesis:eu-west-1:123456789012:stream/events"}) {
		t.Errorf("KCLTOOL_STREAM: %v", got)
	}
	p, _, _ = iamPolicy(t, nil, "leases", "ls", "--app", "orders", "--sample", "400ms", "-o", "json")
	if got := statement(p, "LeaseTable").Resource[0]; got != "arn:aws:dynamodb:${Region}:${Account}:table/orders" {
		t.Errorf("placeholders: %v", got)
	}
	p, _, _ = iamPolicy(t, nil, "doctor", "--app", "orders", "--no-cloudwatch")
	if st := statement(p, "CloudWatchRead"); st.Sid != "" {
		t.Errorf("doctor --no-cloudwatch reads CloudWatch: %+v", st)
	}
}

func TestIAMPolicyUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "name the command"},
		{[]string{"checkpoint", "rest"}, `unknown command "rest" for "kcltool checkpoint"`},
		{[]string{"checkpoint"}, `"checkpoint" needs a subcommand`},
		{[]string{"leases", "ls", "--ap", "x"}, "unknown flag: --ap"},
		{[]string{"completion", "bash"}, "makes no AWS calls"},
	} {
		_, errOut, code := iamPolicy(t, nil, c.args...)
		if code != cmdutil.ExitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("iam-policy %v: exit %d, stderr %q; want exit 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// TestIAMPolicyIndexIsTheKCLs: the policy's index is the one leasecore
// queries and creates.
func TestIAMPolicyIndexIsTheKCLs(t *testing.T) {
	if iampolicy.KCL3IndexName != leasecore.KCL3IndexName {
		t.Errorf("iampolicy grants Query on %s, leasecore queries %s", iampolicy.KCL3IndexName, leasecore.KCL3IndexName)
	}
}
