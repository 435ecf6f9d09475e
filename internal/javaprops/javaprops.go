// Package javaprops reads files in the syntax of java.util.Properties.load:
// the format of the KCL MultiLangDaemon's properties file. It follows the
// JDK's javadoc of Properties.load(Reader) rule for rule, so that a file the
// MultiLangDaemon reads means the same thing here.
package javaprops

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"unicode/utf16"
)

// Entry is one key and value, with the line the key starts on.
type Entry struct {
	Key, Value string
	Line       int
}

// Properties are a file's entries in file order. A key given twice keeps
// its last value, at the place of its first, as a Java Hashtable does.
type Properties struct {
	Entries []Entry
}

// Get returns a key's value and whether the file has it.
func (p *Properties) Get(key string) (string, bool) {
	for _, e := range p.Entries {
		if e.Key == key {
			return e.Value, true
		}
	}
	return "", false
}

// Parse reads r (UTF-8, as Properties.load(Reader) reads a Reader's chars).
// The only error besides a read error is a malformed \uXXXX escape, which
// Java refuses too.
func Parse(r io.Reader) (*Properties, error) {
	raw, err := io.ReadAll(bufio.NewReader(r))
	if err != nil {
		return nil, err
	}
	lines := naturalLines(string(raw))
	p := &Properties{}
	index := map[string]int{}
	for i := 0; i < len(lines); i++ {
		start := i + 1
		line := strings.TrimLeft(lines[i], whitespace)
		// A blank line or a comment is skipped; only the first natural line
		// of a logical line can be one: a continued line beginning with #
		// is part of the value.
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		// A line terminator after an odd number of backslashes continues the
		// logical line on the next natural line, without its leading
		// whitespace. A continuation at the end of the file just ends.
		for continued(line) {
			line = line[:len(line)-1]
			if i+1 >= len(lines) {
				break
			}
			i++
			line += strings.TrimLeft(lines[i], whitespace)
		}
		key, value, err := splitLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		if at, ok := index[key]; ok {
			p.Entries[at].Value = value
			continue
		}
		index[key] = len(p.Entries)
		p.Entries = append(p.Entries, Entry{Key: key, Value: value, Line: start})
	}
	return p, nil
}

// whitespace is what Properties.load skips: space, tab and form feed.
const whitespace = " \t\f"

// naturalLines splits at \n, \r and \r\n, the three line terminators.
func naturalLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	lines := strings.Split(s, "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	return lines
}

// continued reports whether the line ends in an odd number of backslashes.
func continued(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitLine splits a logical line (leading whitespace gone) into its key
// and value. The key ends at the first unescaped '=', ':' or whitespace;
// whitespace after it, then one '=' or ':', then whitespace are skipped;
// the rest, trailing whitespace included, is the value.
func splitLine(line string) (string, string, error) {
	end := len(line)
	sep := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++ // the escaped char never ends the key
			continue
		}
		if c == '=' || c == ':' {
			end, sep = i, true
			break
		}
		if strings.IndexByte(whitespace, c) >= 0 {
			end = i
			break
		}
	}
	rest := line[end:]
	if sep {
		rest = rest[1:]
	}
	rest = strings.TrimLeft(rest, whitespace)
	if !sep && rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], whitespace)
	}
	key, err := unescape(line[:end])
	if err != nil {
		return "", "", err
	}
	value, err := unescape(rest)
	if err != nil {
		return "", "", err
	}
	return key, value, nil
}

// unescape turns \t, \n, \r, \f and \uXXXX into their chars and any other
// escaped char into itself (\: is ':', \\ is '\', \z is 'z'). A \u pair of
// UTF-16 surrogates is one char, as in a Java string.
func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	var pendingHigh rune = -1
	flushHigh := func() {
		if pendingHigh >= 0 {
			b.WriteRune(pendingHigh) // a lone surrogate: Go writes U+FFFD
			pendingHigh = -1
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			flushHigh()
			// A backslash as the last char can only be a dropped
			// continuation, which Parse has already removed; keep it.
			b.WriteByte(c)
			continue
		}
		i++
		switch c = s[i]; c {
		case 't':
			flushHigh()
			b.WriteByte('\t')
		case 'n':
			flushHigh()
			b.WriteByte('\n')
		case 'r':
			flushHigh()
			b.WriteByte('\r')
		case 'f':
			flushHigh()
			b.WriteByte('\f')
		case 'u':
			if len(s)-(i+1) < 4 {
				return "", fmt.Errorf(`malformed \uxxxx encoding in %q`, s)
			}
			var r rune
			for _, h := range s[i+1 : i+5] {
				d, ok := hexDigit(h)
				if !ok {
					return "", fmt.Errorf(`malformed \uxxxx encoding in %q`, s)
				}
				r = r<<4 | d
			}
			i += 4
			switch {
			case utf16.IsSurrogate(r) && r < 0xDC00:
				flushHigh()
				pendingHigh = r
			case utf16.IsSurrogate(r) && pendingHigh >= 0:
				b.WriteRune(utf16.DecodeRune(pendingHigh, r))
				pendingHigh = -1
			default:
				flushHigh()
				b.WriteRune(r)
			}
		default:
			flushHigh()
			b.WriteByte(c) // an unknown escape is the char itself
		}
	}
	flushHigh()
	return b.String(), nil
}

func hexDigit(h rune) (rune, bool) {
	switch {
	case h >= '0' && h <= '9':
		return h - '0', true
	case h >= 'a' && h <= 'f':
		return h - 'a' + 10, true
	case h >= 'A' && h <= 'F':
		return h - 'A' + 10, true
	}
	return 0, false
}
