package cmdutil

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/spf13/cobra"
)

// This file is kcltool's one output layer. A command builds an output (its
// rows as JSON documents, as CSV records and as a table) and hands it to a
// Printer, which picks the form -o asks for. The JSON key lists and CSV
// headers are in json_schema.go; lipgloss is configured here and the
// table engine is in table.go.

// Output formats every read command accepts with -o.
const (
	FormatTable = "table"
	FormatWide  = "wide"
	FormatJSON  = "json"
	FormatCSV   = "csv"
	// FormatDot is lineage's extra format: a Graphviz digraph.
	FormatDot = "dot"
)

// ReadFormats are the formats of a read command's -o.
var ReadFormats = []string{FormatTable, FormatWide, FormatJSON, FormatCSV}

// AddOutputFlag registers -o/--output on a read command.
func AddOutputFlag(cmd *cobra.Command, target *string) {
	AddOutputFlagOf(cmd, target, "output format: table, wide, json or csv", ReadFormats...)
}

// AddOutputFlagOf registers -o/--output with the formats a command has; the
// first is the default.
func AddOutputFlagOf(cmd *cobra.Command, target *string, usage string, formats ...string) {
	cmd.Flags().StringVarP(target, "output", "o", formats[0], usage)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
}

// CheckOutput validates a read command's -o.
func CheckOutput(format string) error { return CheckOutputOf(format, ReadFormats...) }

// CheckOutputOf validates -o against the formats a command has.
func CheckOutputOf(format string, formats ...string) error {
	for _, f := range formats {
		if f == format {
			return nil
		}
	}
	last := len(formats) - 1
	return UsageErrorf("invalid --output %q: use %s or %s", format, strings.Join(formats[:last], ", "), formats[last])
}

// Output is what a command hands the printer: the same data in each form
// it prints. The fields are functions so that only the chosen form is
// built; a form a command does not have is nil (its -o check refuses it).
type Output struct {
	// Items is a slice of JSON structs for -o json: an array with one
	// compact object per line.
	Items func() any
	// Doc is one JSON document for -o json: indented, or compact on one
	// line when the printer streams (doctor --watch).
	Doc func() any
	// CSV is the -o csv header Rows follow: the command's jsonSchemas
	// entry names the same list, which docs/json.md shows.
	CSV  []string
	Rows func() [][]string
	// Write holds the formats whose bytes a domain package or a renderer
	// writes itself: export's json and csv (the file format reset owns),
	// lineage's dot.
	Write map[string]func(w io.Writer) error
	// Text prints table and wide: tables plus the lines under them.
	Text func(p *Printer) error
}

// Printer writes one command's output in the -o format, to stdout (or to
// the writer PrintTo gives), knowing whether stdout is a terminal and
// whether to colour.
type Printer struct {
	io     *IOStreams
	out    io.Writer
	format string
	// stream prints Doc compact, one document per line, for a command that
	// prints one after another.
	stream bool
	styles *Styles
	// tables counts the tables printed: the table flags' --columns and
	// --sort-by shape only the first.
	tables int
	// spare: the columns the next table may hide to fit (table_hide.go).
	spare []string
}

func NewPrinter(streams *IOStreams, format string) *Printer {
	return &Printer{io: streams, out: streams.Out, format: format}
}

// PrintTo makes a printer that writes to w instead of stdout (export
// writes to --file through it).
func PrintTo(streams *IOStreams, w io.Writer, format string) *Printer {
	return &Printer{io: streams, out: w, format: format}
}

// Print writes o in the printer's format.
func (p *Printer) Print(o Output) error {
	if w, ok := o.Write[p.format]; ok {
		return w(p.out)
	}
	switch {
	case p.format == FormatJSON && o.Items != nil:
		return writeJSONLines(p.out, o.Items())
	case p.format == FormatJSON && o.Doc != nil:
		if p.stream {
			return json.NewEncoder(p.out).Encode(o.Doc())
		}
		return WriteJSON(p.out, o.Doc())
	case p.format == FormatCSV && o.Rows != nil:
		// csv honours the table flags, matched against its own header.
		header, rows, err := p.io.Table.applyTo(o.CSV, o.Rows())
		if err != nil {
			return err
		}
		if p.io.Table.NoHeaders {
			header = nil
		}
		return writeCSV(p.out, header, rows)
	case p.Text() && o.Text != nil:
		return o.Text(p)
	}
	// Each command checks -o against its formats first; this is a guard.
	return UsageErrorf("invalid --output %q for this command", p.format)
}

