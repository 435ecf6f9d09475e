package cmd

import (
	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/spf13/cobra"
)

func newCompletionCmd(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print the shell completion script",
		Long: `Print a completion script for your shell. The same scripts are kept in
the repository's completions/ folder.

  bash:        source <(kcltool completion bash)
  zsh:         kcltool completion zsh > "${fpath[1]}/_kcltool"
  fish:        kcltool completion fish > ~/.config/fish/completions/kcltool.fish
  powershell:  kcltool completion powershell | Out-String | Invoke-Expression

Besides commands and flags, Tab completes values, read from AWS as you type:
  --app, --table       the lease tables (tables whose key is leaseKey)
  --stream             the streams
  --shard, --owner     what the lease table named by --app or --table holds
                       (with --stream on the line: that stream's shards)
  -o, --fail-on, ...   the values the flag accepts
The lookups use --region, --profile and --endpoint-url from the line, the
KCLTOOL_ and AWS_ variables and the standard credential chain. They give up
after 2 seconds: without credentials or network, Tab offers nothing.`,
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args:      cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			root, out := cmd.Root(), f.IO.Out
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, true)
			default:
				return root.GenPowerShellCompletionWithDesc(out)
			}
		},
	}
}
