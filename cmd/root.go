// Package cmd is kcltool's command line: it parses flags, calls the domain
// packages and renders their results. It holds no lease logic of its own.
// It assembles the command tree from one package per noun (leases, shards,
// doctor, iampolicy, ...) over the shared cmdutil, and keeps what spans the
// whole tree: completion, help topics, the version and the JSON schema.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/kcltool/kcltool/cmd/checkpoint"
	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/cmd/consumers"
	"github.com/kcltool/kcltool/cmd/doctor"
	iampolicycmd "github.com/kcltool/kcltool/cmd/iampolicy"
	"github.com/kcltool/kcltool/cmd/leases"
	"github.com/kcltool/kcltool/cmd/migration"
	"github.com/kcltool/kcltool/cmd/run"
	"github.com/kcltool/kcltool/cmd/shards"
	topcmd "github.com/kcltool/kcltool/cmd/top"
	"github.com/spf13/cobra"
)

// Main runs kcltool with the process's arguments and returns the exit code.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f := cmdutil.NewFactory(cmdutil.SystemIO(), os.Getenv)
	return Run(ctx, f, os.Args[1:])
}

// Run executes one kcltool command line and prints any error to stderr.
func Run(ctx context.Context, f *cmdutil.Factory, args []string) int {
	root := NewRootCmd(f)
	args = cmdutil.JoinOptionalValues(args)
	root.SetArgs(args)
	err := cmdutil.CheckCommandPath(root, args)
	if err == nil {
		err = root.ExecuteContext(ctx)
	}
	err = cmdutil.SayFlags(cmdutil.ExplainCredentials(err))
	code := cmdutil.ExitCode(ctx, err)
	if err != nil && code != cmdutil.ExitOK {
		cmdutil.LogRaw(f.Logger(), err)
		printError(f.IO, err, code)
	}
	return code
}

func printError(io *cmdutil.IOStreams, err error, code int) {
	var ee *cmdutil.ExitError
	if errors.As(err, &ee) && ee.Err == nil {
		return
	}
	if code == cmdutil.ExitInterrupted {
		fmt.Fprintln(io.ErrOut, "kcltool: interrupted")
		return
	}
	if code == cmdutil.ExitProblems {
		fmt.Fprintf(io.ErrOut, "kcltool: problems found: %v\n", err)
		return
	}
	fmt.Fprintf(io.ErrOut, "kcltool: error: %v\n", err)
	var he *cmdutil.HintError
	if errors.As(err, &he) {
		for _, h := range he.Hints {
			fmt.Fprintf(io.ErrOut, "kcltool: hint: %s\n", h)
		}
	}
	if code == cmdutil.ExitUsage {
		fmt.Fprintln(io.ErrOut, "kcltool: hint: see 'kcltool --help' or 'kcltool COMMAND --help'")
	}
}

// NewRootCmd builds the whole command tree.
func NewRootCmd(f *cmdutil.Factory) *cobra.Command {
	var colorMode string
	var logs cmdutil.LogFlags
	root := &cobra.Command{
		Use:   "kcltool",
		Short: "Consume Kinesis with the KCL lease protocol, and operate KCL lease tables",
		Long: `kcltool is one binary for Kinesis consumers that keep their state in a KCL
lease table in DynamoDB. It is a consumer (kcltool run) that leases shards with
the same protocol as the Java KCL, and an operator's tool that lists leases,
shows lag and lineage, and resets checkpoints on tables written by the Java
KCL 2.x and 3.x as well as its own.

Every flag can also be set with KCLTOOL_<FLAG>, for example KCLTOOL_APP=orders.
AWS access uses the standard credential chain; the SDK's AWS_ENDPOINT_URL_DYNAMODB,
AWS_ENDPOINT_URL_KINESIS and AWS_ENDPOINT_URL_CLOUDWATCH are honoured.`,
		Version:       versionString(),
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.ApplyEnv(cmd, f.Getenv); err != nil {
				return err
			}
			switch colorMode {
			case "auto", "always", "never":
			default:
				return cmdutil.UsageErrorf("invalid --color %q: use auto, always or never", colorMode)
			}
			f.IO.Color = cmdutil.DecideColor(colorMode, f.IO.OutTTY, f.Getenv)
			if f.IO.Width == 0 && f.IO.Out == os.Stdout {
				f.IO.Width = cmdutil.DecideWidth(f.IO.OutTTY, f.Getenv)
			}
			log, err := cmdutil.NewLogger(logs.Level, logs.Format, f.IO.ErrOut, cmdutil.StderrIsTerminal(f))
			if err != nil {
				return err
			}
			f.Log = log
			return nil
		},
	}
	root.SetVersionTemplate("kcltool {{.Version}}\n")
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
	})
	pf := root.PersistentFlags()
	pf.StringVar(&f.Region, "region", "", "AWS region (default: the SDK's chain, AWS_REGION or the profile)")
	pf.StringVar(&f.Profile, "profile", "", "AWS shared-config profile")
	pf.StringVar(&f.EndpointURL, "endpoint-url", "", "override the endpoint of every AWS service (for local servers)")
	pf.StringVar(&colorMode, "color", "auto", "colour output: auto, always or never (NO_COLOR is honoured)")
	pf.StringVar(&logs.Level, "log-level", "info", "least important log level on stderr: debug, info, warn or error (debug adds the AWS SDK's messages and raw errors)")
	pf.StringVar(&logs.Format, "log-format", "auto", "log format on stderr: text, json, or auto (text on a terminal, json otherwise)")
	_ = root.RegisterFlagCompletionFunc("log-level", cobra.FixedCompletions([]string{"debug", "info", "warn", "error"}, cobra.ShellCompDirectiveNoFileComp))
	_ = root.RegisterFlagCompletionFunc("log-format", cobra.FixedCompletions([]string{"auto", "text", "json"}, cobra.ShellCompDirectiveNoFileComp))

	root.AddGroup(&cobra.Group{ID: "consume", Title: "Consuming:"}, &cobra.Group{ID: "operate", Title: "Operating:"})
	root.AddCommand(
		run.NewCmd(f),
		leases.NewCmd(f),
		migration.NewCmd(f),
		checkpoint.NewCmd(f),
		withGroup(checkpoint.NewDiffCmd(f, "lag"), "operate", "Alias of 'checkpoint diff'"),
		shards.NewCmd(f),
		consumers.NewCmd(f),
		topcmd.NewCmd(f),
		withGroup(shards.NewLineageCmd(f, "lineage"), "operate", "Alias of 'shards lineage'"),
		iampolicycmd.NewCmd(f, iamPolicyTree()),
		newCompletionCmd(f),
		newVersionCmd(f),
		newExitCodesHelpCmd(),
	)
	root.AddCommand(doctor.NewCmds(f)...)
	walk(root, func(c *cobra.Command) {
		cmdutil.EnvHelp(c)
		registerCompletions(f, c)
		if c.Args == nil && !c.HasSubCommands() {
			c.Args = cmdutil.NoPositionalArgs(f.Getenv)
		}
	})
	return root
}

// iamPolicyTree hands iam-policy the command tree and run's properties
// file, which it cannot import itself.
func iamPolicyTree() iampolicycmd.CommandTree {
	return iampolicycmd.CommandTree{
		Root:          NewRootCmd,
		RunProperties: run.PropertiesAccount,
	}
}

// withGroup files a command under a help group, with a short line of its own.
func withGroup(c *cobra.Command, group, short string) *cobra.Command {
	c.GroupID, c.Short = group, short
	return c
}

func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walk(sub, fn)
	}
}
