package cmd

import "github.com/spf13/cobra"

const exitCodesHelp = `kcltool exits with one of these codes, so scripts and CI can tell outcomes apart:

  0    ok; an empty result is also 0
  1    error: AWS failed, a table or stream is missing, a write lost its condition
  2    usage: an unknown command or flag, an unexpected argument, or a bad flag value
  3    a check found problems (for example checkpoint diff --fail-on, doctor), or
       reset/import refused, skipped changed leases, or skipped bad entries (--skip-invalid)
  130  interrupted by Ctrl-C or SIGTERM
`

// newExitCodesHelpCmd adds "kcltool help exit-codes". Having no Run, cobra
// lists it under "Additional help topics" rather than as a command.
func newExitCodesHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "exit-codes",
		Short: "Exit codes and what they mean",
		Long:  exitCodesHelp,
	}
}
