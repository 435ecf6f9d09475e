package cmd

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// The long commands show progress on a terminal (the hooks reach the
// domain packages) and write none of it when stderr is a pipe, as in CI.
func TestProgressOnATerminalOnly(t *testing.T) {
	s := newScenario(t, 2)
	s.put(shardID(0), 2)
	s.put(shardID(1), 2)
	at := pause()
	s.put(shardID(0), 1)
	s.put(shardID(1), 1)
	s.lease(shardID(0), "", s.last[shardID(0)])
	s.lease(shardID(1), "", s.prev[shardID(1)])
	export := filepath.Join(t.TempDir(), "export.json")
	if _, errOut, code := s.kcltool("checkpoint", "export", "--app", s.table, "--file", export); code != 0 {
		t.Fatalf("export exit %d: %s", code, errOut)
	}
	// The table moves on, so that the import has a lease to write back.
	if _, errOut, code := s.kcltool("checkpoint", "reset", "--app", s.table, "--stream", s.stream, "--to", "trim-horizon", "--shard", shardID(1),
		"--execute", "--sample", "100ms", "--backup-dir", t.TempDir()); code != 0 {
		t.Fatalf("reset exit %d: %s", code, errOut)
	}
	atFlag := at.UTC().Format(time.RFC3339Nano)
	commands := []struct {
		args     []string
		terminal string // what a terminal shows ("" for nothing)
	}{
		{[]string{"lag", "--app", s.table, "--stream", s.stream}, "kcltool: probed 2 of 2 shards"},
		{[]string{"checkpoint", "export", "--app", s.table}, `kcltool: reading lease table "` + s.table + `": 1 page, 2 items`},
		{[]string{"leases", "ls", "--app", s.table}, ""}, // one page: too small to mention
		{[]string{"checkpoint", "reset", "--app", s.table, "--stream", s.stream, "--at", atFlag}, "kcltool: resolved 2 of 2 shards"},
		{[]string{"checkpoint", "import", "--app", s.table, "--file", export, "--execute", "--sample", "100ms", "--backup-dir", t.TempDir()}, "kcltool: wrote 1 of 1 leases"},
	}
	for _, c := range commands {
		_, errOut, code := s.kcltool(c.args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, errOut)
		}
		if strings.ContainsAny(errOut, "\r\x1b") || strings.Contains(errOut, " of 2 shards") || strings.Contains(errOut, "reading lease table") {
			t.Errorf("%v: progress on a stderr that is not a terminal: %q", c.args, errOut)
		}
	}
	env := map[string]string{"AWS_ENDPOINT_URL_KINESIS": emulator.KinesisEndpoint(t)}
	for _, c := range commands {
		if strings.Contains(strings.Join(c.args, " "), "import") {
			// Put the lease back where the export is not, so there is a write.
			if _, errOut, code := s.kcltool("checkpoint", "reset", "--app", s.table, "--stream", s.stream, "--to", "trim-horizon", "--shard", shardID(1),
				"--execute", "--sample", "100ms", "--backup-dir", t.TempDir()); code != 0 {
				t.Fatalf("reset exit %d: %s", code, errOut)
			}
		}
		f, _, errOut := testFactory(t, true, env)
		if code := Run(context.Background(), f, c.args); code != 0 {
			t.Fatalf("%v on a terminal: exit %d: %s", c.args, code, errOut)
		}
		got := errOut.String()
		switch {
		case c.terminal == "" && strings.ContainsAny(got, "\r\x1b"):
			t.Errorf("%v: a small table showed progress: %q", c.args, got)
		case c.terminal != "" && !strings.Contains(got, "\r"+c.terminal+"\x1b[K"):
			t.Errorf("%v: the terminal did not show %q: %q", c.args, c.terminal, got)
		case c.terminal != "" && !strings.Contains(got, c.terminal+"\x1b[K\r\x1b[K"):
			t.Errorf("%v: the progress line was not cleared after the last count: %q", c.args, got)
		}
	}
}
