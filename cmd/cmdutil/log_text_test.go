package cmdutil

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

const (
	seqFirst = "49590338271490256608559692538361571095921575989136588898"
	seqLast  = "49590338271490256608559692540925702759324208523137515618"
)

// logStderrLine logs what the runner logs for a handler's stderr line: the
// worker and the shard from the loggers' With, the batch, then the line.
func logStderrLine(log *slog.Logger) {
	log.With("worker", "w-1").With("shard", "shardId-000000000000").Info("handler stderr",
		"attempt", 1, "first_sequence", seqFirst, "last_sequence", seqLast, "line", "downstream refused the batch")
}

// In text, the message comes first, then the handler's line, then the
// rest in the order given, with the sequence numbers shortened.
func TestTextLogPutsTheHandlersWordsFirst(t *testing.T) {
	var buf bytes.Buffer
	log, err := NewLogger("info", "text", &buf, false)
	if err != nil {
		t.Fatal(err)
	}
	logStderrLine(log)
	line := strings.TrimSpace(buf.String())
	_, rest, ok := strings.Cut(line, " level=INFO ")
	want := `msg="handler stderr" line="downstream refused the batch" worker=w-1 shard=shardId-000000000000 attempt=1 ` +
		"first_sequence=" + Shorten(seqFirst, true) + " last_sequence=" + Shorten(seqLast, true)
	if !ok || !strings.HasPrefix(line, "time=") || rest != want {
		t.Errorf("text log line\n%s\nwant time=… level=INFO %s", line, want)
	}
	if i := strings.Index(line, "downstream"); i > 90 {
		t.Errorf("the handler's words start %d characters in", i)
	}

	buf.Reset()
	log.With("shard", "s").Warn("handler failed", "attempt", 2, "first_sequence", seqFirst, "exit_code", 3, "error", "exit status 3")
	if _, rest, _ := strings.Cut(strings.TrimSpace(buf.String()), " level=WARN "); rest != `msg="handler failed" error="exit status 3" shard=s attempt=2 first_sequence=`+Shorten(seqFirst, true)+" exit_code=3" {
		t.Errorf("handler failed line: %s", buf.String())
	}
}

// The handler keeps slog's semantics: the level, groups from WithGroup
// and slog.Group, With attributes at their group's level, empty groups
// dropped, quoting, and durations as text. Only attributes named as
// sequence numbers are shortened, whatever their digits.
func TestTextLogKeepsSlogSemantics(t *testing.T) {
	var buf bytes.Buffer
	log, err := NewLogger("warn", "text", &buf, false)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hidden")
	if buf.Len() != 0 {
		t.Fatalf("info logged at warn: %q", buf.String())
	}
	log.With("a", "x y").WithGroup("g").With("grace", 90*time.Second).WithGroup("empty").
		Warn("m", "err", errors.New("it broke"), "count", seqFirst, slog.Group("h", "checkpoint", seqLast, "err", "inner"))
	got := strings.TrimSpace(buf.String())
	want := `msg=m a="x y" g.grace=1m30s g.empty.err="it broke" g.empty.count=` + seqFirst +
		` g.empty.h.err=inner g.empty.h.checkpoint=` + Shorten(seqLast, true)
	if _, rest, _ := strings.Cut(got, " level=WARN "); rest != want {
		t.Errorf("got\n%s\nwant …%s", got, want)
	}

	buf.Reset()
	log.WithGroup("nothing").Warn("bare")
	if _, rest, _ := strings.Cut(strings.TrimSpace(buf.String()), " level=WARN "); rest != "msg=bare" {
		t.Errorf("an empty group is written: %q", buf.String())
	}
}

// JSON logs are unchanged: every sequence number whole, the attributes in
// the order logged.
func TestJSONLogKeepsSequenceNumbersAndOrder(t *testing.T) {
	var buf bytes.Buffer
	log, err := NewLogger("info", "auto", &buf, false)
	if err != nil {
		t.Fatal(err)
	}
	logStderrLine(log)
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["first_sequence"] != seqFirst || rec["last_sequence"] != seqLast {
		t.Errorf("JSON log shortened the range: %s", buf.String())
	}
	if !strings.Contains(buf.String(), `"msg":"handler stderr","worker":"w-1","shard":"shardId-000000000000","attempt":1,"first_sequence"`) ||
		!strings.HasSuffix(strings.TrimSpace(buf.String()), `"line":"downstream refused the batch"}`) {
		t.Errorf("JSON log reordered: %s", buf.String())
	}
}
