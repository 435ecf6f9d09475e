package runner

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"
	"time"
)

// A line longer than the pipe takes at once is written whole before the
// next one, even when its sender stopped waiting (a cancelled context) and
// another line follows at once, as cancelled's leaseLost does: the next
// line never lands inside it.
func TestMLChildSendKeepsLinesWhole(t *testing.T) {
	c, err := startMLChild([]string{"cat"}, "", nil, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
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
