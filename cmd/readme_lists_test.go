package cmd

import (
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kcltool/kcltool/cmd/cmdutil"
)

// The README's lists were found out of date by hand (issue 28: consumers
// missing from the command list, --skip-invalid from the flags without a
// variable). These tests hold them to the command tree.

// TestReadmeCommandListIsComplete: every command a user can run appears in
// the README's "Commands" block as a word after "kcltool" or a "|".
func TestReadmeCommandListIsComplete(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "## Commands\n\n```\n")
	if !ok {
		t.Fatal("README.md has no \"## Commands\" block")
	}
	block, _, _ := strings.Cut(after, "```\n")
	words := map[string]bool{}
	for _, re := range []string{`(?:kcltool|\|) ([a-z][a-z-]*)`, `help ([a-z][a-z-]*)`} { // "| help exit-codes"
		for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(block, -1) {
			words[m[1]] = true
		}
	}
	root := NewRootCmd(cmdutil.NewFactory(&cmdutil.IOStreams{Out: io.Discard, ErrOut: io.Discard}, func(string) string { return "" }))
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" && !words["help"] {
			continue
		}
		if !words[c.Name()] {
			t.Errorf("README.md's command list lacks %q (%s)", c.Name(), c.Short)
		}
	}
}

// TestReadmeTypedOnlyFlags: the flags that have no KCLTOOL_ variable (the
// ones that make a command write, which must be typed) are exactly those
// the README and docs/README.md list.
func TestReadmeTypedOnlyFlags(t *testing.T) {
	root := NewRootCmd(cmdutil.NewFactory(&cmdutil.IOStreams{Out: io.Discard, ErrOut: io.Discard}, func(string) string { return "" }))
	var typed []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(fl *pflag.Flag) {
			if fl.Name != "help" && fl.Name != "version" && !strings.Contains(fl.Usage, "$KCLTOOL_") && !slices.Contains(typed, "--"+fl.Name) {
				typed = append(typed, "--"+fl.Name)
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	slices.Sort(typed)
	flag := regexp.MustCompile("`(--[a-z-]+)`")
	for file, re := range map[string]*regexp.Regexp{
		"../README.md":      regexp.MustCompile(`except the ones that make a command write\s*\(([^)]*)\)`),
		"../docs/README.md": regexp.MustCompile(`(?s)flags that make a command write,(.*?)must be typed`),
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		m := re.FindSubmatch(b)
		if m == nil {
			t.Errorf("%s: no list of the flags without a variable (%s)", file, re)
			continue
		}
		var listed []string
		for _, f := range flag.FindAllSubmatch(m[1], -1) {
			listed = append(listed, string(f[1]))
		}
		slices.Sort(listed)
		if !slices.Equal(listed, typed) {
			t.Errorf("%s lists %v as the flags without a variable; the commands have %v", file, listed, typed)
		}
	}
}
