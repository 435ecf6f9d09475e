package cmdutil

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// TableOptions are the flags every read command that prints a table has:
// --no-headers, --sort-by and --columns. They live in IOStreams (the
// command's stdout is the one thing they shape), so a command registers
// them with one call and every printer it makes honours them. --columns
// and --sort-by apply to a command's first table (its rows; a second table
// such as owners' KCL 3.x metrics is printed whole); --no-headers to every
// table. csv honours them too, matching its own header; JSON ignores them.
type TableOptions struct {
	NoHeaders bool
	SortBy    string
	Columns   []string
}

// ColumnsAnnotation holds, on --sort-by and --columns, the column names
// shell completion offers.
const ColumnsAnnotation = "kcltool_columns"

// AddTableFlags registers --no-headers, --sort-by and --columns on a read
// command; columns are the names of its table's columns (table and wide),
// which completion offers.
func AddTableFlags(cmd *cobra.Command, io *IOStreams, columns ...string) {
	fl := cmd.Flags()
	fl.BoolVar(&io.Table.NoHeaders, "no-headers", false, "print tables (and csv) without the header line")
	fl.StringVar(&io.Table.SortBy, "sort-by", "", "sort the table's rows by this column (a header name, any case; numbers and durations sort by value)")
	fl.StringSliceVar(&io.Table.Columns, "columns", nil, "print only these columns, in this order (header names, comma-separated)")
	names := make([]string, len(columns))
	for i, c := range columns {
		names[i] = strings.ToLower(c)
	}
	for _, name := range []string{"sort-by", "columns"} {
		_ = fl.SetAnnotation(name, ColumnsAnnotation, names)
	}
	// A misspelt column is a usage error before any read: doctor would
	// otherwise watch the table for its whole window first.
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if prev != nil {
			if err := prev(c, args); err != nil {
				return err
			}
		}
		return io.Table.checkNames(c, columns)
	}
}

// checkNames checks --sort-by and --columns against the table's column
// names when the output is a table (table or wide). csv names its own
// header (leaseOwner for LEASE-OWNER), checked when it is printed.
func (o TableOptions) checkNames(c *cobra.Command, columns []string) error {
	if format, err := c.Flags().GetString("output"); err == nil && format != FormatTable && format != FormatWide {
		return nil
	}
	if o.SortBy != "" {
		if _, err := columnIndex("sort-by", o.SortBy, columns); err != nil {
			return err
		}
	}
	for _, name := range o.Columns {
		if _, err := columnIndex("columns", strings.TrimSpace(name), columns); err != nil {
			return err
		}
	}
	return nil
}

// columnKey is how a name given to --columns or --sort-by matches a header:
// case, dashes and underscores do not count, so "lease-owner" is the
// table's LEASE-OWNER and csv's leaseOwner.
func columnKey(s string) string {
	return strings.NewReplacer("-", "", "_", "", " ", "").Replace(strings.ToLower(s))
}

// columnIndex finds a named column in header, or says which names are valid.
func columnIndex(flag, name string, header []string) (int, error) {
	for i, h := range header {
		if h != "" && columnKey(h) == columnKey(name) {
			return i, nil
		}
	}
	var valid []string
	for _, h := range header {
		if h != "" && h == strings.ToUpper(h) {
			valid = append(valid, strings.ToLower(h)) // a table's header
		} else if h != "" {
			valid = append(valid, h) // csv's, as it prints it
		}
	}
	return 0, UsageErrorf("invalid --%s %q: use %s", flag, name, strings.Join(valid, ", "))
}

// tablePlan is what the options make of one table: the columns to print,
// in order (nil: all), and the column to sort by (-1: none).
type tablePlan struct {
	cols   []int
	sortBy int
}

func (o TableOptions) plan(header []string) (tablePlan, error) {
	pl := tablePlan{sortBy: -1}
	if o.SortBy != "" {
		i, err := columnIndex("sort-by", o.SortBy, header)
		if err != nil {
			return pl, err
		}
		pl.sortBy = i
	}
	for _, c := range o.Columns {
		i, err := columnIndex("columns", strings.TrimSpace(c), header)
		if err != nil {
			return pl, err
		}
		pl.cols = append(pl.cols, i)
	}
	return pl, nil
}

// project picks the planned columns of a row into buf.
func (pl tablePlan) project(row, buf []string) []string {
	if pl.cols == nil {
		return append(buf, row...)
	}
	for _, i := range pl.cols {
		c := ""
		if i < len(row) {
			c = row[i]
		}
		buf = append(buf, c)
	}
	return buf
}

// sortRows sorts rows by the planned column, stably: by value when every
// cell of it that is not empty is a number or a duration, as text
// otherwise; empty cells ("-") go last.
func (pl tablePlan) sortRows(rows [][]string) {
	if pl.sortBy < 0 {
		return
	}
	col := pl.sortBy
	cell := func(r []string) string {
		if col < len(r) {
			return r[col]
		}
		return ""
	}
	numeric := true
	vals := make(map[string]float64)
	for _, r := range rows {
		c := cell(r)
		if c == "" || c == "-" {
			continue
		}
		v, ok := cellNumber(c)
		if !ok {
			numeric = false
			break
		}
		vals[c] = v
	}
	sort.SliceStable(rows, func(a, b int) bool {
		ca, cb := cell(rows[a]), cell(rows[b])
		ea, eb := ca == "" || ca == "-", cb == "" || cb == "-"
		if ea || eb {
			return !ea && eb
		}
		if numeric {
			return vals[ca] < vals[cb]
		}
		return ca < cb
	})
}

// cellNumber reads a cell as a number: an integer or decimal (a trailing
// "%" allowed), or a duration as the tables print them ("4m10s", "3d4h",
// "<1s").
func cellNumber(c string) (float64, bool) {
	if v, err := strconv.ParseFloat(strings.TrimSuffix(c, "%"), 64); err == nil {
		return v, true
	}
	if c == "<1s" {
		return float64(time.Second / 4), true
	}
	var days time.Duration
	if i := strings.IndexByte(c, 'd'); i > 0 {
		n, err := strconv.Atoi(c[:i])
		if err != nil {
			return 0, false
		}
		days, c = time.Duration(n)*24*time.Hour, c[i+1:]
		if c == "" {
			return float64(days), true
		}
	}
	d, err := time.ParseDuration(c)
	if err != nil {
		return 0, false
	}
	return float64(days + d), true
}

// applyTo is what the options do to a table whose rows are all built (csv,
// or a sorted table): the header and rows to print.
func (o TableOptions) applyTo(header []string, rows [][]string) ([]string, [][]string, error) {
	pl, err := o.plan(header)
	if err != nil {
		return nil, nil, err
	}
	if pl.sortBy >= 0 {
		rows = slices.Clone(rows)
		pl.sortRows(rows)
	}
	if pl.cols == nil {
		return header, rows, nil
	}
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = pl.project(r, nil)
	}
	return pl.project(header, nil), out, nil
}
