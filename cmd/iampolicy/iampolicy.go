// Package iampolicy holds `kcltool iam-policy`: it parses a command line
// with the target command's own flags and renders the policy that the
// iampolicy domain package computes for it.
package iampolicy

import (
	"errors"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/iampolicy"
)

// CommandTree is what iam-policy needs of the other commands, which it
// cannot import (they all hang below the root, which imports iam-policy):
// the whole tree, to find and parse the target command as it would run, and
// run's --properties file, which fills run's flags and may name the
// stream's account.
type CommandTree struct {
	Root func(*cmdutil.Factory) *cobra.Command
	// RunProperties applies the properties file at path to run's flags,
	// as run does, and returns the account of its streamArn, or "".
	RunProperties func(run *cobra.Command, f *cmdutil.Factory, path string) (account string, err error)
}

// NewCmd returns `kcltool iam-policy`; tree gives it the other commands.
func NewCmd(f *cmdutil.Factory, tree CommandTree) *cobra.Command {
	c := &cobra.Command{
		Use:     "iam-policy COMMAND [flags]",
		Short:   "Print the least-privilege IAM policy a command line needs (JSON)",
		GroupID: "operate",
		Long: `Print the IAM policy that the given kcltool command line needs, and no more:
the actions it calls, scoped to the lease table and stream ARNs its flags name.
Give the command with the flags you run it with: they are parsed by that
command itself, so the flags and KCLTOOL_<FLAG> variables are the same, and
the flags that change what is called change the policy (run --create-table
and --cloudwatch-metrics; reset and import --execute, --force and --prune;
reset's target; doctor --no-cloudwatch; --backup-dir s3://bucket/prefix of
reset, import and backups ls, and import --file s3://...). run --properties
FILE reads the MultiLangDaemon properties file as run does (its stream,
streamArn's region and account, application and table). Nothing is called:
iam-policy needs no credentials.

The region comes from --region (or KCLTOOL_REGION), the account from
--account; ${Region}, ${Account}, ${Table} and ${Stream} stand where they are
not given (they read as CloudFormation Fn::Sub variables). CloudWatch's
PutMetricData and GetMetricData cannot be scoped to a resource: run's is
limited to the application's namespace by a condition. Backups in S3 are
granted on arn:aws:s3:::bucket/prefix/* only: s3:PutObject for reset and
import --execute, s3:GetObject for backups ls (with s3:ListBucket on the
bucket under an s3:prefix condition), and s3:GetObject on the one object
import --file s3://... reads.

Commands: ` + wrapList(iampolicy.Commands(), len("Commands: "), 79) + `.

The output is always JSON (the IAM policy grammar); -o json is accepted when
COMMAND has no -o of its own.`,
		Example: `  kcltool iam-policy run --app orders --stream orders --region us-east-1 --account 123456789012
  kcltool iam-policy run --app orders --stream orders --create-table --cloudwatch-metrics
  kcltool iam-policy run --properties app.properties
  kcltool iam-policy leases ls --app orders
  kcltool iam-policy checkpoint reset --app orders --stream orders --at 2026-11-01T10:00Z --execute
  kcltool iam-policy doctor --app orders --stream orders --no-cloudwatch
  aws iam put-role-policy --role-name orders-consumer --policy-name kcltool \
    --policy-document "$(kcltool iam-policy run --app orders --stream orders --region us-east-1 --account 123456789012)"`,
		// The flags after COMMAND are COMMAND's: they are parsed by it.
		DisableFlagParsing: true,
		Args:               cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmdutil.UsageErrorf("name the command: for example kcltool iam-policy run --app APP --stream STREAM")
			}
			own := args
			if i := slices.Index(args, "--"); i >= 0 {
				own = args[:i] // the rest is run's handler command
			}
			if slices.Contains(own, "-h") || slices.Contains(own, "--help") {
				return cmd.Help()
			}
			p, err := PolicyFor(f, tree, args)
			if err != nil {
				return err
			}
			return cmdutil.NewPrinter(f.IO, cmdutil.FormatJSON).Print(cmdutil.Output{Doc: func() any { return p }})
		},
	}
	// Declared for the help text and KCLTOOL_ACCOUNT; PolicyFor parses them
	// from the command line, anywhere after iam-policy.
	c.Flags().String("account", "", "AWS account id for the ARNs (default: the ${Account} placeholder)")
	c.Flags().StringP("output", "o", cmdutil.FormatJSON, "output format: json (the only one)")
	return c
}

