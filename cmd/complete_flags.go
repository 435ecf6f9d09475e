package cmd

import (
	"bufio"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/inspect/doctor"
)

// Shell completion is given by flag name, here, for every command at once:
// a command that adds --app, --stream or -o completes them without a line
// of its own. NewRootCmd calls registerCompletions on every command. A
// completion a command registers itself (a narrower -o, say) is kept.
//
// Every flag that takes a value gets a completion function, so none falls
// back to the shell's file names by accident (TestEveryFlagCompletes).

// leaseTableFlags name a lease table, or the application it is named after.
var leaseTableFlags = map[string]bool{"app": true, "table": true, "to-app": true, "to-table": true}

// enumValues are the values of the flags that take one of a fixed set.
var enumValues = map[string][]string{
	"output":           cmdutil.ReadFormats,
	"color":            {"auto", "always", "never"},
	"log-level":        {"debug", "info", "warn", "error"},
	"log-format":       {"auto", "text", "json"},
	"format":           {"json", "raw"},
	"initial-position": {"TRIM_HORIZON", "LATEST", "AT_TIMESTAMP"},
	"to":               {"trim-horizon", "latest"},
	"to-sequence":      {"TRIM_HORIZON", "LATEST", "SHARD_END"}, // or a sequence number, which cannot be guessed
	"kcl-version":      {"3", "2"},
}

// fileFlags take a file name, dirFlags a directory.
var (
	fileFlags = map[string]bool{"file": true, "from-file": true, "exec": true}
	dirFlags  = map[string]bool{"backup-dir": true, "on-failure": true}
)

// freeTextFlags take a value nothing can be offered for (a time, an
// address, a name of one's choosing): they complete nothing, not files.
var freeTextFlags = map[string]bool{
	"at": true, "by-duration": true, "initial-timestamp": true,
	"worker-id": true, "metrics-addr": true, "region": true, "endpoint-url": true, "account": true,
	// KCL 3.x side-table names (migration status): free text, no file.
	"coordinator-state-table": true, "worker-metrics-table": true,
}

// numericTypes are pflag value types that never name a file.
var numericTypes = map[string]bool{
	"duration": true, "int": true, "int32": true, "int64": true,
	"uint": true, "uint32": true, "uint64": true, "float32": true, "float64": true,
}

// registerCompletions gives each flag defined on c its completion.
func registerCompletions(f *cmdutil.Factory, c *cobra.Command) {
	if !c.HasParent() {
		quietCompletionHooks(c)
	}
	c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
		if _, ok := c.GetFlagCompletionFunc(fl.Name); ok || hasPathAnnotation(fl) {
			return
		}
		if fn := completionFor(f, fl); fn != nil {
			_ = c.RegisterFlagCompletionFunc(fl.Name, fn)
		}
	})
}

// quietCompletionHooks keeps the root's PersistentPreRunE from failing
// cobra's hidden __complete command. It runs for __complete too (applying
// KCLTOOL_REGION and the like, which completion wants), but a check that
// fails there, such as KCLTOOL_COLOR=purple, would print an error and exit 2
// without the directive line, on every Tab. Completion never fails.
func quietCompletionHooks(root *cobra.Command) {
	pre := root.PersistentPreRunE
	if pre == nil {
		return
	}
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		err := pre(cmd, args)
		if cmd.Name() == cobra.ShellCompRequestCmd {
			return nil
		}
		return err
	}
}

