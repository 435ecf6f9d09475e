package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// docMarksFile lists the documented examples that are not run, each with its
// reason (docs/development.md, "Documented examples").
const docMarksFile = "testdata/doc_examples_marks.txt"

// TestDocExamples: every `kcltool …` line in a fenced block of README.md and
// docs/*.md names commands and flags the binary has, and runs against the
// local servers (a stream and lease table named as the docs name them,
// seeded once) with exit 0 or 3, or is marked in docMarksFile with a reason.
// A marked example is still parsed by the command tree (names only for a
// synopsis), and a mark whose example is gone fails the test, so docs and
// binary cannot drift apart quietly.
func TestDocExamples(t *testing.T) {
	t.Parallel() // long, and mostly waiting on the local servers: it overlaps others on CI's two cores
	root, err := emulator.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	marks, err := readDocMarks(docMarksFile)
	if err != nil {
		t.Fatal(err)
	}
	files, err := docExampleFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	var examples []docExample
	for _, f := range files {
		ex, err := extractDocExamples(root, f)
		if err != nil {
			t.Fatal(err)
		}
		examples = append(examples, ex...)
	}
	if len(examples) < 20 {
		t.Fatalf("found only %d examples in %v: is the extraction broken?", len(examples), files)
	}
	seen := map[string]bool{}
	var run, writers []docExample
	for _, ex := range examples {
		seen[ex.markKey()] = true
		m, marked := marks[ex.markKey()]
		if err := parseDocExample(ex, marked && m.synopsis()); err != nil {
			t.Errorf("%s\n\t%v\n\tfix the example (or the command, if the docs are right); a usage line with placeholders is marked in cmd/%s:\n\t%s => synopsis", ex, err, docMarksFile, ex.markKey())
			continue
		}
		switch {
		case marked:
		case len(ex.args) > 0 && ex.args[0] != "iam-policy" && slices.Contains(ex.args, "--execute"):
			writers = append(writers, ex)
		default:
			run = append(run, ex)
		}
	}
	for key, m := range marks {
		if !seen[key] {
			t.Errorf("%s:%d: stale mark: no fenced example %q in %s any more; delete the line", docMarksFile, m.line, m.text, m.file)
		}
	}
	if t.Failed() {
		return
	}
	env := seedDocStack(t, root)
	t.Logf("running %d examples, %d of them writing; %d marked", len(run)+len(writers), len(writers), len(marks))
	t.Run("reads", func(t *testing.T) {
		for _, ex := range run {
			t.Run(fmt.Sprintf("%s:%d", ex.file, ex.line), func(t *testing.T) {
				t.Parallel()
				runDocExample(t, env, ex)
			})
		}
	})
	// Writes one after another, after the reads: two resets of one table at
	// once would race each other's conditional writes.
	for _, ex := range writers {
		t.Run(fmt.Sprintf("%s:%d", ex.file, ex.line), func(t *testing.T) { runDocExample(t, env, ex) })
	}
}

// parseDocExample finds the example's command in the command tree and
// parses its flags with that command's own flag set: unknown commands and
// flags fail, and, unless it is a synopsis, so do bad values and stray
// arguments. Nothing runs.
func parseDocExample(ex docExample, synopsis bool) error {
	root := NewRootCmd(cmdutil.NewFactory(&cmdutil.IOStreams{Out: io.Discard, ErrOut: io.Discard}, func(string) string { return "" }))
	args := ex.args
	if synopsis {
		return checkSynopsis(root, strings.Fields(ex.text)[1:])
	}
	c, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if c.HasSubCommands() && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		return fmt.Errorf("unknown command %q for %q", rest[0], c.CommandPath())
	}
	if err := c.ParseFlags(rest); err != nil {
		return fmt.Errorf("%s: %v", c.CommandPath(), err)
	}
	if c.Args != nil {
		if err := c.Args(c, c.Flags().Args()); err != nil {
			return fmt.Errorf("%s: %v", c.CommandPath(), err)
		}
	}
	return nil
}

