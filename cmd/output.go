package cmd

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/spf13/cobra"
)

// Output formats every read command accepts with -o.
const (
	FormatTable = "table"
	FormatWide  = "wide"
	FormatJSON  = "json"
	FormatCSV   = "csv"
)

// addOutputFlag registers -o/--output on a read command.
func addOutputFlag(cmd *cobra.Command, target *string) {
	cmd.Flags().StringVarP(target, "output", "o", FormatTable, "output format: table, wide, json or csv")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(
		[]string{FormatTable, FormatWide, FormatJSON, FormatCSV}, cobra.ShellCompDirectiveNoFileComp))
}

func checkOutput(format string) error {
	switch format {
	case FormatTable, FormatWide, FormatJSON, FormatCSV:
		return nil
	}
	return usageErrorf("invalid --output %q: use table, wide, json or csv", format)
}

// writeJSON writes v as indented JSON with a trailing newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeJSONLines writes a JSON array with one compact object per line. It
// is valid JSON for jq, greps line by line, and costs a fraction of
// indenting a 10,000-lease document.
func writeJSONLines[T any](w io.Writer, items []T) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	if len(items) == 0 {
		bw.WriteString("[]\n")
		return bw.Flush()
	}
	bw.WriteString("[\n")
	// Items that append themselves share one buffer; the rest go through
	// reflection, so any type can still be listed.
	var buf []byte
	for i := range items {
		var b []byte
		var err error
		if a, ok := any(&items[i]).(jsonAppender); ok {
			buf, err = a.appendJSON(buf[:0])
			b = buf
		} else {
			b, err = json.Marshal(items[i])
		}
		if err != nil {
			return err
		}
		bw.WriteString("  ")
		bw.Write(b)
		if i < len(items)-1 {
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
	if err := cw.Write(header); err != nil {
		return err
	}
	if err := cw.WriteAll(rows); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// writeTable renders an aligned, borderless table in the kubectl style:
// upper-case headers, three spaces between columns, no trailing blanks.
// Empty cells show as "-" so columns stay countable for awk.
func writeTable(io *IOStreams, header []string, rows [][]string) error {
	var buf bytes.Buffer
	t := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenColumns: tw.Off, BetweenRows: tw.Off},
				Lines:      tw.Lines{ShowHeaderLine: tw.Off},
			},
		})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithPadding(tw.Padding{Left: "", Right: "   ", Overwrite: true}),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithTrimSpace(tw.Off),
	)
	t.Header(anySlice(header)...)
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			if c == "" {
				c = "-"
			}
			cells[i] = c
		}
		if err := t.Append(cells); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	st := io.Styles()
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	for i, line := range lines {
		line = strings.TrimRight(line, " ")
		if i == 0 {
			line = st.Header.Render(line)
		}
		if _, err := fmt.Fprintln(io.Out, line); err != nil {
			return err
		}
	}
	return nil
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// shorten keeps the head and tail of a long sequence number on a terminal,
// where the full 56 digits would push every other column off screen.
func shorten(s string, tty bool) string {
	if !tty || len(s) <= 20 {
		return s
	}
	return s[:8] + "…" + s[len(s)-8:]
}
