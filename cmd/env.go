package cmd

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// envName is the environment variable that can set a flag: KCLTOOL_ plus the
// flag name in upper case with dashes as underscores (--endpoint-url reads
// KCLTOOL_ENDPOINT_URL).
func envName(flag string) string {
	return "KCLTOOL_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// typedOnly are the flags that make a command write to a lease table. They
// are never read from the environment: a variable left set in a shell or a CI
// job must not turn a dry run into a write.
// --skip-invalid is one: it turns a refused file into a partial write.
var typedOnly = map[string]bool{"execute": true, "force": true, "prune": true, "skip-invalid": true}

// applyEnv fills every flag the command line did not set from its
// KCLTOOL_<FLAG> variable. The command line always wins.
func applyEnv(cmd *cobra.Command, getenv func(string) string) error {
	var err error
	visit := func(fl *pflag.Flag) {
		if err != nil || fl.Changed || fl.Name == "help" || fl.Name == "version" || typedOnly[fl.Name] {
			return
		}
		v := getenv(envName(fl.Name))
		if v == "" {
			return
		}
		if serr := fl.Value.Set(v); serr != nil {
			err = usageErrorf("invalid value %q in %s for --%s: %v", v, envName(fl.Name), fl.Name, serr)
			return
		}
		fl.Changed = true
		// run --print-config tells a value from the environment apart from
		// one typed on the command line.
		if fl.Annotations == nil {
			fl.Annotations = map[string][]string{}
		}
		fl.Annotations[fromEnvAnnotation] = []string{envName(fl.Name)}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	return err
}

// fromEnvAnnotation marks a flag applyEnv set.
const fromEnvAnnotation = "kcltool_from_env"

// envHelp adds the environment-variable note to a command's flag usage.
func envHelp(cmd *cobra.Command) {
	note := func(fl *pflag.Flag) {
		if fl.Name == "help" || typedOnly[fl.Name] {
			return
		}
		if !strings.Contains(fl.Usage, "KCLTOOL_") {
			fl.Usage += " [$" + envName(fl.Name) + "]"
		}
	}
	cmd.Flags().VisitAll(note)
	cmd.PersistentFlags().VisitAll(note)
}
