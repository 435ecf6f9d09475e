package deploy

import (
	"fmt"
	"strconv"
	"strings"
)

// go.mod has no YAML library, and the manifests need none: they are
// written in a fixed, simple shape (block mappings and sequences, one
// scalar per line, no anchors, flow collections or multi-line strings), and
// parseYAML reads exactly that shape. Anything else is an error rather than
// a guess, so that a manifest the test cannot read fails the test instead
// of passing unread.
//
// A mapping is map[string]any, a sequence []any, a scalar a string (the
// checks convert numbers themselves), an empty value nil.

type yamlLine struct {
	no     int // 1-based, for messages
	indent int
	text   string // without the indentation and the comment
}

// parseYAML returns the documents of a multi-document YAML stream.
func parseYAML(src string) ([]any, error) {
	var docs []any
	var cur []yamlLine
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		p := &yamlParser{lines: cur}
		v, err := p.node(cur[0].indent)
		if err != nil {
			return err
		}
		if p.i < len(p.lines) {
			l := p.lines[p.i]
			return fmt.Errorf("line %d: unexpected indentation or content %q", l.no, l.text)
		}
		docs = append(docs, v)
		cur = nil
		return nil
	}
	for i, raw := range strings.Split(src, "\n") {
		no := i + 1
		if strings.Contains(raw, "\t") {
			return nil, fmt.Errorf("line %d: tab character", no)
		}
		if strings.TrimRight(raw, " ") == "---" {
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		}
		text, err := stripComment(raw)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", no, err)
		}
		trimmed := strings.TrimLeft(text, " ")
		if strings.TrimSpace(trimmed) == "" {
			continue
		}
		cur = append(cur, yamlLine{no: no, indent: len(text) - len(trimmed), text: strings.TrimRight(trimmed, " ")})
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return docs, nil
}

// stripComment drops a # comment: at the start of the line or after a
// space, outside quotes.
func stripComment(s string) (string, error) {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '"' && c == '\\':
			i++
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
		case c == '"' || c == '\'':
			quote = c
		case c == '#' && (i == 0 || s[i-1] == ' '):
			return s[:i], nil
		}
	}
	if quote != 0 {
		return "", fmt.Errorf("unterminated quote")
	}
	return s, nil
}

type yamlParser struct {
	lines []yamlLine
	i     int
}

func isSeqItem(text string) bool { return text == "-" || strings.HasPrefix(text, "- ") }

// node reads the block at indent: a sequence or a mapping.
func (p *yamlParser) node(indent int) (any, error) {
	l := p.lines[p.i]
	if l.indent != indent {
		return nil, fmt.Errorf("line %d: indentation %d where %d was expected", l.no, l.indent, indent)
	}
	if isSeqItem(l.text) {
		return p.seq(indent)
	}
	return p.mapping(indent)
}

func (p *yamlParser) seq(indent int) ([]any, error) {
	out := []any{}
	for p.i < len(p.lines) && p.lines[p.i].indent == indent && isSeqItem(p.lines[p.i].text) {
		l := p.lines[p.i]
		rest := strings.TrimPrefix(strings.TrimPrefix(l.text, "-"), " ")
		if rest == "" { // the item is the block below
			p.i++
			if p.i >= len(p.lines) || p.lines[p.i].indent <= indent {
				out = append(out, nil)
				continue
			}
			v, err := p.node(p.lines[p.i].indent)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			continue
		}
		if isSeqItem(rest) {
			return nil, fmt.Errorf("line %d: a sequence inside a sequence item on one line", l.no)
		}
		if _, _, ok := splitKey(rest); ok {
			// "- key: value": a mapping whose keys line up with key.
			col := indent + len(l.text) - len(rest)
			p.lines[p.i] = yamlLine{no: l.no, indent: col, text: rest}
			v, err := p.mapping(col)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			continue
		}
		v, err := scalar(rest)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", l.no, err)
		}
		out = append(out, v)
		p.i++
	}
	return out, nil
}

