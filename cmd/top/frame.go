package top

import (
	"fmt"
	"strings"
	"time"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/inspect/top"
)

// frame is everything one screen shows. It is plain text: the terminal
// view styles its header lines, a pipe gets it as is.
type frame struct {
	app    string
	snap   *top.Snapshot
	err    error // the last refresh's error, shown over the last snapshot
	view   viewState
	width  int // 0: no limit (a pipe)
	height int // 0: no limit
}

// The frame's parts, top to bottom: title, summary, doctor's findings, the
// shard table's header and rows, the workers, the cost line and the key line.
func (f frame) lines() (head, finds, table, tail []string) {
	s := f.snap
	title := "kcltool top · app " + f.app
	if s != nil && s.Stream != "" {
		title += " · stream " + s.Stream
	}
	if s != nil {
		title += fmt.Sprintf(" · %s · every %s · refresh %d", s.At.UTC().Format("15:04:05"), cmdutil.HumanDuration(s.Interval), s.Refresh)
	}
	if f.view.paused {
		title += " · PAUSED"
	}
	head = append(head, title)
	if f.err != nil {
		head = append(head, "error: "+oneLine(f.err.Error()))
	}
	if s == nil {
		head = append(head, "reading the lease table...")
		return head, nil, nil, nil
	}
	sum := fmt.Sprintf("%s · %s · %d unassigned", cmdutil.Plural(s.Leases, "lease"), cmdutil.Plural(len(s.Workers), "worker"), s.Unassigned)
	if s.Malformed > 0 {
		sum += fmt.Sprintf(" · %d malformed", s.Malformed)
	}
	if s.LagSkipped != "" {
		sum += " · lag not read: " + s.LagSkipped
	}
	head = append(head, sum)
	if s.KCL3 != nil {
		leader := s.KCL3.Leader
		if leader == "" {
			leader = "none"
		}
		head = append(head, fmt.Sprintf("KCL 3.x · leader %s · items in %s", leader, s.KCL3.Layout))
	}
	shown := f.view.visible(s.Shards)
	finds = f.findingLines(shown)
	table = f.shardTable(shown)
	tail = append(tail, f.workerLines()...)
	tail = append(tail, costLines(s.Cost)...)
	tail = append(tail, f.keyLine())
	return head, finds, table, tail
}

// render lays the frame out in the height, cutting shard rows first, and
// every line to the width.
func (f frame) render() string {
	if f.view.help {
		return fitLines(helpLines(), f.width, f.height)
	}
	head, finds, table, tail := f.lines()
	if f.height > 0 {
		// The findings give way first, down to one line that counts them,
		// so that the table keeps its header and two rows.
		finds = f.fitFindings(finds, f.height-len(head)-len(tail)-min(len(table), 3))
	}
	head = append(head, finds...)
	if f.height > 0 && len(head)+len(table)+len(tail) > f.height && len(table) > 1 {
		room := max(f.height-len(head)-len(tail)-1, 1) // header row + one "more" line
		if room < len(table) {
			hidden := len(table) - room
			table = append(table[:room:room], fmt.Sprintf("… %d more: / to filter, s to sort", hidden))
		}
	}
	all := append(append(head, table...), tail...)
	return fitLines(all, f.width, 0)
}

// fitLines cuts every line to width and the list to height (0: no limit).
func fitLines(lines []string, width, height int) string {
	if height > 0 && len(lines) > height {
		lines = lines[:height]
	}
	for i, l := range lines {
		lines[i] = cut(l, width)
	}
	return strings.Join(lines, "\n")
}