// checkSynopsis checks a usage line's command words and every --flag and
// -f it names ("[--sample D]", "-o table|wide"): placeholders and choices
// are not values to parse.
func checkSynopsis(root *cobra.Command, words []string) error {
	c := root
	i := 0
	for ; i < len(words); i++ {
		sub, _, err := c.Find([]string{words[i]})
		if err != nil || sub == c {
			break
		}
		c = sub
	}
	if c == root {
		return fmt.Errorf("synopsis names no kcltool command")
	}
	for _, w := range words[i:] {
		w = strings.Trim(w, "[](),")
		w, _, _ = strings.Cut(w, "|")
		w, _, _ = strings.Cut(w, "=")
		if w == "--" || w == "-" || w == "..." || !strings.HasPrefix(w, "-") {
			continue
		}
		var ok bool
		if name, long := strings.CutPrefix(w, "--"); long {
			ok = c.Flags().Lookup(name) != nil || c.InheritedFlags().Lookup(name) != nil
		} else {
			short := strings.TrimPrefix(w, "-")
			ok = len(short) == 1 && (c.Flags().ShorthandLookup(short) != nil || c.InheritedFlags().ShorthandLookup(short) != nil)
		}
		if !ok {
			return fmt.Errorf("%s has no flag %s", c.CommandPath(), w)
		}
	}
	return nil
}

// docStackEnv is what every example runs with.
type docStackEnv struct {
	dir  string   // the working directory: handler.sh, app.properties, orders.json
	home string   // HOME, for the ~ of a documented path
	env  []string // the local servers, HOME, short doctor windows and samples
}

// runDocExample runs one example with the built binary and wants exit 0 or
// 3 (3: problems found, which a documented check may well find). run
// examples get --print-config: it parses and resolves every setting and
// exits instead of consuming.
func runDocExample(t *testing.T, env docStackEnv, ex docExample) {
	args := slices.Clone(ex.args)
	for i, a := range args {
		if rest, ok := strings.CutPrefix(a, "~/"); ok { // as sh expands it
			args[i] = filepath.Join(env.home, rest)
		}
	}
	if len(args) > 0 && args[0] == "run" {
		at := slices.Index(args, "--")
		if at < 0 {
			at = len(args)
		}
		args = slices.Insert(args, at, "--print-config")
	}
	ctx, cancel := context.WithTimeout(context.Background(), docExampleTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcltoolBinary(t), args...)
	cmd.Dir = env.dir
	live := followsLive(args)
	base := env.env
	if live { // the stack's KCLTOOL_SAMPLE is for reset; a watch refuses it
		base = slices.DeleteFunc(slices.Clone(base), func(v string) bool { return strings.HasPrefix(v, "KCLTOOL_SAMPLE=") })
	}
	cmd.Env = append(append(os.Environ(), base...), ex.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	var err error
	if live {
		// --watch and top run until Ctrl-C: give them a few seconds, then
		// SIGINT, which must end them with 130 (interrupted).
		if err = cmd.Start(); err == nil {
			time.Sleep(docLiveFor)
			_ = cmd.Process.Signal(os.Interrupt)
			err = cmd.Wait()
		}
	} else {
		err = cmd.Run()
	}
	code := 0
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		code = -1
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	if live && (code != 130 || stdout.Len() == 0) {
		t.Errorf("%s\n\truns until Ctrl-C, yet after %s and a SIGINT: exit %d (want 130), %d bytes on stdout, stderr:\n%s\n\tfix the example, or mark it in cmd/%s:\n\t%s => REASON",
			ex, docLiveFor, code, stdout.Len(), indentLines(stderr.String()), docMarksFile, ex.markKey())
		return
	}
	if !live && code != 0 && code != 3 {
		t.Errorf("%s\n\texit %d (want 0, or 3 for problems found), stderr:\n%s\n\tfix the example, or mark it in cmd/%s:\n\t%s => REASON",
			ex, code, indentLines(stderr.String()), docMarksFile, ex.markKey())
		return
	}
	if ex.pipe == "jq" && !jsonStream(stdout.Bytes()) {
		t.Errorf("%s\n\tpipes to jq, but stdout is not JSON:\n%s", ex, indentLines(stdout.String()))
	}
}

// docLiveFor is how long a --watch or top example runs before its Ctrl-C.
const docLiveFor = 3 * time.Second

// followsLive: the example runs until Ctrl-C (--watch, or top without
// --once).
func followsLive(args []string) bool {
	if len(args) > 0 && args[0] == "top" {
		return !slices.Contains(args, "--once")
	}
	return slices.Contains(args, "-w") || slices.Contains(args, "--watch")
}

// jsonStream: b is one or more JSON documents (an array, or JSON Lines as
// --watch -o json prints), as jq reads them.
func jsonStream(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	n := 0
	for {
		var v any
		if err := dec.Decode(&v); err == io.EOF {
			return n > 0
		} else if err != nil {
			return false
		}
		n++
	}
}

func indentLines(s string) string {
	return "\t\t" + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n\t\t")
}
