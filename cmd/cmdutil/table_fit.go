package cmdutil

import (
	"strings"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
)

// This file fits a table to the width of the terminal. No cell is cut
// (whole columns a command spares may be left out first: table_hide.go):
// cells too wide for their column are wrapped onto more lines, at blanks
// first, then after a comma, dash or parenthesis (a list of shards,
// "closed-undrained"; not a dash a digit follows, as in a shard id), and
// inside a word only when nothing else fits. Columns are narrowed in rounds, each only if the one before was not
// enough: headers wider than their cells break after a dash ("SHARD-" over
// "STATUS"); columns of text (a blank or comma in some cell: notes, states,
// lists) wrap between words; text wraps after dashes; any column wraps
// after dashes; headers break anywhere (data is what is read and copied,
// so it breaks last); last, any column down to 4.

const columnGap = 3

// colFit is what fitting knows of a column: its widest line, its widest
// word (blanks and commas break), its widest piece (dashes and
// parentheses break too), its header's widest piece, and whether it holds
// text.
type colFit struct {
	width, word, piece, header int
	text                       bool
}

// measure adds a cell (or, with header set, a header cell) to c.
func (c *colFit) measure(lines []string, header bool) {
	for _, l := range lines {
		if header {
			c.header = max(c.header, widestPiece(l, true))
			continue
		}
		c.width = max(c.width, twwidth.Width(l))
		if treeLine(l) { // lineage's tree: its depth is its meaning
			c.word = max(c.word, twwidth.Width(l))
			c.piece = max(c.piece, twwidth.Width(l))
			continue
		}
		if strings.ContainsAny(strings.TrimSpace(l), " ,") {
			c.text = true
		}
		c.word = max(c.word, widestPiece(l, false))
		c.piece = max(c.piece, widestPiece(l, true))
	}
}

// treeLine: a line drawn as a tree (lineage's SHARD column), indented and
// led by box-drawing characters, whose blanks are not places to break.
func treeLine(l string) bool {
	t := strings.TrimLeft(l, " \u00a0") // lineage indents with no-break spaces
	r, _ := utf8.DecodeRuneInString(t)
	return r >= 0x2500 && r <= 0x257f
}

// widestPiece is the width of the widest run of s between break points:
// blanks and commas, and with pieces dashes and opening parentheses.
func widestPiece(s string, pieces bool) int {
	w := 0
	for _, word := range strings.Fields(s) {
		for _, p := range breakPieces(word, pieces) {
			w = max(w, twwidth.Width(p)) // a list's comma stays on its line
		}
	}
	return w
}

// breakPieces splits a word after each comma (and, with dashes, after each
// dash and opening parenthesis), keeping the separators.
func breakPieces(word string, dashes bool) []string {
	var out []string
	start := 0
	for i, r := range word {
		// Not after a dash a digit follows: shardId-000000000001 (and
		// ip-10-0-1-23) is one piece, read and copied whole.
		if r == '-' && i+1 < len(word) && word[i+1] >= '0' && word[i+1] <= '9' {
			continue
		}
		if r == ',' || (dashes && (r == '-' || r == '(')) {
			out = append(out, word[start:i+1])
			start = i + 1
		}
	}
	if start < len(word) {
		out = append(out, word[start:])
	}
	return out
}

// fitWidths narrows widths so the table, columnGap apart, is at most
// width wide, in the rounds the file's comment gives.
func fitWidths(widths []int, cols []colFit, width int) {
	fitWidthsRounds(widths, cols, width, -1)
}

// fitWidthsRounds is fitWidths with only its first rounds (all when
// rounds < 0); it returns how many columns the table is still too wide.
func fitWidthsRounds(widths []int, cols []colFit, width, n int) int {
	total := columnGap * (len(widths) - 1)
	for _, w := range widths {
		total += w
	}
	need := total - width
	steps := []func(j int) int{
		func(j int) int { // headers break after a dash; text between words
			if cols[j].text {
				return max(cols[j].word, cols[j].header)
			}
			return max(cols[j].width, cols[j].header)
		},
		func(j int) int { // text breaks after dashes and parentheses
			if cols[j].text {
				return max(cols[j].piece, cols[j].header, 8)
			}
			return widths[j]
		},
		func(j int) int { return max(cols[j].piece, cols[j].header) },
		func(j int) int { return max(cols[j].piece, 4) }, // headers break anywhere
		func(j int) int { return 4 },
	}
	if n >= 0 && n < len(steps) {
		steps = steps[:n]
	}
	for _, floor := range steps {
		if need <= 0 {
			return need
		}
		need = shrink(widths, need, floor)
	}
	return need
}

