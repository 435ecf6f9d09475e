package cmd

import (
	"bytes"
	"testing"
)

// TableOf prints the bytes Table prints, for cells of every kind the tables
// hold: empty ones, multi-byte runes (the shortened sequence number's "…",
// a handoff's "→"), wide ones, and columns narrower than their header.
func TestTableOfPrintsWhatTablePrints(t *testing.T) {
	header := []string{"SHARD", "OWNER", "COUNTER", "CHECKPOINT", "X"}
	rows := [][]string{
		{"shardId-000000000000", "worker-a", "12", "49590338…21575989", ""},
		{"shardId-1", "b→worker-c", "", "TRIM_HORIZON", "日本語"},
		{"s", "", "1234567890123", "SHARD_END", "x"},
		{"", "w", "0", "", ""},
	}
	for _, tty := range []bool{false, true} {
		var a, b bytes.Buffer
		pa := newPrinter(&IOStreams{Out: &a, ErrOut: &bytes.Buffer{}, OutTTY: tty}, FormatTable)
		pb := newPrinter(&IOStreams{Out: &b, ErrOut: &bytes.Buffer{}, OutTTY: tty}, FormatTable)
		if err := pa.Table(header, rows); err != nil {
			t.Fatal(err)
		}
		if err := pb.TableOf(header, len(rows), func(i int, buf []string) []string { return append(buf, rows[i]...) }); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() {
			t.Errorf("tty %v: TableOf printed\n%q\nTable printed\n%q", tty, b.String(), a.String())
		}
	}
}
