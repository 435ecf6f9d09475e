package top

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/inspect/doctor"
	"github.com/kcltool/kcltool/inspect/top"
)

// maxFindingLines bounds the warnings listed above the shard table, so that
// a bad day leaves room for the shards; the rest are counted and left to
// doctor.
const maxFindingLines = 4

// findingLines are doctor's findings over the view's window, worst first:
// one line per warning or worse (its shards also carry it in their row),
// the info ones by id on one line, then how full the window is. An
// on-call reader sees a dead worker or a throttled table here even when
// no shard row names it. Under a filter, only the findings about the
// shards shown, about a worker the filter names, or about the whole fleet.
func (f frame) findingLines(shown []top.Shard) []string {
	s := f.snap
	if s.Doctor.Err != "" {
		return []string{"doctor: " + oneLine(s.Doctor.Err)}
	}
	var out, info []string
	serious := 0
	for _, fd := range f.relevant(shown) {
		if fd.Severity < doctor.SeverityWarn {
			if !slices.Contains(info, fd.ID) {
				info = append(info, fd.ID)
			}
			continue
		}
		serious++
		if serious <= maxFindingLines {
			out = append(out, fmt.Sprintf("%-8s %s: %s", fd.Severity, fd.ID, oneLine(fd.Summary)))
		}
	}
	if more := serious - maxFindingLines; more > 0 {
		out = append(out, fmt.Sprintf("… %d more: kcltool doctor shows them with causes and fixes", more))
	}
	if len(info) > 0 {
		out = append(out, fmt.Sprintf("%-8s %s", doctor.SeverityInfo, strings.Join(info, ", ")))
	}
	window := cmdutil.HumanDuration(s.Doctor.Window)
	switch {
	case s.Doctor.Partial:
		out = append(out, "doctor: "+window+" of reads so far; findings that compare reads come as its window fills")
	case serious == 0:
		out = append(out, "doctor: no warnings over the last "+window)
	}
	return out
}

// relevant are the findings the filter keeps.
func (f frame) relevant(shown []top.Shard) []top.Finding {
	filter := strings.ToLower(f.view.filter)
	if filter == "" {
		return f.snap.Findings
	}
	var out []top.Finding
	for _, fd := range f.snap.Findings {
		keep := len(fd.Shards) == 0 && len(fd.Workers) == 0
		for _, w := range fd.Workers {
			keep = keep || strings.Contains(strings.ToLower(w), filter)
		}
		for _, sh := range shown {
			keep = keep || slices.Contains(fd.Shards, sh.Key)
		}
		if keep {
			out = append(out, fd)
		}
	}
	return out
}

// fitFindings cuts the finding lines to room, the last kept line counting
// what was cut by severity: on a short terminal the shards keep their rows
// and a critical finding still shows as a count.
func (f frame) fitFindings(lines []string, room int) []string {
	if len(lines) <= room {
		return lines
	}
	count := map[doctor.Severity]int{}
	for _, fd := range f.snap.Findings {
		count[fd.Severity]++
	}
	var parts []string
	for _, sev := range []doctor.Severity{doctor.SeverityCritical, doctor.SeverityWarn, doctor.SeverityInfo} {
		if count[sev] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", count[sev], sev))
		}
	}
	sum := "findings: " + strings.Join(parts, ", ") + " (a taller terminal lists them)"
	keep := max(room-1, 0)
	return append(lines[:keep:keep], sum)
}
