package cmdutil

import (
	"bufio"
	"fmt"
	"slices"
	"strings"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
)

// This file is kcltool's one table engine: aligned, borderless tables in the
// kubectl style, upper-case headers, three spaces between columns, no
// trailing blanks, "-" for an empty cell so columns stay countable for awk.
// The bytes are those tablewriter printed with the configuration kcltool
// had (testdata/table.golden, written by it, holds the engine to them).

// Table prints a table whose rows are all built already.
func (p *Printer) Table(header []string, rows [][]string) error {
	return p.TableOf(header, len(rows), func(i int, buf []string) []string { return append(buf, rows[i]...) })
}

// TableOf prints a table of n rows, building each row when it is needed
// (row(i, buf) may fill and return buf) instead of holding them all: one
// pass for the column widths, one to write. A 100,000-lease listing is
// never held as cells (docs/benchmarks.md, leases ls at scale).
func (p *Printer) TableOf(header []string, n int, row func(i int, buf []string) []string) error {
	opts := p.io.Table
	p.tables++
	if p.tables > 1 { // --columns and --sort-by are about a command's first table
		opts.Columns, opts.SortBy = nil, ""
	}
	pl, err := opts.plan(header)
	if err != nil {
		return err
	}
	if pl.sortBy >= 0 {
		// Sorting needs every row at once.
		rows := make([][]string, n)
		var buf []string
		for i := range n {
			buf = row(i, buf[:0])
			rows[i] = slices.Clone(buf)
		}
		pl.sortRows(rows)
		row = func(i int, buf []string) []string { return append(buf, rows[i]...) }
	}
	if pl.cols != nil {
		full, inner := []string(nil), row
		row = func(i int, buf []string) []string {
			full = inner(i, full[:0])
			return pl.project(full, buf)
		}
		header = pl.project(header, nil)
	}
	names := header
	if opts.NoHeaders {
		header = nil
	}
	spare := p.spare
	p.spare = nil
	if pl.cols != nil { // --columns chose them: none is spared
		spare = nil
	}
	wrap := p.Fit()
	widths := make([]int, len(header))
	var cols []colFit // what fitting needs, measured only when it fits
	measure := func(cells []string, dash bool) {
		for j, c := range cells {
			if j == len(widths) {
				widths = append(widths, 0)
			}
			ls := cellLines(c, dash)
			for _, l := range ls {
				widths[j] = max(widths[j], twwidth.Width(l))
			}
			if wrap {
				if j == len(cols) {
					cols = append(cols, colFit{})
				}
				cols[j].measure(ls, !dash)
			}
		}
	}
	measure(header, false)
	var buf []string
	for i := range n {
		buf = row(i, buf[:0])
		measure(buf, true)
	}
	if wrap {
		cols = append(cols, make([]colFit, len(widths)-len(cols))...)
		keep, hidden := hideToFit(names, spare, &widths, &cols, p.io.Width)
		if keep != nil {
			fmt.Fprintln(p.io.ErrOut, hiddenNote(hidden, p.io.Width))
			if header != nil {
				header = projectCells(header, keep, nil)
			}
			all, inner := []string(nil), row
			row = func(i int, buf []string) []string {
				all = inner(i, all[:0])
				return projectCells(all, keep, buf)
			}
		}
		fitWidths(widths, cols, p.io.Width)
	}
	bw := bufio.NewWriterSize(p.out, 64<<10)
	var b strings.Builder
	var lines [][]string
	// write prints one row, on as many lines as its tallest cell has.
	write := func(cells []string, dash bool, style func(string) string) {
		lines = lines[:0]
		height := 1
		for j, c := range cells {
			ls := cellLines(c, dash)
			if wrap {
				ls = wrapCell(ls, widths[j])
			}
			lines = append(lines, ls)
			height = max(height, len(ls))
		}
		for k := range height {
			b.Reset()
			for j, ls := range lines {
				l := ""
				if k < len(ls) {
					l = ls[k]
				}
				b.WriteString(l)
				if j < len(lines)-1 {
					b.WriteString(strings.Repeat(" ", max(widths[j]-twwidth.Width(l), 0)+columnGap))
				}
			}
			line := strings.TrimRight(b.String(), " ")
			if line == "" && height > 1 {
				continue // tablewriter dropped the blank lines of a multi-line row
			}
			bw.WriteString(style(line))
			bw.WriteByte('\n')
		}
	}
	st := p.Styles()
	if !opts.NoHeaders {
		write(header, false, func(s string) string { return st.Header.Render(s) })
	}
	plain := func(s string) string { return s }
	for i := range n {
		buf = row(i, buf[:0])
		write(buf, true, plain)
	}
	return bw.Flush()
}

// wrapCell wraps each line of a cell that is wider than its column.
func wrapCell(ls []string, width int) []string {
	for _, l := range ls {
		if twwidth.Width(l) > width {
			var out []string
			for _, l := range ls {
				out = append(out, wrapText(l, width)...)
			}
			return out
		}
	}
	return ls
}

// cellLines is a cell as the table shows it: "-" when empty (header cells
// stay empty), a tab as four spaces, and one line per line of text.
func cellLines(c string, dash bool) []string {
	if c == "" && dash {
		return []string{"-"}
	}
	if strings.Contains(c, "\t") { // as tablewriter: tabs at the ends go, inner ones are four spaces
		c = strings.ReplaceAll(strings.Trim(c, "\t"), "\t", "    ")
	}
	if !strings.Contains(c, "\n") {
		return []string{c}
	}
	return strings.Split(c, "\n")
}
