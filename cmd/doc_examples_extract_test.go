package cmd

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// The extraction half of TestDocExamples: every `kcltool …` line of a
// fenced block in README.md and docs/*.md, and the marks file that says why
// an example is not run. docs/development.md explains both to a writer.

// docExample is one documented command line.
type docExample struct {
	file string // relative to the repository: "README.md", "docs/run.md"
	line int    // 1-based, the line the command starts on
	// text is the command as the marks file names it: continuations
	// joined, a leading "$ " and a trailing "# comment" dropped, blanks
	// squeezed.
	text string
	env  []string // VAR=value words before kcltool
	args []string // the words after kcltool, up to a pipe, redirect or ;
	pipe string   // the first word of the command it is piped to ("jq"), "" when none
}

func (e docExample) String() string { return fmt.Sprintf("%s:%d: %s", e.file, e.line, e.text) }

// markKey is how the marks file names an example.
func (e docExample) markKey() string { return e.file + ": " + e.text }

// docExampleFiles are the pages whose examples are checked: the README and
// the manual (docs/cli and docs/man are generated from the commands
// themselves).
func docExampleFiles(root string) ([]string, error) {
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	sort.Strings(pages)
	files := []string{"README.md"}
	for _, p := range pages {
		files = append(files, filepath.ToSlash(strings.TrimPrefix(p, root+string(filepath.Separator))))
	}
	return files, nil
}

// exampleStart matches a line that is a kcltool command: optional "$ ",
// optional VAR=value words, then kcltool or bin/kcltool.
var exampleStart = regexp.MustCompile(`^(?:\$ )?(?:[A-Z_][A-Z0-9_]*=\S* )*(?:bin/)?kcltool(?: |$)`)

// extractDocExamples reads the fenced blocks of one page. A line counts
// when it starts at the fence's own indentation (a block inside a list item
// is indented with its fence; deeper lines are a diagram's or an output's).
func extractDocExamples(root, file string) ([]docExample, error) {
	f, err := os.Open(filepath.Join(root, file))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []docExample
	inBlock, indent := false, ""
	var pending *docExample // a command continued with a trailing backslash
	var raw strings.Builder
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeftFunc(line, unicode.IsSpace)
		if strings.HasPrefix(trimmed, "```") {
			inBlock, indent = !inBlock, line[:len(line)-len(trimmed)]
			pending = nil
			continue
		}
		if !inBlock {
			continue
		}
		if pending != nil {
			raw.WriteString(" " + strings.TrimSpace(line))
		} else {
			if !strings.HasPrefix(line, indent) || !exampleStart.MatchString(line[len(indent):]) {
				continue
			}
			pending = &docExample{file: file, line: n}
			raw.Reset()
			raw.WriteString(strings.TrimPrefix(line[len(indent):], "$ "))
		}
		if s := raw.String(); strings.HasSuffix(s, `\`) {
			raw.Reset()
			raw.WriteString(strings.TrimSpace(strings.TrimSuffix(s, `\`)))
			continue
		}
		ex := *pending
		pending = nil
		ex.text, ex.env, ex.args, ex.pipe = splitCommandLine(raw.String())
		out = append(out, ex)
	}
	return out, sc.Err()
}

// splitCommandLine splits a shell command line as sh would for the cases
// the docs use: words, '…' and "…" quoting, a # comment, and the end of the
// kcltool command at |, >, <, ; or &. text is the line without its comment,
// blanks squeezed.
func splitCommandLine(line string) (text string, env, args []string, pipe string) {
	var words []string
	var cur strings.Builder
	inWord, quote := false, rune(0)
	end := len(line) // where the comment starts
	stop := -1       // where the kcltool command ends
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case unicode.IsSpace(r):
			flush()
		case r == '#' && !inWord:
			end = i
		case strings.ContainsRune("|><;&", r):
			flush()
			if stop < 0 {
				stop = len(words)
				if r == '|' {
					if rest := strings.Fields(line[i+1:]); len(rest) > 0 {
						pipe = rest[0]
					}
				}
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
		if end != len(line) {
			break
		}
	}
	flush()
	text = strings.Join(strings.Fields(line[:end]), " ")
	if stop >= 0 {
		words = words[:stop]
	}
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasSuffix(words[0], "kcltool") {
		env = append(env, words[0])
		words = words[1:]
	}
	if len(words) > 0 {
		words = words[1:] // kcltool or bin/kcltool
	}
	return text, env, words, pipe
}

// docMark is one line of the marks file: an example that is not run, and why.
type docMark struct {
	line   int
	file   string
	text   string
	reason string
}

// synopsis reports whether the mark says the example is a usage synopsis
// (placeholders, [optional] parts, a|b choices): only its command and flag
// names are checked, not its values.
func (m docMark) synopsis() bool { return strings.HasPrefix(m.reason, "synopsis") }

// readDocMarks reads the marks file: "FILE: EXAMPLE => REASON" a line,
// blank lines and # comments ignored.
func readDocMarks(path string) (map[string]docMark, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	marks := map[string]docMark{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		file, rest, ok1 := strings.Cut(line, ": ")
		k := strings.LastIndex(rest, " => ")
		if !ok1 || k < 0 || strings.TrimSpace(rest[k+4:]) == "" {
			return nil, fmt.Errorf("%s:%d: want FILE: EXAMPLE => REASON, got %q", path, i+1, line)
		}
		m := docMark{line: i + 1, file: file, text: strings.Join(strings.Fields(rest[:k]), " "), reason: strings.TrimSpace(rest[k+4:])}
		key := m.file + ": " + m.text
		if prev, dup := marks[key]; dup {
			return nil, fmt.Errorf("%s:%d: %q is marked already on line %d", path, i+1, key, prev.line)
		}
		marks[key] = m
	}
	return marks, nil
}
