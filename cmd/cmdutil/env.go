package cmdutil

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// EnvName is the environment variable that can set a flag: KCLTOOL_ plus the
// flag name in upper case with dashes as underscores (--endpoint-url reads
// KCLTOOL_ENDPOINT_URL).
func EnvName(flag string) string {
	return "KCLTOOL_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// typedOnly are the flags that make a command write to a lease table. They
// are never read from the environment: a variable left set in a shell or a CI
// job must not turn a dry run into a write.
// --skip-invalid is one: it turns a refused file into a partial write.
var typedOnly = map[string]bool{"execute": true, "force": true, "prune": true, "skip-invalid": true}

// ApplyEnv fills every flag the command line did not set from its
// KCLTOOL_<FLAG> variable. The command line always wins.
func ApplyEnv(cmd *cobra.Command, getenv func(string) string) error {
	var err error
	visit := func(fl *pflag.Flag) {
		if err != nil || fl.Changed || fl.Name == "help" || fl.Name == "version" || typedOnly[fl.Name] {
			return
		}
		v := getenv(EnvName(fl.Name))
		if v == "" {
			return
		}
		if serr := fl.Value.Set(v); serr != nil {
			err = UsageErrorf("invalid value %q in %s for --%s: %v", v, EnvName(fl.Name), fl.Name, serr)
			return
		}
		fl.Changed = true
		// run --print-config tells a value from the environment apart from
		// one typed on the command line.
		if fl.Annotations == nil {
			fl.Annotations = map[string][]string{}
		}
		fl.Annotations[FromEnvAnnotation] = []string{EnvName(fl.Name)}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	return err
}

// FromEnvAnnotation marks a flag ApplyEnv set.
const FromEnvAnnotation = "kcltool_from_env"

// EnvHelp adds the environment-variable note to a command's flag usage.
func EnvHelp(cmd *cobra.Command) {
	note := func(fl *pflag.Flag) {
		if fl.Name == "help" || typedOnly[fl.Name] {
			return
		}
		if !strings.Contains(fl.Usage, "[$KCLTOOL_") { // not "KCLTOOL_* variables" in the text
			fl.Usage += " [$" + EnvName(fl.Name) + "]"
		}
	}
	cmd.Flags().VisitAll(note)
	cmd.PersistentFlags().VisitAll(note)
}

// FlagRef names a set flag as the user gave it, for an error about it:
// "--sample", or "KCLTOOL_SAMPLE (--sample from the environment)" when a
// variable set it, so that the user knows what to unset.
func FlagRef(cmd *cobra.Command, name string) string {
	fl := cmd.Flags().Lookup(name)
	if fl != nil && fl.Annotations[FromEnvAnnotation] != nil {
		return EnvName(name) + " (--" + name + " from the environment)"
	}
	return "--" + name
}
