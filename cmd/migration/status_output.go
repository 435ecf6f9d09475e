package migration

import (
	"fmt"
	"strings"
	"time"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/inspect"
)

// StatusJSON is `migration status -o json`, with the KCL's attribute names
// (cv, mb, mts, tm) where it has them; cmd/json_schema.go documents it.
type StatusJSON struct {
	Table                 string        `json:"table"`
	CoordinatorStateTable string        `json:"coordinatorStateTable"`
	WorkerMetricsTable    string        `json:"workerMetricsTable"`
	KCL                   string        `json:"kcl"`
	Layout                string        `json:"layout"`
	CV                    *string       `json:"cv"`
	MB                    *string       `json:"mb"`
	MTS                   *string       `json:"mts"`
	H                     []HistoryJSON `json:"h"`
	TM                    *string       `json:"tm"`
	TMMTS                 *string       `json:"tmMts"`
	Index                 *string       `json:"index"`
	Leases                int           `json:"leases"`
	Unassigned            int           `json:"unassigned"`
	Owners                []string      `json:"owners"`
	FreshWorkers          []string      `json:"freshWorkers"`
	Next                  *string       `json:"next"`
	Checks                []CheckJSON   `json:"checks"`
	Steps                 []StepJSON    `json:"steps"`
	Blocked               bool          `json:"blocked"`
}

// HistoryJSON is one entry of cv's history (the item's h).
type HistoryJSON struct {
	CV  string  `json:"cv"`
	MB  string  `json:"mb"`
	MTS *string `json:"mts"`
}

