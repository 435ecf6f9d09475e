package migration

import (
	"fmt"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/inspect"
)

// PlanJSON is `migration start | rollback | finalize -o json`: the plan
// and, with --execute, what was done; cmd/json_schema.go documents it.
type PlanJSON struct {
	Command               string      `json:"command"`
	Table                 string      `json:"table"`
	CoordinatorStateTable string      `json:"coordinatorStateTable"`
	WorkerMetricsTable    string      `json:"workerMetricsTable"`
	Layout                string      `json:"layout"`
	CV                    *string     `json:"cv"`
	Index                 *string     `json:"index"`
	Execute               bool        `json:"execute"`
	After                 *AfterJSON  `json:"after"`
	Steps                 []WriteJSON `json:"steps"`
	Checks                []CheckJSON `json:"checks"`
	Blockers              []string    `json:"blockers"`
	Blocked               bool        `json:"blocked"`
	Done                  *string     `json:"nothingToDo"`
	Next                  *string     `json:"next"`
}

// AfterJSON is the application read again after --execute's writes.
type AfterJSON struct {
	CV    *string `json:"cv"`
	Index *string `json:"index"`
}

// WriteJSON is one step of the plan.
type WriteJSON struct {
	Action string `json:"action"`
	// Table is the table written (empty for a wait).
	Table string `json:"table"`
	// From and To are cv's values for a cv write.
	From       *string `json:"from"`
	To         *string `json:"to"`
	WaitMillis *int64  `json:"waitMillis"`
	Detail     string  `json:"detail"`
	// Done: applied by this run (--execute).
	Done bool `json:"done"`
}

func planJSON(p *inspect.MigrationPlan, execute bool, done []bool) PlanJSON {
	c, t := p.Status.Facts.Coord, p.Status.Facts.Tables
	out := PlanJSON{Command: p.Command, Table: t.Lease, CoordinatorStateTable: t.CoordinatorState, WorkerMetricsTable: t.WorkerMetrics,
		Layout: c.Layout.Token(), CV: strOrNil(c.ClientVersion), Index: strOrNil(c.Index), Execute: execute,
		Steps: []WriteJSON{}, Checks: []CheckJSON{}, Blockers: orEmpty(p.Blockers), Blocked: p.Blocked(),
		Done: strOrNil(p.Done), Next: strOrNil(p.Next)}
	if p.After != nil {
		out.After = &AfterJSON{CV: strOrNil(p.After.Facts.Coord.ClientVersion), Index: strOrNil(p.After.Facts.Coord.Index)}
	}
	for i, w := range p.Writes {
		j := WriteJSON{Action: string(w.Action), Table: w.Table, From: strOrNil(w.From), To: strOrNil(w.To), Detail: w.Detail, Done: done[i]}
		if w.Wait > 0 {
			ms := w.Wait.Milliseconds()
			j.WaitMillis = &ms
		}
		out.Steps = append(out.Steps, j)
	}
	for _, ch := range p.Checks {
		out.Checks = append(out.Checks, CheckJSON{ch.Name, ch.OK, ch.Detail})
	}
	return out
}

func printPlan(pr *cmdutil.Printer, p *inspect.MigrationPlan, execute bool, done []bool) error {
	return pr.Print(cmdutil.Output{
		Doc:  func() any { return planJSON(p, execute, done) },
		Text: func(pr *cmdutil.Printer) error { return planText(pr, p, execute, done) },
	})
}

func planText(pr *cmdutil.Printer, p *inspect.MigrationPlan, execute bool, done []bool) error {
	c := p.Status.Facts.Coord
	pr.Println(fmt.Sprintf("migration %s: %s (cv %s, index %s, layout %s)", p.Command, p.Status.Facts.Tables.Lease, none(c.ClientVersion), none(c.Index), c.Layout))
	if len(p.Writes) > 0 {
		pr.Blank()
		rows := make([][]string, len(p.Writes))
		for i, w := range p.Writes {
			state := "planned"
			switch {
			case done[i]:
				state = "done"
			case execute && p.Blocked():
				state = "not done (blocked)"
			case execute:
				state = "not done"
			}
			rows[i] = []string{fmt.Sprint(i + 1), string(w.Action), w.Detail, state}
		}
		if err := pr.Table([]string{"STEP", "ACTION", "WHAT", "STATE"}, rows); err != nil {
			return err
		}
	}
	if p.After != nil {
		a := p.After.Facts.Coord
		pr.Blank()
		pr.Println(fmt.Sprintf("after: cv %s, index %s", none(a.ClientVersion), none(a.Index)))
	}
	if len(p.Checks) > 0 {
		pr.Blank()
		var rows [][]string
		for _, ch := range p.Checks {
			mark := "ok"
			if !ch.OK {
				mark = "BLOCKS"
			}
			rows = append(rows, []string{ch.Name, mark, ch.Detail})
		}
		if err := pr.Table([]string{"CHECK (the leader's flip to 3X_WITH_ROLLBACK)", "RESULT", "DETAIL"}, rows); err != nil {
			return err
		}
	}
	pr.Blank()
	for _, b := range p.Blockers {
		pr.Println("blocked by " + b)
	}
	if p.Done != "" {
		pr.Println("nothing to do: " + p.Done)
	}
	if p.Next != "" {
		pr.Println("next: " + p.Next)
	}
	return nil
}