// completionFor picks a flag's completion by its name, then by its type; nil
// for a flag kcltool does not know how to complete (a bool needs none).
func completionFor(f *cmdutil.Factory, fl *pflag.Flag) cobra.CompletionFunc {
	switch {
	case leaseTableFlags[fl.Name]:
		return dynamicCompletion(f, completeLeaseTables)
	case fl.Name == "stream":
		return dynamicCompletion(f, completeStreams)
	case fl.Name == "shard":
		return dynamicCompletion(f, completeShards)
	case fl.Name == "owner":
		return dynamicCompletion(f, completeOwners)
	case fl.Name == "consumer-name":
		return dynamicCompletion(f, completeConsumers)
	case fl.Name == "profile":
		return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return listCompletions("", toComplete, awsProfiles(f.Getenv)), cobra.ShellCompDirectiveNoFileComp
		}
	case fl.Name == "fail-on", fl.Name == "state":
		return valuesCompletion(fl, failOnValues(fl))
	case fl.Annotations[cmdutil.ColumnsAnnotation] != nil: // --sort-by, --columns: the table's columns
		return valuesCompletion(fl, fl.Annotations[cmdutil.ColumnsAnnotation])
	case enumValues[fl.Name] != nil:
		return valuesCompletion(fl, enumValues[fl.Name])
	case fileFlags[fl.Name]:
		return directiveOnly(cobra.ShellCompDirectiveDefault)
	case dirFlags[fl.Name]:
		return directiveOnly(cobra.ShellCompDirectiveFilterDirs)
	case freeTextFlags[fl.Name], numericTypes[fl.Value.Type()]:
		return cobra.NoFileCompletions
	}
	return nil
}

// failOnValues: lag's --fail-on is a list of row states, doctor's a
// least severity.
func failOnValues(fl *pflag.Flag) []string {
	if strings.HasSuffix(fl.Value.Type(), "Slice") {
		var states []string
		for _, s := range inspect.LagStates {
			states = append(states, string(s))
		}
		return states
	}
	var sev []string
	for s := doctor.SeverityInfo; s <= doctor.SeverityCritical; s++ {
		sev = append(sev, s.String())
	}
	return append(sev, "never")
}

// valuesCompletion offers fixed values; for a comma-separated list flag it
// completes the value after the last comma and skips those already given.
func valuesCompletion(fl *pflag.Flag, values []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		done, word := splitListWord(fl, toComplete)
		return listCompletions(done, word, values), cobra.ShellCompDirectiveNoFileComp
	}
}

func directiveOnly(d cobra.ShellCompDirective) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return nil, d
	}
}

// hasPathAnnotation reports a flag marked with MarkFlagFilename or
// MarkFlagDirname, which cobra completes itself.
func hasPathAnnotation(fl *pflag.Flag) bool {
	_, file := fl.Annotations[cobra.BashCompFilenameExt]
	_, dir := fl.Annotations[cobra.BashCompSubdirsInDir]
	return file || dir
}

// awsProfiles lists the profiles of the shared config and credentials
// files, where the SDK looks for them (AWS_CONFIG_FILE,
// AWS_SHARED_CREDENTIALS_FILE, or ~/.aws). Only local files are read.
func awsProfiles(getenv func(string) string) []string {
	home, _ := os.UserHomeDir()
	pick := func(env, name string) string {
		if p := getenv(env); p != "" {
			return p
		}
		if home == "" {
			return ""
		}
		return filepath.Join(home, ".aws", name)
	}
	seen := map[string]bool{}
	readSections(pick("AWS_CONFIG_FILE", "config"), true, seen)
	readSections(pick("AWS_SHARED_CREDENTIALS_FILE", "credentials"), false, seen)
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// readSections adds the profile names of one shared file: "[profile x]" or
// "[default]" in the config file, "[x]" in the credentials file. The config
// file's other sections (sso-session, services) are not profiles.
func readSections(path string, config bool, seen map[string]bool) {
	if path == "" {
		return
	}
	file, err := os.Open(path)
	if err != nil {
		return
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "[") || !strings.HasSuffix(line, "]") {
			continue
		}
		fields := strings.Fields(line[1 : len(line)-1])
		switch {
		case len(fields) == 1 && (!config || fields[0] == "default"):
			seen[fields[0]] = true
		case len(fields) == 2 && config && fields[0] == "profile":
			seen[fields[1]] = true
		}
	}
}
