package checkpoint

import (
	"io"
	"strconv"
	"time"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reset"
)

// ChangeJSON is the documented JSON shape of one plan row (docs/json.md;
// the key list is jsonSchemas["checkpoint reset"]). Every key is always
// present: before is null for a lease that does not exist yet, after for
// one that is deleted or skipped; leaseOwner, checkpointOwner and
// leaseCounter are null when the lease has none; result and detail are null
// until the plan is applied; confirmedBy is "read-back" for a write a read
// of the lease confirmed after its answer was lost. Fields may be added,
// never renamed.
type ChangeJSON struct {
	LeaseKey        string            `json:"leaseKey"`
	ShardID         string            `json:"shardId"`
	Action          string            `json:"action"`
	Before          *positionJSON     `json:"before"`
	After           *positionJSON     `json:"after"`
	Reason          string            `json:"reason"`
	LeaseOwner      cmdutil.OptString `json:"leaseOwner"`
	CheckpointOwner cmdutil.OptString `json:"checkpointOwner"`
	LeaseCounter    *int64            `json:"leaseCounter"`
	Result          cmdutil.OptString `json:"result"`
	Detail          cmdutil.OptString `json:"detail"`
	ConfirmedBy     cmdutil.OptString `json:"confirmedBy"`
}

type positionJSON struct {
	Checkpoint        string `json:"checkpoint"`
	SubSequenceNumber int64  `json:"subSequenceNumber"`
}

func toPositionJSON(n *leasecore.SequenceNumber) *positionJSON {
	if n == nil {
		return nil
	}
	return &positionJSON{Checkpoint: n.SequenceNumber, SubSequenceNumber: n.SubSequenceNumber}
}

func toChangeJSON(c reset.Change, r *reset.Result) ChangeJSON {
	j := ChangeJSON{LeaseKey: c.LeaseKey, ShardID: c.ShardID, Action: string(c.Action), Before: toPositionJSON(c.Before),
		After: toPositionJSON(c.After), Reason: c.Reason, LeaseOwner: cmdutil.OptString(c.Lease.LeaseOwner), CheckpointOwner: cmdutil.OptString(c.Lease.CheckpointOwner)}
	if c.Current != nil {
		n := c.Lease.LeaseCounter
		j.LeaseCounter = &n
	}
	if r != nil {
		j.Result, j.Detail, j.ConfirmedBy = cmdutil.OptString(r.Outcome), cmdutil.OptString(r.Detail), cmdutil.OptString(r.ConfirmedBy)
	}
	return j
}

func planRows(plan *reset.Plan, x *reset.Execution) []ChangeJSON {
	out := make([]ChangeJSON, 0, len(plan.Changes))
	for i, c := range plan.Changes {
		var r *reset.Result
		if x != nil {
			r = &x.Results[i]
		}
		out = append(out, toChangeJSON(c, r))
	}
	return out
}

// PlanFileJSON is what --execute saves next to the backup. Writes and
// Undo say what the command changes and how to put exactly that back.
type PlanFileJSON struct {
	Kind     string            `json:"kind"`
	Table    string            `json:"table"`
	Target   string            `json:"target"`
	ReadAt   string            `json:"readAt"`
	Warnings []string          `json:"warnings"`
	Writes   []string          `json:"writes"`
	Undo     cmdutil.OptString `json:"undo"`
	Changes  []ChangeJSON      `json:"changes"`
}

// writePlanFile writes the plan file: writes are the keys of the leases
// about to be written, undo the command that restores them.
func writePlanFile(w io.Writer, plan *reset.Plan, writes []string, undo string) error {
	warnings := plan.Warnings
	if warnings == nil {
		warnings = []string{}
	}
	return cmdutil.WriteJSON(w, PlanFileJSON{Kind: plan.Kind, Table: plan.Table, Target: plan.Target,
		ReadAt: plan.ReadAt.UTC().Format(time.RFC3339Nano), Warnings: warnings, Writes: cmdutil.OrEmpty(writes), Undo: cmdutil.OptString(undo), Changes: planRows(plan, nil)})
}

var PlanCSVColumns = []string{"leaseKey", "shardId", "action", "before", "beforeSubSequenceNumber", "after", "afterSubSequenceNumber", "reason", "result", "detail", "leaseOwner", "confirmedBy"}

// renderPlan prints a plan, with each change's result once x is given.
func renderPlan(io *cmdutil.IOStreams, format string, plan *reset.Plan, x *reset.Execution) error {
	rows := planRows(plan, x)
	return cmdutil.NewPrinter(io, format).Print(cmdutil.Output{
		Items: func() any { return rows },
		CSV:   PlanCSVColumns,
		Rows: func() [][]string {
			var out [][]string
			for _, r := range rows {
				b, bs := positionCells(r.Before)
				a, as := positionCells(r.After)
				out = append(out, []string{r.LeaseKey, r.ShardID, r.Action, b, bs, a, as, r.Reason, string(r.Result), string(r.Detail), string(r.LeaseOwner), string(r.ConfirmedBy)})
			}
			return out
		},
		Text: func(p *cmdutil.Printer) error { return planTable(p, rows, x != nil) },
	})
}

func planTable(p *cmdutil.Printer, rows []ChangeJSON, executed bool) error {
	// OWNER is in the default table too: a plan that changes held leases
	// should show by whom before anyone adds --execute.
	header := []string{"LEASE", "OWNER", "BEFORE", "AFTER", "ACTION", "REASON"}
	if p.Wide() {
		header = []string{"LEASE", "OWNER", "COUNTER", "BEFORE", "AFTER", "ACTION", "REASON"}
	}
	if executed {
		header = append(header, "RESULT")
	}
	var out [][]string
	for _, r := range rows {
		row := []string{r.LeaseKey, string(r.LeaseOwner), positionText(r.Before, p.Fit()), positionText(r.After, p.Fit()), r.Action, r.Reason}
		if p.Wide() {
			counter := ""
			if r.LeaseCounter != nil {
				counter = strconv.FormatInt(*r.LeaseCounter, 10)
			}
			row = []string{r.LeaseKey, string(r.LeaseOwner), counter, row[2], row[3], row[4], row[5]}
		}
		if executed {
			res := string(r.Result)
			if r.ConfirmedBy != "" {
				res += " (confirmed by " + string(r.ConfirmedBy) + ")"
			}
			if r.Detail != "" && res != string(reset.OutcomeUnchanged) {
				res += ": " + string(r.Detail)
			}
			row = append(row, res)
		}
		out = append(out, row)
	}
	return p.Table(header, out)
}

func positionCells(p *positionJSON) (string, string) {
	if p == nil {
		return "", ""
	}
	return p.Checkpoint, strconv.FormatInt(p.SubSequenceNumber, 10)
}

// positionText shows a checkpoint in a table cell, with "/sub" when the
// sub-sequence number is not 0.
func positionText(p *positionJSON, short bool) string {
	if p == nil {
		return ""
	}
	s := cmdutil.Shorten(p.Checkpoint, short)
	if p.SubSequenceNumber != 0 {
		s += "/" + strconv.FormatInt(p.SubSequenceNumber, 10)
	}
	return s
}