func (p *yamlParser) mapping(indent int) (map[string]any, error) {
	out := map[string]any{}
	for p.i < len(p.lines) && p.lines[p.i].indent == indent && !isSeqItem(p.lines[p.i].text) {
		l := p.lines[p.i]
		key, rest, ok := splitKey(l.text)
		if !ok {
			return nil, fmt.Errorf("line %d: expected key: value, got %q", l.no, l.text)
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("line %d: duplicate key %q", l.no, key)
		}
		p.i++
		if rest != "" {
			v, err := scalar(rest)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", l.no, err)
			}
			out[key] = v
			continue
		}
		switch {
		case p.i < len(p.lines) && p.lines[p.i].indent > indent:
			v, err := p.node(p.lines[p.i].indent)
			if err != nil {
				return nil, err
			}
			out[key] = v
		case p.i < len(p.lines) && p.lines[p.i].indent == indent && isSeqItem(p.lines[p.i].text):
			// The style kubectl prints: a sequence at its key's indentation.
			v, err := p.seq(indent)
			if err != nil {
				return nil, err
			}
			out[key] = v
		default:
			out[key] = nil
		}
	}
	return out, nil
}

// splitKey splits "key: value" or "key:"; the key is plain or quoted.
func splitKey(text string) (key, rest string, ok bool) {
	if text[0] == '"' || text[0] == '\'' {
		end := strings.IndexByte(text[1:], text[0])
		if end < 0 {
			return "", "", false
		}
		k, err := scalar(text[:end+2])
		if err != nil {
			return "", "", false
		}
		after := text[end+2:]
		if after == ":" || strings.HasPrefix(after, ": ") {
			return k.(string), strings.TrimSpace(strings.TrimPrefix(after, ":")), true
		}
		return "", "", false
	}
	if i := strings.Index(text, ": "); i > 0 {
		return text[:i], strings.TrimSpace(text[i+2:]), true
	}
	if strings.HasSuffix(text, ":") && len(text) > 1 {
		return text[:len(text)-1], "", true
	}
	return "", "", false
}

// scalar reads a one-line scalar: double-quoted (Go's escapes, a subset of
// YAML's), single-quoted (” for a quote), plain, or the empty [] and {}.
func scalar(s string) (any, error) {
	switch {
	case s == "[]":
		return []any{}, nil
	case s == "{}":
		return map[string]any{}, nil
	case s[0] == '"':
		v, err := strconv.Unquote(s)
		if err != nil {
			return nil, fmt.Errorf("bad double-quoted scalar %s", s)
		}
		return v, nil
	case s[0] == '\'':
		if len(s) < 2 || s[len(s)-1] != '\'' {
			return nil, fmt.Errorf("bad single-quoted scalar %s", s)
		}
		inner := s[1 : len(s)-1]
		if strings.Count(inner, "'")%2 != 0 {
			return nil, fmt.Errorf("bad single-quoted scalar %s", s)
		}
		return strings.ReplaceAll(inner, "''", "'"), nil
	case strings.ContainsAny(s[:1], "&*!|>{[%@`:,?"):
		return nil, fmt.Errorf("unsupported YAML (anchor, tag, block or flow scalar, or a plain scalar that needs quotes): %s", s)
	case strings.Contains(s, ": ") || strings.Contains(s, " #"):
		return nil, fmt.Errorf("plain scalar %q needs quotes", s)
	}
	return s, nil
}

// yamlPath follows keys (string) and indexes (int) from v.
func yamlPath(v any, path ...any) (any, error) {
	for i, step := range path {
		switch k := step.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%v: not a mapping", path[:i])
			}
			if v, ok = m[k]; !ok {
				return nil, fmt.Errorf("%v: no key %q", path[:i], k)
			}
		case int:
			s, ok := v.([]any)
			if !ok || k >= len(s) {
				return nil, fmt.Errorf("%v: no item %d", path[:i], k)
			}
			v = s[k]
		}
	}
	return v, nil
}
