package cmdutil

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// CheckCommandPath fails, as a usage error, a command line that names a
// command group (leases, checkpoint, shards) followed by a word that is
// none of its commands. Cobra checks this only at the top level: below it,
// `kcltool checkpoint rest` printed the group's help and exited 0, so a
// typo in a CI script passed, and `kcltool shards lineag --stream x`
// complained about --stream instead of the typo.
//
// A group given flags but no command is a usage error too (a script's
// `kcltool leases $CMD --region eu-west-1` with CMD empty). A group given
// nothing at all, or --help, still prints its help and exits 0: that is a
// person exploring, and it cannot be a command a script meant to run, as
// every command a script runs takes flags.
func CheckCommandPath(root *cobra.Command, args []string) error {
	if len(args) > 0 && args[0] == "help" {
		return checkHelpTopic(root, args[1:])
	}
	cmd, rest, err := root.Find(args)
	if err != nil || cmd == root || !cmd.HasSubCommands() {
		return nil // cobra reports the top level and leaf commands itself
	}
	word, known, unknown, help := scanGroupArgs(cmd, rest)
	switch {
	case help:
		return nil
	case word != "":
		return unknownCommandError(cmd, word)
	case known && !unknown:
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("%s needs a command: %s", cmd.CommandPath(), strings.Join(SubcommandNames(cmd), ", "))}
	}
	return nil // nothing (help, exit 0), or an unknown flag that cobra names
}

// checkHelpTopic fails `kcltool help TOPIC` whose topic names no command,
// as a typo of the command itself would: cobra's help printed "Unknown help
// topic" and exited 0.
func checkHelpTopic(root *cobra.Command, topic []string) error {
	var words []string
	for _, w := range topic {
		if !strings.HasPrefix(w, "-") {
			words = append(words, w)
		}
	}
	if len(words) == 0 {
		return nil
	}
	cmd, rest, err := root.Find(words)
	if err != nil {
		return unknownCommandError(root, words[0])
	}
	if len(rest) > 0 {
		return unknownCommandError(cmd, rest[0])
	}
	return nil
}

// scanGroupArgs reads a group's arguments the way pflag would, without
// setting any flag: the first word that is not a flag or a flag's value,
// whether flags known to the group (the global ones) or unknown to it were
// given, and whether help was asked for.
func scanGroupArgs(cmd *cobra.Command, rest []string) (word string, known, unknown, help bool) {
	lookup := func(name string, short bool) *pflag.Flag {
		for _, fs := range []*pflag.FlagSet{cmd.Flags(), cmd.InheritedFlags()} {
			var fl *pflag.Flag
			if short {
				fl = fs.ShorthandLookup(name)
			} else {
				fl = fs.Lookup(name)
			}
			if fl != nil {
				return fl
			}
		}
		return nil
	}
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			if i+1 < len(rest) {
				word = rest[i+1]
			}
			return
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			word = a
			return
		}
		name, _, inline := strings.Cut(strings.TrimLeft(a, "-"), "=")
		short := !strings.HasPrefix(a, "--")
		if short && len(name) > 1 {
			// -abc: only the first letter can take the value.
			name = name[:1]
			inline = true
		}
		if name == "help" || (short && name == "h") {
			help = true
			continue
		}
		fl := lookup(name, short)
		takesValue := fl == nil || fl.NoOptDefVal == ""
		if fl == nil {
			unknown = true
			// pflag, told to tolerate unknown flags, takes a following
			// word as the flag's value; so does this.
			takesValue = i+1 < len(rest) && !strings.HasPrefix(rest[i+1], "-")
		} else {
			known = true
		}
		if takesValue && !inline {
			i++
		}
	}
	return
}

// unknownCommandError is cobra's top-level message, for any depth, with
// the group's commands as a hint when no suggestion is close.
func unknownCommandError(cmd *cobra.Command, word string) error {
	msg := fmt.Sprintf("unknown command %q for %q", word, cmd.CommandPath())
	var hints []string
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default, set only on the root
	}
	if s := cmd.SuggestionsFor(word); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t") + "\n"
	} else {
		hints = append(hints, fmt.Sprintf("the commands of %s are %s", cmd.CommandPath(), strings.Join(SubcommandNames(cmd), ", ")))
	}
	return &ExitError{Code: ExitUsage, Err: &HintError{Err: fmt.Errorf("%s", msg), Hints: hints}}
}

// SubcommandNames lists the names of the commands below cmd a user can run.
func SubcommandNames(cmd *cobra.Command) []string {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return names
}

// argumentFlags are the flags a stray word most likely meant, and what
// they name. Commands take their inputs as flags only, so a word after the
// command is a value whose flag was left out.
var argumentFlags = map[string]string{"app": "the application", "stream": "the stream", "file": "the file"}

// NoPositionalArgs rejects arguments on a command that takes only flags,
// and says which flag the word was probably meant for:
//
//	unexpected argument "orders": give the application with --app (kcltool leases ls --app orders)
func NoPositionalArgs(getenv func(string) string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		arg := args[0]
		for _, name := range likelyFlags(c, arg) {
			fl := c.Flags().Lookup(name)
			if fl == nil || fl.Changed || getenv(EnvName(name)) != "" {
				continue
			}
			return UsageErrorf("unexpected argument %q: give %s with --%s (%s --%s %s)",
				arg, argumentFlags[name], name, c.CommandPath(), name, ShellQuote(arg))
		}
		return UsageErrorf("unexpected argument %q: %s takes no arguments, only flags (see %s --help)", arg, c.CommandPath(), c.CommandPath())
	}
}

// likelyFlags orders the command's argument flags as its usage line names
// them (`lineage --stream STREAM [--app APP]` puts --stream first), with
// --file first for a word that looks like a path.
func likelyFlags(c *cobra.Command, arg string) []string {
	type pos struct {
		name string
		at   int
	}
	var found []pos
	for name := range argumentFlags {
		at := strings.Index(c.Use, "--"+name+" ")
		if at < 0 || c.Flags().Lookup(name) == nil {
			continue
		}
		if name == "file" && looksLikePath(arg) {
			at = -1
		}
		found = append(found, pos{name, at})
	}
	slices.SortFunc(found, func(a, b pos) int { return a.at - b.at })
	names := make([]string, len(found))
	for i, p := range found {
		names[i] = p.name
	}
	return names
}

func looksLikePath(s string) bool {
	return strings.ContainsRune(s, '/') || strings.HasSuffix(s, ".json") || strings.HasSuffix(s, ".jsonl") || strings.HasSuffix(s, ".csv")
}