// cut shortens s to width runes, the last one an ellipsis.
func cut(s string, width int) string {
	r := []rune(s)
	if width <= 0 || len(r) <= width {
		return s
	}
	return string(r[:width-1]) + "…"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// sparkWidth is how many refreshes the sparkline shows.
const sparkWidth = 10

// shardTable is the header row and one row per shard. When the rows are
// wider than the terminal, shard ids are shortened to their number
// (shardId-000000000003 is 3) and findings lose their severity.
func (f frame) shardTable(shards []top.Shard) []string {
	out := f.shardRows(shards, false)
	if f.width > 0 && widest(out) > f.width {
		out = f.shardRows(shards, true)
	}
	return out
}

func (f frame) shardRows(shards []top.Shard, compact bool) []string {
	streams := map[string]bool{}
	for _, sh := range shards {
		if sh.Stream != "" {
			streams[sh.Stream] = true
		}
	}
	rows := [][]string{{"SHARD", "STATE", "OWNER", "REC/S", "LAG", "HISTORY", "CKPT", "FINDINGS"}}
	if len(shards) == 0 {
		rows = append(rows, []string{"(none)"})
	}
	for _, sh := range shards {
		key := sh.Key
		if compact {
			key = trimShardPrefix([]string{key})[0]
		}
		if len(streams) > 1 {
			key = sh.Stream + "/" + key
		}
		if len(sh.Parents) > 0 && sh.State != "drained" {
			key += " ←" + strings.Join(trimShardPrefix(sh.Parents), ",")
		}
		owner := sh.Owner
		if owner == "" {
			owner = "-"
		}
		rows = append(rows, []string{key, sh.State, owner, rateCell(sh), lagCell(sh.Behind), sparkline(sh.History, sparkWidth), ckptCell(sh), findingsCell(sh.Findings, compact)})
	}
	return columns(rows)
}

func widest(lines []string) int {
	w := 0
	for _, l := range lines {
		w = max(w, len([]rune(l)))
	}
	return w
}

// trimShardPrefix writes shard ids as their number: shardId-000000000001
// is 1. Other ids are kept.
func trimShardPrefix(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		if !strings.HasPrefix(id, "shardId-") {
			out[i] = id
			continue
		}
		n := strings.TrimLeft(strings.TrimPrefix(id, "shardId-"), "0")
		if n == "" {
			n = "0"
		}
		out[i] = n
	}
	return out
}

// columns pads every cell to its column's widest, the last column free.
func columns(rows [][]string) []string {
	var w []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(w) {
				w = append(w, 0)
			}
			w[i] = max(w[i], len([]rune(c)))
		}
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		var b strings.Builder
		for j, c := range r {
			if j == len(r)-1 {
				b.WriteString(c)
				break
			}
			b.WriteString(c + strings.Repeat(" ", w[j]-len([]rune(c))+2))
		}
		out[i] = strings.TrimRight(b.String(), " ")
	}
	return out
}

func rateCell(sh top.Shard) string {
	if sh.RecordsPerSec == nil {
		return "-"
	}
	s := formatRate(*sh.RecordsPerSec)
	if sh.RecordsCapped {
		s = "≥" + s
	}
	return s
}

