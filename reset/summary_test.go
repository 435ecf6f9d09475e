package reset

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

// The summary of an export comes from its header alone: a file cut off
// after "items" summarises the same as the whole one, and what is not an
// export is refused.
func TestReadExportSummary(t *testing.T) {
	w := newTable(t)
	w.lease(shardID(0), "worker-a", "100")
	w.lease(shardID(1), "", leasecore.SHARD_END)
	at := time.Date(2026, 11, 1, 10, 0, 0, 123e6, time.UTC)
	var buf bytes.Buffer
	if err := NewExport(w.table, at, w.scan().Items).WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	whole := buf.String()
	cut := whole[:strings.Index(whole, `"items": [`)+len(`"items": [`)+3]
	for name, doc := range map[string]string{"whole": whole, "cut after items": cut} {
		s, err := ReadExportSummary(strings.NewReader(doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if s.Table != w.table || !s.ExportedAt.Equal(at) || s.Leases != 2 || s.NonLeases != 0 || s.Malformed != 0 {
			t.Errorf("%s: summary %+v", name, s)
		}
	}
	for _, doc := range []string{"leaseKey,checkpoint\n", `{"format":"other","version":1}`, `{"format":"kcltool-lease-table-export","version":2,"items":[]}`} {
		if _, err := ReadExportSummary(strings.NewReader(doc)); err == nil {
			t.Errorf("%q summarised as an export", doc)
		}
	}
}

// The progress callbacks count what is done out of the total: shards
// resolved for a time, leases written by Execute.
func TestProgressCallbacks(t *testing.T) {
	w := newWorld(t, 3)
	for i := range 3 {
		w.put(shardID(i), 2)
	}
	at := mark()
	for i := range 3 {
		last := w.put(shardID(i), 1)
		w.lease(shardID(i), "", last[0])
	}
	var mu sync.Mutex
	var resolved []int
	p := w.plan(ResetOptions{Target: Target{At: at}, Progress: func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		if total != 3 {
			t.Errorf("resolved %d of %d, want a total of 3", done, total)
		}
		resolved = append(resolved, done)
	}})
	if len(resolved) != 3 || resolved[2] != 3 {
		t.Errorf("resolved %v, want 1, 2, 3", resolved)
	}
	var wrote []string
	w.execute(p, ExecOptions{Progress: func(done, total int) { wrote = append(wrote, strings.Repeat("+", done)+"/"+strings.Repeat("+", total)) }})
	if strings.Join(wrote, " ") != "+/+++ ++/+++ +++/+++" {
		t.Errorf("wrote %v, want 1, 2 and 3 of 3", wrote)
	}
}
