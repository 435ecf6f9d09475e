package cmdutil

import (
	"bytes"
	"fmt"
	"os"
	"testing"
)

// tableGoldenCases are tables with cells of every kind the commands print:
// empty ones, multi-byte runes (the shortened sequence number's "…", a
// handoff's "→"), wide ones, columns narrower than their header, rows
// shorter or longer than the header, an empty header cell, and the text
// only odd data holds (a line break or a tab in a cell, blanks at the ends).
var tableGoldenCases = []struct {
	name   string
	header []string
	rows   [][]string
}{
	{"leases", []string{"SHARD", "OWNER", "COUNTER", "CHECKPOINT", "X"}, [][]string{
		{"shardId-000000000000", "worker-a", "12", "49590338…21575989", ""},
		{"shardId-1", "b→worker-c", "", "TRIM_HORIZON", "日本語"},
		{"s", "", "1234567890123", "SHARD_END", "x"},
		{"", "w", "0", "", ""},
	}},
	{"no rows", []string{"A", "B"}, nil},
	{"wide runes", []string{"A", "B"}, [][]string{{"日本語", "é"}, {"🚀", "x"}}},
	{"short and long rows", []string{"A", "B", "C"}, [][]string{{"x", "y"}, {"a", "b", "c", "d"}, {"1", "2", "3"}}},
	{"empty header cells", []string{"A", "", "C", ""}, [][]string{{"x", "y", "z", "w"}}},
	{"blanks at the ends", []string{" A", "B "}, [][]string{{" x ", "y "}, {"a", "  "}}},
	{"lower-case header", []string{"shard id", "b_c"}, [][]string{{"x", "y"}}},
	{"line breaks", []string{"A", "B", "C"}, [][]string{{"x\ny", "z", "q"}, {"x\n", "y", "q"}, {"a", "b\n\nc", "d"}, {"x", "1\n22\n333", "q"}}},
	{"line break in the header", []string{"A\nA2", "B"}, [][]string{{"x", "y"}}},
	{"tabs", []string{"A", "B"}, [][]string{{"x\ty", "z"}, {"xy\tz\t", "z"}, {"\t", "a"}, {"\tx", "z"}, {"\t\ty\t\tw", "a"}}},
	{"carriage return", []string{"A", "B"}, [][]string{{"x\ry", "z"}}},
}

// TestTablePrintsTheGoldenBytes: Table and TableOf, the one engine both go
// through, print what tablewriter printed with kcltool's configuration
// (testdata/table.golden was written by it, before the engine replaced it).
func TestTablePrintsTheGoldenBytes(t *testing.T) {
	want, err := os.ReadFile("testdata/table.golden")
	if err != nil {
		t.Fatal(err)
	}
	for _, streamed := range []bool{false, true} {
		var out bytes.Buffer
		for _, c := range tableGoldenCases {
			for _, tty := range []bool{false, true} {
				var b bytes.Buffer
				p := NewPrinter(&IOStreams{Out: &b, ErrOut: &bytes.Buffer{}, OutTTY: tty}, FormatTable)
				if streamed {
					err = p.TableOf(c.header, len(c.rows), func(i int, buf []string) []string { return append(buf, c.rows[i]...) })
				} else {
					err = p.Table(c.header, c.rows)
				}
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&out, "== %s, tty %v\n%s", c.name, tty, b.String())
			}
		}
		if out.String() != string(want) {
			t.Errorf("streamed %v: printed\n%s\nwant (testdata/table.golden)\n%s", streamed, out.String(), want)
		}
	}
}