func formatRate(r float64) string {
	if r >= 100 || r == 0 {
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.1f", r)
}

func lagCell(d *time.Duration) string {
	if d == nil {
		return "-"
	}
	return cmdutil.HumanDuration(*d)
}

func ckptCell(sh top.Shard) string {
	s := cmdutil.HumanDuration(sh.SinceCheckpoint)
	if sh.SinceAtLeast {
		s = "≥" + s
	}
	return s
}

func findingsCell(fs []top.Finding, compact bool) string {
	var ids []string
	for _, f := range fs {
		if compact {
			ids = append(ids, f.ID)
		} else {
			ids = append(ids, f.ID+"("+f.Severity.String()+")")
		}
	}
	return strings.Join(ids, " ")
}

// sparkline draws the last n values, scaled to their largest; a refresh
// that measured nothing is a space.
func sparkline(h []float64, n int) string {
	if len(h) > n {
		h = h[len(h)-n:]
	}
	marks := []rune("▁▂▃▄▅▆▇█")
	top := 0.0
	for _, v := range h {
		top = max(top, v)
	}
	var b strings.Builder
	for _, v := range h {
		switch {
		case v < 0:
			b.WriteRune(' ')
		case top == 0:
			b.WriteRune(marks[0])
		default:
			b.WriteRune(marks[int(v/top*float64(len(marks)-1)+0.5)])
		}
	}
	return b.String()
}

// barWidth is the width of the workers' bars.
const barWidth = 12

func bar(frac float64) string {
	n := int(frac*barWidth + 0.5)
	n = min(max(n, 0), barWidth)
	return strings.Repeat("█", n) + strings.Repeat("░", barWidth-n)
}

// workerLines show each worker's share of the leases and its throughput
// as bars, the throughput against the busiest worker's.
func (f frame) workerLines() []string {
	s := f.snap
	if len(s.Workers) == 0 {
		return []string{"WORKERS  none holds a lease"}
	}
	busiest := 0.0
	for _, w := range s.Workers {
		if w.RecordsPerSec != nil {
			busiest = max(busiest, *w.RecordsPerSec)
		}
	}
	rows := [][]string{{"WORKER", "LEASES", "", "REC/S", "", "KCL 3.x"}}
	for _, w := range s.Workers {
		r, rbar := "-", strings.Repeat(" ", barWidth)
		if w.RecordsPerSec != nil {
			r = formatRate(*w.RecordsPerSec)
			if busiest > 0 {
				rbar = bar(*w.RecordsPerSec / busiest)
			} else {
				rbar = bar(0)
			}
		}
		rows = append(rows, []string{w.ID, bar(w.Share), fmt.Sprintf("%d (%.0f%%)", w.Leases, w.Share*100), rbar, r, kcl3Cell(w, s.At)})
	}
	return columns(rows)
}

// kcl3Cell is a worker's leader mark and metrics: its last CPU sample, its
// leases' throughput and the age of its metrics item.
func kcl3Cell(w top.Worker, now time.Time) string {
	var parts []string
	if w.Leader {
		parts = append(parts, "leader")
	}
	if m := w.Metrics; m != nil {
		if n := len(m.CPU); n > 0 {
			if m.CPU[n-1] < 0 {
				parts = append(parts, "cpu ?")
			} else {
				parts = append(parts, fmt.Sprintf("cpu %.0f%%", m.CPU[n-1]))
			}
		}
		if !m.LastUpdate.IsZero() {
			parts = append(parts, "metrics "+cmdutil.HumanDuration(now.Sub(m.LastUpdate))+" old")
		}
	}
	if w.ThroughputKBps != nil {
		parts = append(parts, fmt.Sprintf("%.1f KB/s", *w.ThroughputKBps))
	}
	return strings.Join(parts, " · ")
}

// costLines say what a refresh costs and what that is a minute, against
// one KCL 2.x taker's budget on the same table, and CloudWatch's when
// doctor reads it.
func costLines(c top.Cost) []string {
	out := []string{
		fmt.Sprintf("cost a refresh: %s (%s), %.1f RCU, %s", cmdutil.Plural(c.Scans, "scan"), cmdutil.Plural(c.Pages, "page"), c.ReadUnits, cmdutil.Plural(c.KinesisCalls, "Kinesis call")),
		fmt.Sprintf("cost a minute:  %.1f RCU (one KCL 2.x taker: %.1f), %.0f Kinesis calls", c.ReadUnitsPerMinute, top.TakerUnitsPerMinute(c.ReadUnits), c.KinesisCallsPerMinute),
	}
	if c.CloudWatchCallsPerMinute > 0 {
		out = append(out, fmt.Sprintf("cost CloudWatch: %.1f GetMetricData calls a minute (read at most once a minute)", c.CloudWatchCallsPerMinute))
	}
	return out
}

func (f frame) keyLine() string {
	v := f.view
	dir := "↑"
	if v.desc {
		dir = "↓"
	}
	line := fmt.Sprintf("sort %s%s", sortColumns[v.sortBy], dir)
	if v.filter != "" {
		line += fmt.Sprintf(" · filter %q", v.filter)
	}
	line += " · s/S sort  / filter  space pause  ? help  q quit"
	if v.typing {
		line = "filter (shard, worker or state; enter applies, esc clears): " + v.input + "▏"
	}
	return line
}

func helpLines() []string {
	return []string{
		"kcltool top: keys",
		"",
		"  s        sort by the next column: shard, state, owner, rec/s, lag, checkpoint",
		"  S        reverse the sort",
		"  /        filter: type part of a shard id, a worker or a state; enter applies, esc clears",
		"  esc      clear the filter",
		"  space    pause: stop refreshing (no reads) until pressed again",
		"  r        refresh now",
		"  ?        this help; any other key returns",
		"  q        quit (exit 0); ctrl-c quits with exit 130",
		"",
		"Columns are described in docs/top.md.",
	}
}