type CheckJSON struct {
	Check  string `json:"check"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

type StepJSON struct {
	Step           string   `json:"step"`
	By             string   `json:"by"`
	Note           string   `json:"note"`
	Blockers       []string `json:"blockers"`
	Workers        []string `json:"workers"`
	WaitLeftMillis *int64   `json:"waitLeftMillis"`
	Overdue        bool     `json:"overdue"`
}

// kclOf names the fleet's KCL mode in a word.
func kclOf(c coordination.State) string {
	switch {
	case c.Layout == coordination.LayoutNone:
		return "2.x"
	case c.ClientVersion == coordination.ClientVersion2X:
		return "3.x rolled back to 2.x"
	case c.ClientVersion == coordination.ClientVersionUpgradeFrom2X:
		return "3.x upgrading from 2.x"
	}
	return "3.x"
}

// nextOf is the next step in a line: the first pending step, or for a
// KCL 2.x table the operator's start.
func nextOf(st *inspect.MigrationStatus) string {
	if len(st.Steps) > 0 {
		return st.Steps[0].Name
	}
	c := st.Facts.Coord
	if c.Layout == coordination.LayoutNone || c.ClientVersion == coordination.ClientVersion2X {
		return "start: `kcltool migration start` (what deploying KCL 3.x with clientVersionConfig COMPATIBLE_WITH_2X does)"
	}
	return ""
}

func strOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func timeOrNil(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	return strOrNil(t.UTC().Format(time.RFC3339))
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func toJSON(st *inspect.MigrationStatus) StatusJSON {
	c, t := st.Facts.Coord, st.Facts.Tables
	out := StatusJSON{Table: t.Lease, CoordinatorStateTable: t.CoordinatorState, WorkerMetricsTable: t.WorkerMetrics,
		KCL: kclOf(c), Layout: c.Layout.Token(),
		CV: strOrNil(c.ClientVersion), MB: strOrNil(c.ClientVersionBy), MTS: timeOrNil(c.ClientVersionAt),
		TM: strOrNil(c.TableMigration), TMMTS: timeOrNil(st.Facts.TMAt), Index: strOrNil(c.Index),
		Leases: st.Leases, Unassigned: st.Unassigned, Owners: orEmpty(st.Owners), FreshWorkers: orEmpty(st.Fresh),
		Next: strOrNil(nextOf(st)), Checks: []CheckJSON{}, Steps: []StepJSON{}, Blocked: st.Blocked(), H: []HistoryJSON{}}
	for _, h := range c.ClientVersionHistory {
		out.H = append(out.H, HistoryJSON{h.ClientVersion, h.By, timeOrNil(h.At)})
	}
	for _, ch := range st.Checks {
		out.Checks = append(out.Checks, CheckJSON{ch.Name, ch.OK, ch.Detail})
	}
	for _, s := range st.Steps {
		j := StepJSON{Step: s.Name, By: "leader", Note: s.Note, Blockers: orEmpty(s.Blockers), Workers: orEmpty(s.Workers), Overdue: s.Overdue}
		if s.OperatorStep {
			j.By = "operator"
		}
		if s.WaitLeft > 0 {
			ms := s.WaitLeft.Milliseconds()
			j.WaitLeftMillis = &ms
		}
		out.Steps = append(out.Steps, j)
	}
	return out
}

// CSVColumns is -o csv's header: one row per step (one row with the next
// step when none is pending).
var CSVColumns = []string{"table", "kcl", "cv", "tm", "index", "step", "by", "blockers", "workers", "waitLeftMillis"}

func printStatus(p *cmdutil.Printer, st *inspect.MigrationStatus) error {
	return p.Print(cmdutil.Output{
		Doc: func() any { return toJSON(st) },
		CSV: CSVColumns,
		Rows: func() [][]string {
			j := toJSON(st)
			base := []string{j.Table, j.KCL, deref(j.CV), deref(j.TM), deref(j.Index)}
			if len(j.Steps) == 0 {
				return [][]string{append(base, deref(j.Next), "", "", "", "")}
			}
			var rows [][]string
			for _, s := range j.Steps {
				left := ""
				if s.WaitLeftMillis != nil {
					left = fmt.Sprint(*s.WaitLeftMillis)
				}
				rows = append(rows, append(append([]string{}, base...), s.Step, s.By, strings.Join(s.Blockers, "; "), strings.Join(s.Workers, " "), left))
			}
			return rows
		},
		Text: func(p *cmdutil.Printer) error { return printText(p, st) },
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func none(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func printText(p *cmdutil.Printer, st *inspect.MigrationStatus) error {
	c := st.Facts.Coord
	now := st.Facts.Now
	cv := none(c.ClientVersion)
	if !c.ClientVersionAt.IsZero() {
		cv += fmt.Sprintf(" (written by %s %s ago)", none(c.ClientVersionBy), now.Sub(c.ClientVersionAt).Round(time.Second))
	}
	tm := none(c.TableMigration)
	if !st.Facts.TMAt.IsZero() {
		tm += fmt.Sprintf(" (written %s ago)", now.Sub(st.Facts.TMAt).Round(time.Second))
	}
	rows := [][]string{
		{"KCL", kclOf(c)},
		{"cv (Migration3.0)", cv},
		{"tm (TableMigration3.5)", tm},
		{"index", none(c.Index)},
		{"layout", c.Layout.String()},
		{"leases", fmt.Sprintf("%d (%d unassigned), %s with fresh metrics of %s", st.Leases, st.Unassigned, cmdutil.Plural(len(st.Fresh), "worker"), cmdutil.Plural(len(st.Owners), "owner"))},
	}
	if p.Wide() {
		for _, h := range c.ClientVersionHistory {
			rows = append(rows, []string{"cv before", fmt.Sprintf("%s (written by %s at %s)", h.ClientVersion, none(h.By), h.At.UTC().Format(time.RFC3339))})
		}
		t := st.Facts.Tables
		rows = append(rows, []string{"tables", fmt.Sprintf("%s, %s (%s), %s (%s)", t.Lease, t.CoordinatorState, c.CoordinatorStateTable, t.WorkerMetrics, c.WorkerMetricsTable)})
	}
	if err := p.Table([]string{"FIELD", "VALUE"}, rows); err != nil {
		return err
	}
	if len(st.Checks) > 0 {
		p.Blank()
		var cr [][]string
		for _, ch := range st.Checks {
			mark := "ok"
			if !ch.OK {
				mark = "BLOCKS"
			}
			cr = append(cr, []string{ch.Name, mark, ch.Detail})
		}
		if err := p.Table([]string{"CHECK", "RESULT", "DETAIL"}, cr); err != nil {
			return err
		}
	}
	p.Blank()
	if len(st.Steps) == 0 {
		if n := nextOf(st); n != "" {
			p.Println("next: " + n)
		} else {
			p.Println("nothing pending: cv and tm are final")
		}
		return nil
	}
	for _, s := range st.Steps {
		by := "the leader"
		if s.OperatorStep {
			by = "the operator"
		}
		line := fmt.Sprintf("next: %s (by %s); %s", s.Name, by, s.Note)
		if s.WaitLeft > 0 {
			line += fmt.Sprintf("; %s left of the KCL's wait", s.WaitLeft.Round(time.Second))
		}
		p.Println(line)
		for _, b := range s.Blockers {
			p.Println("  blocked by " + b)
		}
		if len(s.Blockers) == 0 {
			p.Println("  nothing blocks it")
		}
	}
	return nil
}
