package processor

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
)

// Lines split across writes are joined, \r\n and blank lines are not
// logged, and an unended last line is kept.
func TestStderrLinesSplitsWrites(t *testing.T) {
	var s stderrLines
	for _, w := range []string{"fir", "st\r\nsec", "ond\n\n  \n", "last, unended"} {
		_, _ = s.Write([]byte(w))
	}
	got := s.result()
	if want := []string{"first", "second", "last, unended"}; !reflect.DeepEqual(got.Head, want) || len(got.Tail) != 0 || got.DroppedLines != 0 {
		t.Fatalf("got %+v, want head %q", got, want)
	}
}

// More lines than the bound: the first and the last half are kept, and the
// middle is counted in lines and bytes.
func TestStderrLinesKeepsBothEnds(t *testing.T) {
	var s stderrLines
	const n = 1000
	for i := range n {
		fmt.Fprintf(&s, "line %04d\n", i) // 9 bytes without the newline
	}
	got := s.result()
	half := StderrLogLines / 2
	if len(got.Head) != half || len(got.Tail) != half {
		t.Fatalf("kept %d + %d lines, want %d + %d", len(got.Head), len(got.Tail), half, half)
	}
	if got.Head[0] != "line 0000" || got.Head[half-1] != fmt.Sprintf("line %04d", half-1) ||
		got.Tail[0] != fmt.Sprintf("line %04d", n-half) || got.Tail[half-1] != fmt.Sprintf("line %04d", n-1) {
		t.Fatalf("kept %q ... %q", got.Head, got.Tail)
	}
	if got.DroppedLines != n-StderrLogLines || got.DroppedBytes != int64(n-StderrLogLines)*9 {
		t.Fatalf("dropped %d lines, %d bytes; want %d, %d", got.DroppedLines, got.DroppedBytes, n-StderrLogLines, (n-StderrLogLines)*9)
	}
}

// The byte bound holds for long lines, and a line over StderrLineMax is
// cut, the rest counted as dropped.
func TestStderrLinesBoundsBytes(t *testing.T) {
	var s stderrLines
	long := strings.Repeat("x", StderrLineMax+500)
	for range 40 {
		_, _ = s.Write([]byte(long + "\n"))
	}
	got := s.result()
	total := 0
	for _, l := range append(append([]string{}, got.Head...), got.Tail...) {
		if !strings.HasSuffix(l, "[line cut at 2048 bytes, 500 more dropped]") {
			t.Fatalf("line of %d bytes not marked as cut", len(l))
		}
		total += len(l)
	}
	if total > StderrLogBytes {
		t.Fatalf("kept %d bytes, bound %d", total, StderrLogBytes)
	}
	kept := int64(len(got.Head) + len(got.Tail))
	cutLine := int64(len(got.Head[0]))
	if got.DroppedLines != 40-kept || got.DroppedBytes != 40*500+(40-kept)*cutLine {
		t.Fatalf("kept %d lines, dropped %d lines and %d bytes", kept, got.DroppedLines, got.DroppedBytes)
	}
}

// A handler's stderr is logged line by line at info, on success too, with
// the batch's attempt and sequence range and without the shard key, which
// the caller's logger carries once.
func TestPolicyLogsStderrOnSuccess(t *testing.T) {
	h, _ := newHandler(t, `cat > /dev/null; echo "loaded 3 records" >&2; echo "done" >&2`)
	p, _, logs := newPolicy(h)
	p.Log = p.Log.With("shard", "shardId-000000000003")
	var cps checkpoints
	if _, err := p.Process(context.Background(), nil, testBatch(3), cps.fn); err != nil {
		t.Fatal(err)
	}
	want := `{"level":"INFO","msg":"handler stderr","shard":"shardId-000000000003","attempt":1,"first_sequence":"100","last_sequence":"102","line":"loaded 3 records"}
{"level":"INFO","msg":"handler stderr","shard":"shardId-000000000003","attempt":1,"first_sequence":"100","last_sequence":"102","line":"done"}
`
	if got := stripTime(logs.String()); got != want {
		t.Fatalf("logs:\n%s\nwant:\n%s", got, want)
	}
}

// The dropped line sits between the first and the last lines.
func TestStderrLogSaysWhatWasDropped(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	StderrLog{Head: []string{"a"}, Tail: []string{"z"}, DroppedLines: 7, DroppedBytes: 70}.Log(log, "attempt", 2)
	want := `level=INFO msg="handler stderr" attempt=2 line=a
level=INFO msg="handler stderr lines dropped" attempt=2 dropped_lines=7 dropped_bytes=70 limit_lines=100 limit_bytes=16384
level=INFO msg="handler stderr" attempt=2 line=z
`
	if buf.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func stripTime(s string) string {
	var out []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if i := strings.Index(l, `"time":"`); i >= 0 {
			if j := strings.Index(l[i+8:], `",`); j >= 0 {
				l = l[:i] + l[i+8+j+2:]
			}
		}
		out = append(out, l)
	}
	return strings.Join(out, "")
}