// shrink lowers the widest columns to one cap, as high as still frees
// need, never below floor(j) (nor raises one); it returns what it could
// not free.
func shrink(widths []int, need int, floor func(int) int) int {
	floors := make([]int, len(widths))
	top := 0
	for j, w := range widths {
		floors[j] = min(floor(j), w)
		top = max(top, w)
	}
	for c := top; c >= 0; c-- {
		freed := 0
		for j, w := range widths {
			freed += w - max(min(w, c), floors[j])
		}
		if freed >= need || c == 0 {
			for j, w := range widths {
				widths[j] = max(min(w, c), floors[j])
			}
			return max(need-freed, 0)
		}
	}
	return need
}

// wrapText breaks a line of text into lines at most width wide: at blanks
// where it can; a word wider than a line after its commas, dashes or
// parentheses, and inside a piece only when the piece alone is wider.
func wrapText(s string, width int) []string {
	if width <= 0 || twwidth.Width(s) <= width {
		return []string{s}
	}
	// Leading blanks are kept (a tree's depth); Fields would drop them.
	indent := s[:len(s)-len(strings.TrimLeft(s, " \u00a0"))]
	var lines []string
	var cur strings.Builder
	curW := 0
	flush := func() {
		lines = append(lines, strings.TrimRight(cur.String(), " "))
		cur.Reset()
		curW = 0
	}
	add := func(piece string, w int) {
		cur.WriteString(piece)
		curW += w
	}
	for i, word := range strings.Fields(s) {
		if i == 0 {
			word = indent + word
		}
		ww := twwidth.Width(word)
		sep := 0
		if curW > 0 {
			sep = 1
		}
		if curW+sep+ww <= width {
			if sep == 1 {
				add(" ", 1)
			}
			add(word, ww)
			continue
		}
		if curW > 0 {
			flush()
		}
		if ww <= width {
			add(word, ww)
			continue
		}
		// Wider than a line: after its commas first, then inside a piece
		// after its dashes and parentheses, then anywhere.
		for _, p := range breakPieces(word, false) {
			pw := twwidth.Width(p)
			if curW > 0 && curW+pw > width {
				flush()
			}
			if pw <= width {
				add(p, pw)
				continue
			}
			for _, q := range breakPieces(p, true) {
				qw := twwidth.Width(q)
				if curW > 0 && curW+qw > width {
					flush()
				}
				for qw > width {
					head, rest := splitAtWidth(q, width)
					lines = append(lines, head)
					q, qw = rest, twwidth.Width(rest)
				}
				add(q, qw)
			}
		}
	}
	if curW > 0 || len(lines) == 0 {
		flush()
	}
	return lines
}

// splitAtWidth splits s after the most runes that fit width (at least one).
func splitAtWidth(s string, width int) (string, string) {
	w := 0
	for i, r := range s {
		rw := twwidth.Width(string(r))
		if w+rw > width && i > 0 {
			return s[:i], s[i:]
		}
		w += rw
	}
	return s, ""
}

// WrapLine prints one line of prose wrapped to the printer's width
// (doctor's cause and fix, say), its continuation lines indented under the
// text after prefix. Without a width, or in json or csv, the line is
// whole. Never give it a command to copy: a wrapped one no longer pastes.
func (p *Printer) WrapLine(prefix, text string) {
	for _, l := range p.Wrap(prefix, text) {
		p.Println(l)
	}
}

// Wrap is WrapLine's lines, for a caller that styles each one.
func (p *Printer) Wrap(prefix, text string) []string {
	w := p.TextWidth()
	if w == 0 {
		return []string{prefix + text}
	}
	indent := twwidth.Width(prefix)
	lines := wrapText(text, max(w-indent, 20))
	for i := range lines {
		if i == 0 {
			lines[i] = prefix + lines[i]
		} else {
			lines[i] = strings.Repeat(" ", indent) + lines[i]
		}
	}
	return lines
}
