package top

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/muesli/termenv"

	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/inspect/doctor"
	"github.com/kcltool/kcltool/inspect/top"
)

// The golden frames must not depend on the terminal the tests run in.
func init() { lipgloss.SetColorProfile(termenv.Ascii) }

var fixedAt = time.Date(2026, 12, 5, 14, 3, 20, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// fixedSnapshot is a fleet in the middle of a split: shard 1 closed and
// drained by w1, its children 3 and 4 running, shard 2 stuck on w2, shard 0
// far behind on w1, and one unassigned shard.
func fixedSnapshot() *top.Snapshot {
	sec := func(n int) *time.Duration { return ptr(time.Duration(n) * time.Second) }
	return &top.Snapshot{
		At: fixedAt, Table: "orders", Stream: "orders", Refresh: 7, Interval: top.DefaultInterval,
		Leases: 5, Unassigned: 1,
		Shards: []top.Shard{
			{Key: "shardId-000000000000", State: "behind", Owner: "worker-a", RecordsPerSec: ptr(41.5), Behind: sec(95),
				History: []float64{20, 35, 50, 65, 80, 95}, SinceCheckpoint: 4 * time.Second,
				Findings: []top.Finding{{ID: doctor.FindShardLag, Severity: doctor.SeverityWarn}}},
			{Key: "shardId-000000000001", State: "drained", Owner: "worker-a", RecordsPerSec: ptr(0.0), Behind: nil,
				History: []float64{3, 1, 0, -1, -1, -1}, SinceCheckpoint: 80 * time.Second},
			{Key: "shardId-000000000002", State: "behind", Owner: "worker-b", RecordsPerSec: ptr(0.0), Behind: sec(200),
				History: []float64{80, 100, 120, 140, 160, 200}, SinceCheckpoint: 2 * time.Minute, SinceAtLeast: true,
				Findings: []top.Finding{{ID: doctor.FindStuckShard, Severity: doctor.SeverityCritical}}},
			{Key: "shardId-000000000003", State: "at-tip", Owner: "worker-b", Parents: []string{"shardId-000000000001"}, RecordsPerSec: ptr(12.25), Behind: sec(0),
				History: []float64{0, 0, 0}, SinceCheckpoint: 2 * time.Second},
			{Key: "shardId-000000000004", State: "unassigned", Parents: []string{"shardId-000000000001"}, Behind: sec(30),
				History: []float64{10, 20, 30}, SinceCheckpoint: 60 * time.Second, SinceAtLeast: true,
				Findings: []top.Finding{{ID: doctor.FindUnassigned, Severity: doctor.SeverityWarn}}},
		},
		Workers: []top.Worker{
			{ID: "worker-a", Leases: 2, Share: 0.4, RecordsPerSec: ptr(41.5), Leader: true,
				Metrics: &inspect.WorkerMetrics{Worker: "worker-a", CPU: []float64{30, 42}, LastUpdate: fixedAt.Add(-20 * time.Second)}},
			{ID: "worker-b", Leases: 2, Share: 0.4, RecordsPerSec: ptr(12.25), ThroughputKBps: ptr(18.5),
				Metrics: &inspect.WorkerMetrics{Worker: "worker-b", CPU: []float64{-1}, LastUpdate: fixedAt.Add(-90 * time.Second)}},
		},
		KCL3: &top.KCL3{Leader: "worker-a", Layout: "lease table"},
		// Doctor's findings over the window: those naming a shard are on its
		// row too; stale-worker-metrics names only a worker.
		Findings: []top.Finding{
			{ID: doctor.FindStuckShard, Severity: doctor.SeverityCritical, Summary: "1 shard renewed but not checkpointed for 1m0s with records waiting: shardId-000000000002", Shards: []string{"shardId-000000000002"}, Workers: []string{"worker-b"}},
			{ID: doctor.FindShardLag, Severity: doctor.SeverityWarn, Summary: "1 shard more than 1m0s behind the tip: shardId-000000000000 (1m35s)", Shards: []string{"shardId-000000000000"}},
			{ID: doctor.FindStaleMetrics, Severity: doctor.SeverityWarn, Summary: "worker-b's worker metrics are 1m30s old: the leader counts it as inactive", Workers: []string{"worker-b"}},
			{ID: doctor.FindUnassigned, Severity: doctor.SeverityWarn, Summary: "1 lease held by no worker", Shards: []string{"shardId-000000000004"}},
			{ID: doctor.FindLeader, Severity: doctor.SeverityInfo, Summary: "worker-a holds the leader lock"},
			{ID: doctor.FindCloudWatchSkipped, Severity: doctor.SeverityInfo, Summary: "CloudWatch not read"},
		},
		Doctor: top.DoctorState{Window: time.Minute},
		Cost:   top.Cost{Scans: 1, Pages: 1, ReadUnits: 2.5, TableCalls: 1, KinesisCalls: 13, ReadUnitsPerMinute: 7.5, KinesisCallsPerMinute: 39},
	}
}

// runKeys starts the view at a terminal size on the fixed snapshot, waits
// for its first frame, presses keys, then q, and returns the final model.
func runKeys(t *testing.T, w, h int, keys ...tea.KeyMsg) *model {
	t.Helper()
	snap := fixedSnapshot()
	refresh := func(context.Context) (*top.Snapshot, error) { return snap, nil }
	// An hour's interval: no refresh but the first during the test.
	m := newModel(context.Background(), "orders", refresh, time.Hour, true)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(w, h))
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("cost a minute")) },
		teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	for _, k := range keys {
		tm.Send(k)
	}
	tm.Send(runes("q"))
	return tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*model)
}

