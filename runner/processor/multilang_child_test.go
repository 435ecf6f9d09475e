package processor

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/clock"
)

// A line longer than the pipe takes at once is written whole before the
// next one, even when its sender stopped waiting (a cancelled context) and
// another line follows at once, as cancelled's leaseLost does: the next
// line never lands inside it.
func TestMLChildSendKeepsLinesWhole(t *testing.T) {
	c, err := startMLChild(clock.RealClock(), []string{"cat"}, "", nil, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.kill()
	long := append(bytes.Repeat([]byte{'a'}, 3*pipeBuffer), '\n')
	for round := range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // the sender gives up at once; the line still goes whole
		_ = c.send(ctx, long)
		if err := c.send(context.Background(), []byte("next\n")); err != nil {
			t.Fatal(err)
		}
		for _, want := range [][]byte{long, []byte("next\n")} {
			select {
			case got := <-c.lines:
				if !bytes.Equal(got, want) {
					t.Fatalf("round %d: a line of %d bytes (%q…), want %d bytes (%q…)", round, len(got), got[:min(len(got), 8)], len(want), want[:min(len(want), 8)])
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: no line from the child", round)
			}
		}
	}
}

// A line's buffer is reused for the next line only once every byte of it
// was written: a child that reads slowly gets lines longer than its pipe,
// and echoes them back byte for byte. A send whose context ends while the
// rest of its line is still being written leaves that buffer out of
// mlLines, so the next line, written into whatever mlLineBuffer gives,
// cannot change the bytes still going out; a send that finished gives its
// buffer back; a failed send and a line under mlLineKeepMin or over
// mlLineKeepMax give nothing.
func TestMLChildLineBufferReusedOnlyWhenWritten(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	start := func(argv ...string) *mlChild {
		t.Helper()
		c, err := startMLChild(clock.RealClock(), argv, "", nil, log, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.kill)
		return c
	}
	// It starts reading after a while: the pipe fills, and the rest of a
	// long line waits on a write in flight.
	slowChild := func() *mlChild { return start("sh", "-c", "sleep 0.3; exec cat") }
	drain := func() {
		for mlLines.Get() != nil {
		}
	}
	// fill writes a line of n bytes of ch into a buffer from mlLineBuffer.
	fill := func(n int, ch byte) []byte {
		b := mlLineBuffer()
		for range n - 1 {
			b = append(b, ch)
		}
		return append(b, '\n')
	}
	expect := func(c *mlChild, what string, n int, ch byte) {
		t.Helper()
		select {
		case got := <-c.lines:
			want := append(bytes.Repeat([]byte{ch}, n-1), '\n')
			if !bytes.Equal(got, want) {
				i := 0
				for i < min(len(got), len(want)) && got[i] == want[i] {
					i++
				}
				t.Fatalf("%s: the child read %d bytes differing from the line sent at byte %d (%q…), want %d bytes of %q", what, len(got), i, got[i:min(len(got), i+8)], len(want), ch)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: no line from the child", what)
		}
	}
	n := 3 * pipeBuffer

	// Cancelled while the rest of the line is still being written.
	c := slowChild()
	drain()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	first := fill(n, 'a')
	if err := c.sendBuffer(ctx, first); err == nil {
		t.Fatal("a send with a cancelled context into a full pipe returned no error")
	}
	second := fill(n, 'b') // what a later page writes into mlLineBuffer's buffer
	if &second[0] == &first[0] {
		t.Error("a line whose send was cancelled gave its buffer to the next line")
	}
	if err := c.sendBuffer(context.Background(), second); err != nil {
		t.Fatal(err)
	}
	expect(c, "the cancelled line", n, 'a')
	expect(c, "the line after it", n, 'b')

	// Written whole, by a write that waited for the slow child: the next
	// line may take its buffer, and both arrive as sent.
	c = slowChild()
	drain()
	first = fill(n, 'c')
	if err := c.sendBuffer(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	second = fill(n, 'd')
	reused := &second[0] == &first[0]
	if err := c.sendBuffer(context.Background(), second); err != nil {
		t.Fatal(err)
	}
	expect(c, "the first line written whole", n, 'c')
	expect(c, "the line after it", n, 'd')
	// sync.Pool drops a Put now and then under the race detector, and a
	// goroutine that moved to another P meanwhile does not see what it put
	// (a P's private slot is not shared): the buffer is asked for at once,
	// before the wait for the echo can move this goroutine, and the reuse
	// is asked of one line in many.
	for try := 0; !reused && try < 32; try++ {
		drain()
		line := fill(mlLineKeepMin, 'e')
		if err := c.sendBuffer(context.Background(), line); err != nil {
			t.Fatal(err)
		}
		next := mlLineBuffer() // not written to: the line's bytes are still checked below
		reused = cap(next) > 0 && &next[:1][0] == &line[0]
		expect(c, "a line of mlLineKeepMin", mlLineKeepMin, 'e')
	}
	if !reused {
		t.Error("lines written whole never gave their buffers back")
	}

	// Over mlLineKeepMax, or short: written, not kept.
	for _, size := range []int{mlLineKeepMax + 1, 100} {
		drain()
		line := make([]byte, 0, size) // its capacity is what counts
		line = append(append(line, bytes.Repeat([]byte{'f'}, size-1)...), '\n')
		if err := c.sendBuffer(context.Background(), line); err != nil {
			t.Fatal(err)
		}
		expect(c, "a line too long or too short to keep", size, 'f')
		if mlLines.Get() != nil {
			t.Errorf("a line of %d bytes was kept (from %d to %d)", size, mlLineKeepMin, mlLineKeepMax)
		}
	}

	// A child gone: the send fails, nothing is kept.
	gone := start("true")
	<-gone.exited
	drain()
	if err := gone.sendBuffer(context.Background(), fill(n, 'g')); err == nil {
		t.Fatal("a send to a child that exited returned no error")
	}
	if mlLines.Get() != nil {
		t.Error("a line whose send failed gave its buffer back")
	}
}

// A MultiLang child's stderr is logged as --exec's is split: a line over
// StderrLineMax is logged cut, marked with the bytes dropped, and a last
// line without a newline (as the KCL's sample processors write theirs) is
// logged once the child has exited.
func TestMLChildStderrCutAndUnendedLines(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	script := `head -c 5000 /dev/zero | tr '\0' x >&2; printf '\nfirst\n' >&2; printf 'record k1 done. ' >&2; printf 'record k2 done.' >&2`
	c, err := startMLChild(clock.RealClock(), []string{"sh", "-c", script}, "", nil, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		c.kill()
		t.Fatal("the child did not exit")
	}
	want := `level=INFO msg="child stderr" line="` + strings.Repeat("x", StderrLineMax) + ` [line cut at 2048 bytes, 2952 more dropped]"
level=INFO msg="child stderr" line=first
level=INFO msg="child stderr" line="record k1 done. record k2 done."
`
	if buf.String() != want {
		t.Fatalf("logged:\n%s\nwant:\n%s", buf.String(), want)
	}
}

// The splitter both protocols share, written to in pieces that split
// lines anywhere: cut lines say how much was dropped, each counted once,
// blank lines are skipped, and end files an unended last line (cut too).
func TestStderrSplitterPieces(t *testing.T) {
	type filed struct {
		line    string
		dropped int
	}
	var got []filed
	s := stderrSplitter{file: func(l string, d int) { got = append(got, filed{l, d}) }}
	long := strings.Repeat("y", StderrLineMax+10)
	in := "a\r\n\n   \n" + long + "\nb\n" + long
	for len(in) > 0 {
		n := min(len(in), 7)
		_, _ = s.Write([]byte(in[:n]))
		in = in[n:]
	}
	s.end()
	cut := strings.Repeat("y", StderrLineMax) + " [line cut at 2048 bytes, 10 more dropped]"
	want := []filed{{"a", 0}, {cut, 10}, {"b", 0}, {cut, 10}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("filed %v\nwant %v", got, want)
	}
	s.end() // nothing left
	if len(got) != 4 {
		t.Fatalf("end filed again: %v", got[4:])
	}
}
