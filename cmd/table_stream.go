package cmd

import (
	"bufio"
	"strings"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
)

// TableOf prints what Table prints for n rows, building each row when it
// is needed (row(i, buf) may fill and return buf) instead of holding them
// all: one pass for the column widths, one to write. tablewriter keeps every
// row and renders the whole table into one buffer, several copies of a
// 100,000-lease listing at once (docs/benchmarks.md, leases ls at scale).
// The bytes are Table's, which a test checks.
func (p *Printer) TableOf(header []string, n int, row func(i int, buf []string) []string) error {
	widths := make([]int, len(header))
	for i, h := range header {
		widths[i] = twwidth.Width(h)
	}
	var buf []string
	for i := range n {
		buf = row(i, buf[:0])
		for j, c := range buf {
			if j < len(widths) {
				widths[j] = max(widths[j], twwidth.Width(cellText(c)))
			}
		}
	}
	var b strings.Builder
	line := func(cells []string) string {
		b.Reset()
		for j, c := range cells {
			c = cellText(c)
			b.WriteString(c)
			if j < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", widths[j]-twwidth.Width(c)+3))
			}
		}
		return strings.TrimRight(b.String(), " ")
	}
	bw := bufio.NewWriterSize(p.out, 64<<10)
	bw.WriteString(p.Styles().Header.Render(line(header)))
	bw.WriteByte('\n')
	for i := range n {
		buf = row(i, buf[:0])
		bw.WriteString(line(buf))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// cellText is a cell as Table shows it: "-" for an empty one.
func cellText(c string) string {
	if c == "" {
		return "-"
	}
	return c
}
