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