// PolicyFor computes the policy of a command line (the arguments after
// `kcltool iam-policy`). The target command is found and its flags parsed
// in a command tree of its own, so that nothing of it runs.
func PolicyFor(f *cmdutil.Factory, tree CommandTree, args []string) (*iampolicy.Policy, error) {
	rf := cmdutil.NewFactory(f.IO, f.Getenv)
	rf.Log = f.Log // run --properties warns about the file as run does
	root := tree.Root(rf)
	target, rest, err := root.Find(cmdutil.JoinOptionalValues(args))
	if err != nil {
		return nil, cmdutil.UsageErrorf("%v", err)
	}
	path := strings.TrimPrefix(target.CommandPath(), root.Name()+" ")
	if target == root {
		return nil, cmdutil.UsageErrorf("name the command: for example kcltool iam-policy run --app APP --stream STREAM")
	}
	if !target.Runnable() {
		for _, a := range rest {
			if !strings.HasPrefix(a, "-") {
				return nil, cmdutil.UsageErrorf("unknown command %q for %q", a, target.CommandPath())
			}
		}
		return nil, cmdutil.UsageErrorf("%q needs a subcommand: %s", path, strings.Join(cmdutil.SubcommandNames(target), ", "))
	}
	account, output := "", cmdutil.FormatJSON
	fl := target.Flags()
	fl.StringVar(&account, "account", account, "")
	if fl.Lookup("output") == nil {
		fl.StringVarP(&output, "output", "o", output, "")
	}
	if err := target.ParseFlags(rest); err != nil {
		return nil, cmdutil.UsageErrorf("%s: %v", path, err)
	}
	if output != cmdutil.FormatJSON {
		return nil, cmdutil.UsageErrorf("invalid --output %q: an IAM policy is JSON", output)
	}
	if err := target.ValidateArgs(fl.Args()); err != nil {
		return nil, cmdutil.UsageErrorf("%s: %v", path, err)
	}
	if err := cmdutil.ApplyEnv(target, f.Getenv); err != nil {
		return nil, err
	}
	if path == "run" {
		// The file fills run's flags as it does for run itself: flags, then
		// KCLTOOL_* variables, then the file.
		if pf := fl.Lookup("properties"); pf != nil && pf.Value.String() != "" {
			fileAccount, err := tree.RunProperties(target, rf, pf.Value.String())
			if err != nil {
				return nil, err
			}
			if account == "" {
				account = fileAccount
			}
		}
	}
	t := iampolicy.Target{Command: path, Flags: map[string]string{}, Account: account}
	fl.VisitAll(func(fl *pflag.Flag) { t.Flags[fl.Name] = fl.Value.String() })
	t.Region = t.Flags["region"]
	p, err := iampolicy.For(t)
	if errors.Is(err, iampolicy.ErrNoCalls) {
		return nil, cmdutil.UsageErrorf("kcltool %s makes no AWS calls: it needs no IAM permissions", path)
	}
	return p, err
}

// wrapList joins names with commas into lines of at most width columns, the
// first of which starts at column first.
func wrapList(names []string, first, width int) string {
	var b strings.Builder
	col := first
	for i, n := range names {
		if i < len(names)-1 {
			n += ","
		}
		if i > 0 {
			if col+1+len(n) > width {
				b.WriteString("\n")
				col = 0
			} else {
				b.WriteString(" ")
				col++
			}
		}
		b.WriteString(n)
		col += len(n)
	}
	return b.String()
}