func runes(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }

// checkFrame compares the final frame with testdata/<test>.golden
// (go test ./cmd/top -update rewrites them) and checks it fits the size.
func checkFrame(t *testing.T, m *model, w, h int) string {
	t.Helper()
	v := m.View()
	lines := strings.Split(v, "\n")
	if len(lines) > h {
		t.Errorf("%d lines on a %d-line terminal", len(lines), h)
	}
	for _, l := range lines {
		if n := lipgloss.Width(l); n > w {
			t.Errorf("line of %d columns on a %d-column terminal: %q", n, w, l)
		}
	}
	golden.RequireEqual(t, []byte(v))
	return v
}

func TestTopFrame100x30(t *testing.T) {
	t.Parallel()
	checkFrame(t, runKeys(t, 100, 30), 100, 30)
}

func TestTopFrame80x24(t *testing.T) {
	t.Parallel()
	checkFrame(t, runKeys(t, 80, 24), 80, 24)
}

// TestTopFrameShort: on a terminal too short for every shard the rows are
// cut and the frame says how many are hidden.
func TestTopFrameShort(t *testing.T) {
	t.Parallel()
	v := checkFrame(t, runKeys(t, 80, 12), 80, 12)
	if !strings.Contains(v, "more: / to filter") {
		t.Errorf("no line for the hidden rows:\n%s", v)
	}
}

// TestTopKeysSort: s twice sorts by owner, S reverses it.
func TestTopKeysSort(t *testing.T) {
	t.Parallel()
	m := runKeys(t, 100, 30, runes("s"), runes("s"), runes("S"))
	if m.view.sortBy != 2 || !m.view.desc {
		t.Fatalf("sort %d desc %v, want owner reversed", m.view.sortBy, m.view.desc)
	}
	checkFrame(t, m, 100, 30)
}

// TestTopKeysSortByLag: four presses of s sort by lag, the most behind last.
func TestTopKeysSortByLag(t *testing.T) {
	t.Parallel()
	v := checkFrame(t, runKeys(t, 100, 30, runes("s"), runes("s"), runes("s"), runes("s")), 100, 30)
	if i, j := strings.Index(v, "shardId-000000000002"), strings.Index(v, "shardId-000000000000"); i < j {
		t.Errorf("shard 2 (200s behind) before shard 0 (95s):\n%s", v)
	}
}

// TestTopKeysFilter: / types a worker's name; enter keeps only its shards.
func TestTopKeysFilter(t *testing.T) {
	t.Parallel()
	keys := []tea.KeyMsg{runes("/")}
	for _, r := range "worker-b" {
		keys = append(keys, runes(string(r)))
	}
	keys = append(keys, tea.KeyMsg{Type: tea.KeyEnter})
	v := checkFrame(t, runKeys(t, 100, 30, keys...), 100, 30)
	if strings.Contains(v, "shardId-000000000000") || !strings.Contains(v, "shardId-000000000002") {
		t.Errorf("filter worker-b kept the wrong shards:\n%s", v)
	}
}

