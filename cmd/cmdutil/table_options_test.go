package cmdutil

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestTableOptions: --columns picks and orders, --sort-by sorts durations
// by value with empty cells last, --no-headers drops the header, a bad
// name is a usage error naming the valid ones; csv honours the same.
func TestTableOptions(t *testing.T) {
	header := []string{"SHARD", "LEASE-OWNER", "BEHIND"}
	rows := [][]string{{"s1", "a", "2m0s"}, {"s2", "b", ""}, {"s3", "c", "45s"}, {"s4", "d", "<1s"}}
	run := func(o TableOptions, format string) (string, error) {
		var b bytes.Buffer
		p := NewPrinter(&IOStreams{Out: &b, ErrOut: &b, Table: o}, format)
		err := p.Print(Output{CSV: []string{"shardId", "leaseOwner", "millisBehind"}, Rows: func() [][]string { return rows },
			Text: func(p *Printer) error { return p.Table(header, rows) }})
		return b.String(), err
	}
	got, err := run(TableOptions{SortBy: "behind", Columns: []string{"behind", "shard"}, NoHeaders: true}, FormatTable)
	if want := "<1s    s4\n45s    s3\n2m0s   s1\n-      s2\n"; err != nil || got != want {
		t.Errorf("table: %v\n%q, want\n%q", err, got, want)
	}
	got, err = run(TableOptions{Columns: []string{"lease_owner"}, NoHeaders: true}, FormatCSV)
	if want := "a\nb\nc\nd\n"; err != nil || got != want {
		t.Errorf("csv: %v %q, want %q", err, got, want)
	}
	_, err = run(TableOptions{SortBy: "age"}, FormatTable)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != ExitUsage || !strings.Contains(err.Error(), "use shard, lease-owner, behind") {
		t.Errorf("bad --sort-by: %v", err)
	}
}

// TestFittedTable: at a width, sequence numbers are shortened and a long
// cell wraps between words; -o wide and no width keep everything whole.
func TestFittedTable(t *testing.T) {
	seq := "49590338271490256608559692538361571095921575989136588898"
	for _, c := range []struct {
		width  int
		format string
		fitted bool
	}{{40, FormatTable, true}, {40, FormatWide, false}, {0, FormatTable, false}} {
		var b bytes.Buffer
		p := NewPrinter(&IOStreams{Out: &b, ErrOut: &b, Width: c.width}, c.format)
		if err := p.Table([]string{"SHARD", "CHECKPOINT", "NOTE"}, [][]string{{"shardId-000000000001", p.Short(seq), "blocked on shardId-000000000000 since noon"}}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if strings.Contains(out, seq) == c.fitted || strings.Contains(out, "4959…8898") != c.fitted {
			t.Errorf("width %d -o %s: sequence number:\n%s", c.width, c.format, out)
		}
		for _, l := range strings.Split(out, "\n") {
			if c.fitted && len([]rune(l)) > c.width {
				t.Errorf("width %d: line of %d: %q", c.width, len([]rune(l)), l)
			}
		}
	}
}

// TestFittedTableSparesColumns: at a width too narrow for every column,
// the columns a command spares go (and stderr names them) before a shard id
// or a tree's indentation would break; with --columns, or wide enough,
// nothing goes.
func TestFittedTableSparesColumns(t *testing.T) {
	header := []string{"SHARD", "OWNER", "SUBSEQ", "SWITCHES", "STATE"}
	rows := [][]string{
		{"shardId-000000000001", "worker-a", "0", "0", "owned"},
		{"\u00a0\u00a0\u00a0\u00a0└──\u00a0shardId-000000000002", "-", "0", "0", "blocked on shardId-000000000001"},
	}
	for _, c := range []struct {
		width  int
		opts   TableOptions
		hidden string
	}{
		{66, TableOptions{}, "kcltool: SUBSEQ, SWITCHES hidden to fit 66 columns (-o wide or --columns shows them)\n"},
		{200, TableOptions{}, ""},
		{60, TableOptions{Columns: []string{"shard", "subseq", "switches", "state"}}, ""},
	} {
		var out, errOut bytes.Buffer
		p := NewPrinter(&IOStreams{Out: &out, ErrOut: &errOut, Width: c.width, Table: c.opts}, FormatTable)
		p.Spare("SUBSEQ", "SWITCHES", "OWNER")
		if err := p.Table(header, rows); err != nil {
			t.Fatal(err)
		}
		if errOut.String() != c.hidden {
			t.Errorf("width %d %+v: stderr %q, want %q", c.width, c.opts, errOut.String(), c.hidden)
		}
		if c.hidden != "" && (strings.Contains(out.String(), "SUBSEQ") || !strings.Contains(out.String(), "OWNER")) {
			t.Errorf("width %d: spared the wrong columns:\n%s", c.width, out.String())
		}
		if c.opts.Columns != nil { // the user's choice: nothing hidden, so things break
			continue
		}
		if !strings.Contains(out.String(), "\u00a0\u00a0\u00a0\u00a0└──\u00a0shardId-000000000002") ||
			!strings.Contains(out.String(), "shardId-000000000001") {
			t.Errorf("width %d %+v: an id or the tree broken:\n%s", c.width, c.opts, out.String())
		}
	}
}
