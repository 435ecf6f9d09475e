// Command gendocs writes kcltool's command reference from the cobra
// commands: markdown pages into DIR/cli and man pages into DIR/man. `make
// docs` runs it on docs/; `make docs-check` runs it into a temporary folder
// and compares, so a help text changed without `make docs` fails CI.
//
// The output must be byte-identical on every machine and every day: the
// command tree is built over an empty environment and streams that are not
// terminals, cobra's "Auto generated ... on DATE" lines are turned off, and
// the man pages carry manDate instead of today's date.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/kcltool/kcltool/cmd"
	"github.com/kcltool/kcltool/cmd/cmdutil"
)

// manDate is the date in the man pages' header. It is a constant, not the
// build's date, so that regenerating never changes a file by itself; move
// it forward when the commands change in a release.
var manDate = time.Date(2026, time.December, 1, 0, 0, 0, 0, time.UTC)

func main() {
	out := flag.String("out", "docs", "folder that receives cli/ (markdown) and man/ (man pages)")
	flag.Parse()
	if err := generate(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

func generate(out string) error {
	root := tree()
	cli, man := filepath.Join(out, "cli"), filepath.Join(out, "man")
	for _, dir := range []string{cli, man} {
		// Start empty, so a removed command leaves no stale page behind.
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if err := doc.GenMarkdownTree(root, cli); err != nil {
		return err
	}
	header := &doc.GenManHeader{Title: "KCLTOOL", Section: "1", Date: &manDate, Source: "kcltool", Manual: "kcltool manual"}
	return doc.GenManTree(root, header, man)
}

// tree is the command tree as a user's kcltool builds it, minus everything
// that depends on where it runs: no environment variables (KCLTOOL_* would
// otherwise change nothing here, but NO_COLOR or TERM might one day), no
// terminal, and no version stamp in the output.
func tree() *cobra.Command {
	io := &cmdutil.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}
	root := cmd.NewRootCmd(cmdutil.NewFactory(io, func(string) string { return "" }))
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return root
}