// TestTopKeysFilterState: a state filters too, and esc clears it.
func TestTopKeysFilterState(t *testing.T) {
	t.Parallel()
	keys := []tea.KeyMsg{runes("/"), runes("u"), runes("n"), runes("a"), tea.KeyMsg{Type: tea.KeyEnter}}
	m := runKeys(t, 100, 30, keys...)
	if got := m.view.visible(m.snap.Shards); len(got) != 1 || got[0].Key != "shardId-000000000004" {
		t.Errorf("filter %q kept %d shards, want the unassigned one", m.view.filter, len(got))
	}
	m = runKeys(t, 100, 30, append(keys, tea.KeyMsg{Type: tea.KeyEsc})...)
	if len(m.view.visible(m.snap.Shards)) != 5 {
		t.Errorf("esc left filter %q", m.view.filter)
	}
}

// TestTopKeysPause: space pauses (the title says so, no refresh starts),
// a second space resumes.
func TestTopKeysPause(t *testing.T) {
	t.Parallel()
	m := runKeys(t, 100, 30, runes(" "))
	if !m.view.paused {
		t.Fatal("space did not pause")
	}
	checkFrame(t, m, 100, 30)
	if m = runKeys(t, 100, 30, runes(" "), runes(" ")); m.view.paused {
		t.Error("a second space did not resume")
	}
}

func TestTopKeysHelp(t *testing.T) {
	t.Parallel()
	checkFrame(t, runKeys(t, 100, 30, runes("?")), 100, 30)
}

// TestTopQuitKeys: q quits cleanly (exit 0), ctrl-c as an interrupt (130).
func TestTopQuitKeys(t *testing.T) {
	t.Parallel()
	if m := runKeys(t, 80, 24); m.interrupted {
		t.Error("q counted as an interrupt")
	}
	if m := runKeys(t, 80, 24, tea.KeyMsg{Type: tea.KeyCtrlC}); !m.interrupted {
		t.Error("ctrl-c did not count as an interrupt")
	}
}

// TestPlainFrame: what a pipe gets has no escape sequence and no width limit.
func TestPlainFrame(t *testing.T) {
	v := frame{app: "orders", snap: fixedSnapshot()}.render()
	if strings.Contains(v, "\x1b") {
		t.Errorf("escape sequence in a plain frame:\n%q", v)
	}
	if !strings.Contains(v, "cost a refresh: 1 scan (1 page), 2.5 RCU, 13 Kinesis calls\ncost a minute:  7.5 RCU (one KCL 2.x taker: 7.5), 39 Kinesis calls") {
		t.Errorf("no cost line:\n%s", v)
	}
}

// TestTopFindingsBlock: the findings above the table say when doctor's
// window is still filling, when it found nothing to warn of, and why it
// could not judge a refresh; the rest of the frame stays.
func TestTopFindingsBlock(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		set  func(s *top.Snapshot)
		want string
	}{
		{"filling", func(s *top.Snapshot) { s.Doctor = top.DoctorState{Window: 20 * time.Second, Partial: true} },
			"doctor: 20s of reads so far; findings that compare reads come as its window fills"},
		{"quiet", func(s *top.Snapshot) { s.Findings = s.Findings[4:] }, "doctor: no warnings over the last 1m0s"},
		{"failed", func(s *top.Snapshot) { s.Findings, s.Doctor.Err = nil, "read item \"Leader\": AccessDeniedException" },
			"doctor: read item \"Leader\": AccessDeniedException"},
	} {
		s := fixedSnapshot()
		tc.set(s)
		v := frame{app: "orders", snap: s}.render()
		if !strings.Contains(v, tc.want) || !strings.Contains(v, "cost a minute") {
			t.Errorf("%s: frame lacks %q:\n%s", tc.name, tc.want, v)
		}
	}
}

// TestTopColoursSeverities: on a terminal the severities of the findings
// lines and cells are painted; the words stay those of the plain frame.
func TestTopColoursSeverities(t *testing.T) {
	t.Parallel()
	plain := frame{app: "orders", snap: fixedSnapshot(), width: 100, height: 30}.render()
	got := colourSeverities(plain, func(s string) string { return "<R>" + s + "</R>" }, func(s string) string { return "<Y>" + s + "</Y>" })
	for _, want := range []string{"\n<R>critical</R> stuck-shard: ", "\n<Y>warn</Y>     shard-lag: ", "stuck-shard(<R>critical</R>)", "shard-lag(<Y>warn</Y>)"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	if strings.NewReplacer("<R>", "", "</R>", "", "<Y>", "", "</Y>", "").Replace(got) != plain {
		t.Error("colouring changed the words")
	}
}