// Text reports whether the format is for people: table or wide.
func (p *Printer) Text() bool { return p.format == FormatTable || p.format == FormatWide }

// Wide reports -o wide.
func (p *Printer) Wide() bool { return p.format == FormatWide }

// Streaming makes Doc print compact, one document per line, for a command
// that prints one document after another (doctor --watch).
func (p *Printer) Streaming() *Printer {
	p.stream = true
	return p
}

// Next prepares stdout for the frame-th of repeated outputs: text on a
// terminal redraws the screen; elsewhere outputs follow one another, a blank
// line apart, except JSON documents, which are one a line.
func (p *Printer) Next(frame int) {
	switch {
	case p.io.OutTTY && p.Text():
		fmt.Fprint(p.out, "\x1b[H\x1b[2J") // home, clear screen
	case frame > 1 && p.format != FormatJSON:
		fmt.Fprintln(p.out)
	}
}

// TTY reports whether stdout is a terminal.
func (p *Printer) TTY() bool { return p.io.OutTTY }

// Fit reports a table fitted to a width: -o table on a terminal, or with
// COLUMNS set. -o wide, json and csv print every value whole.
func (p *Printer) Fit() bool { return p.format == FormatTable && p.io.Width > 0 }

// TextWidth is the width lines of prose wrap at in table and wide output
// (doctor's cause and fix); 0 when they are not wrapped.
func (p *Printer) TextWidth() int {
	if !p.Text() {
		return 0
	}
	return p.io.Width
}

// Short shortens a sequence number in a fitted table (see Shorten).
func (p *Printer) Short(seq string) string { return Shorten(seq, p.Fit()) }

// Styles are the lipgloss styles, made once per printer.
func (p *Printer) Styles() Styles {
	if p.styles == nil {
		st := p.io.Styles()
		p.styles = &st
	}
	return *p.styles
}

// Println writes one line under a table.
func (p *Printer) Println(s string) { fmt.Fprintln(p.out, s) }

// Blank writes an empty line between the parts of a text output.
func (p *Printer) Blank() { fmt.Fprintln(p.out) }

// Empty says on stderr that there is nothing to show, where a table would
// otherwise be only its header.
func (p *Printer) Empty(format string, args ...any) {
	fmt.Fprintf(p.io.ErrOut, "kcltool: "+format+"\n", args...)
}

// WriteJSON writes v as indented JSON with a trailing newline.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeJSONLines writes a slice as a JSON array with one compact object per
// line. It is valid JSON for jq, greps line by line, and costs a fraction
// of indenting a 10,000-lease document.
func writeJSONLines(w io.Writer, items any) error {
	v := reflect.ValueOf(items)
	if v.Kind() != reflect.Slice {
		return fmt.Errorf("JSON lines of a %T, not a slice", items)
	}
	// Each item as a value, as json.Marshal(items) would see it.
	return WriteJSONLinesOf(w, v.Len(), func(i int) any { return v.Index(i).Interface() })
}

// WriteJSONLinesOf writes what writeJSONLines writes for n items, asking
// item(i) for each in turn, so a long listing is encoded as it is built and
// never held whole a second time. One encoder and one buffer serve every
// item. A value encoding/json refuses (a NaN float) fails the write instead
// of printing bad JSON.
func WriteJSONLinesOf(w io.Writer, n int, item func(i int) any) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	if n == 0 {
		bw.WriteString("[]\n")
		return bw.Flush()
	}
	bw.WriteString("[\n")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i := range n {
		buf.Reset()
		if err := enc.Encode(item(i)); err != nil {
			return err
		}
		b := buf.Bytes()
		bw.WriteString("  ")
		bw.Write(b[:len(b)-1]) // Encode ends the object with a newline
		if i < n-1 {
			bw.WriteByte(',')
		}
		bw.WriteByte('\n')
	}
	bw.WriteString("]\n")
	return bw.Flush()
}

// writeCSV writes a header and rows, RFC 4180.
func writeCSV(w io.Writer, header []string, rows [][]string) error {
	cw := csv.NewWriter(w)
	if header != nil {
		if err := cw.Write(header); err != nil {
			return err
		}
	}
	if err := cw.WriteAll(rows); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// Shorten keeps the head and tail of a long sequence number ("4968…1234")
// when short is set (a fitted table), where the full 56 digits would push
// every other column off screen. The head tells numbers of different
// shards and eras apart, the tail the records of one shard.
func Shorten(s string, short bool) string {
	if !short || len(s) <= 20 {
		return s
	}
	return s[:4] + "…" + s[len(s)-4:]
}
