package cmdutil

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestCheckOutputNamesTheFormats: each command's -o error lists exactly the
// formats it has, in the words the commands printed before the printer.
func TestCheckOutputNamesTheFormats(t *testing.T) {
	cases := []struct {
		formats []string
		want    string
	}{
		{ReadFormats, `invalid --output "yaml": use table, wide, json or csv`},
		{append(append([]string{}, ReadFormats...), FormatDot), `invalid --output "yaml": use table, wide, json, csv or dot`},
		{[]string{FormatJSON, FormatCSV}, `invalid --output "yaml": use json or csv`},
	}
	for _, c := range cases {
		if err := CheckOutputOf("yaml", c.formats...); err == nil || err.Error() != c.want {
			t.Errorf("%v: %v, want %q", c.formats, err, c.want)
		}
		for _, f := range c.formats {
			if err := CheckOutputOf(f, c.formats...); err != nil {
				t.Errorf("%v refuses %q: %v", c.formats, f, err)
			}
		}
	}
}

type printerRow struct {
	Worker string    `json:"worker"`
	Note   OptString `json:"note"`
}

// TestPrinterPicksTheForm: one output, each -o; the CSV header is the
// schema's, a format the output does not have is refused, and only the
// chosen form is built.
func TestPrinterPicksTheForm(t *testing.T) {
	built := map[string]int{}
	o := Output{
		Items: func() any { built["items"]++; return []printerRow{{"w-1", ""}, {"w-2", "x<y"}} },
		CSV:   []string{"worker", "leases", "fairShare", "shards"},
		Rows:  func() [][]string { built["rows"]++; return [][]string{{"w-1", "1", "1", "a;b"}} },
		Text: func(p *Printer) error {
			built["text"]++
			header := []string{"WORKER"}
			if p.Wide() {
				header = append(header, "NOTE")
			}
			return p.Table(header, [][]string{make([]string, len(header))})
		},
	}
	cases := []struct {
		format, want string
	}{
		{FormatJSON, "[\n  {\"worker\":\"w-1\",\"note\":null},\n  {\"worker\":\"w-2\",\"note\":\"x\\u003cy\"}\n]\n"},
		{FormatCSV, "worker,leases,fairShare,shards\nw-1,1,1,a;b\n"},
		{FormatTable, "WORKER\n-\n"},
		{FormatWide, "WORKER   NOTE\n-        -\n"},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		p := NewPrinter(&IOStreams{Out: &out, ErrOut: &errOut}, c.format)
		if err := p.Print(o); err != nil {
			t.Fatalf("%s: %v", c.format, err)
		}
		if out.String() != c.want {
			t.Errorf("-o %s:\n%q\nwant\n%q", c.format, out.String(), c.want)
		}
	}
	if built["items"] != 1 || built["rows"] != 1 || built["text"] != 2 {
		t.Errorf("forms built %v, want each only when chosen", built)
	}
	var out bytes.Buffer
	if err := NewPrinter(&IOStreams{Out: &out}, FormatDot).Print(o); err == nil || !strings.Contains(err.Error(), `"dot"`) {
		t.Errorf("-o dot on an output without it: %v, %q", err, out.String())
	}
}

// TestPrinterDocumentsAndWriters: one document is indented, or one line
// when streamed; a form in Write is written as it is, before the others.
func TestPrinterDocumentsAndWriters(t *testing.T) {
	doc := Output{Doc: func() any { return map[string]int{"a": 1} }}
	var out bytes.Buffer
	if err := NewPrinter(&IOStreams{Out: &out}, FormatJSON).Print(doc); err != nil || out.String() != "{\n  \"a\": 1\n}\n" {
		t.Errorf("document: %q, %v", out.String(), err)
	}
	out.Reset()
	if err := NewPrinter(&IOStreams{Out: &out}, FormatJSON).Streaming().Print(doc); err != nil || out.String() != "{\"a\":1}\n" {
		t.Errorf("streamed document: %q, %v", out.String(), err)
	}
	out.Reset()
	var file bytes.Buffer
	w := Output{Items: func() any { return []int{1} }, Write: map[string]func(io.Writer) error{
		FormatJSON: func(w io.Writer) error { _, err := io.WriteString(w, "own\n"); return err }}}
	if err := PrintTo(&IOStreams{Out: &out}, &file, FormatJSON).Print(w); err != nil || file.String() != "own\n" || out.Len() != 0 {
		t.Errorf("Write to a file: file %q, stdout %q, %v", file.String(), out.String(), err)
	}
}
