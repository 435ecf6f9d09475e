package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kcltool/kcltool/reset"
)

// finishPlan prints a plan's warnings and either the plan (dry run) or,
// with --execute, applies it and prints the results.
func finishPlan(cmd *cobra.Command, f *Factory, plan *reset.Plan, a *applyFlags, undo string) error {
	for _, w := range plan.Warnings {
		fmt.Fprintf(f.IO.ErrOut, "kcltool: warning: %s\n", w)
	}
	counts := plan.Counts()
	writes := counts[reset.ActionUpdate] + counts[reset.ActionCreate] + counts[reset.ActionRestore] + counts[reset.ActionDelete]
	if !a.Execute || writes == 0 {
		if err := renderPlan(f.IO, a.Output, plan, nil); err != nil {
			return err
		}
		switch {
		case writes == 0:
			fmt.Fprintf(f.IO.ErrOut, "kcltool: nothing to write: every lease is already there\n")
		default:
			fmt.Fprintf(f.IO.ErrOut, "kcltool: dry run: %s; nothing written. Add --execute to apply it\n", planSummary(counts))
		}
		return nil
	}
	return executePlan(cmd, f, plan, a, undo)
}

func executePlan(cmd *cobra.Command, f *Factory, plan *reset.Plan, a *applyFlags, undo string) error {
	ctx := cmd.Context()
	ddb, err := f.DynamoDB(ctx)
	if err != nil {
		return err
	}
	if a.Sample > 0 {
		fmt.Fprintf(f.IO.ErrOut, "kcltool: checking that the application is stopped: no lease counter may move for %s...\n", a.Sample)
	}
	x, err := reset.Execute(ctx, ddb, plan, reset.ExecOptions{
		Sample: a.Sample, Force: a.Force, Clock: f.Clock,
		Backup: func(e *reset.Export) error { return saveBackup(f, plan, e, a.BackupDir, undo) },
	})
	var refused *reset.RefusedError
	if errors.As(err, &refused) {
		if rerr := renderPlan(f.IO, a.Output, plan, nil); rerr != nil {
			return rerr
		}
		return &ExitError{Code: ExitProblems, Err: fmt.Errorf("not applied, nothing written: %w", err)}
	}
	if err != nil {
		return explainAWS(err, f.awsContext(plan.Table, ""))
	}
	if a.Force && x.Live.Live() {
		// Named even though --force goes on: they are the ones that lose leases.
		fmt.Fprintf(f.IO.ErrOut, "kcltool: --force: the application was running (%s); the holders of the reset leases lose them\n", workersText(x.Live))
	}
	if err := renderPlan(f.IO, a.Output, plan, x); err != nil {
		return err
	}
	applied, skipped, failed := x.Count(reset.OutcomeApplied), x.Count(reset.OutcomeSkipped), x.Count(reset.OutcomeFailed)
	fmt.Fprintf(f.IO.ErrOut, "kcltool: applied %d, skipped %d (changed since the plan), failed %d, not attempted %d\n",
		applied, skipped, failed, x.Count(reset.OutcomeNotRun))
	switch {
	case failed > 0:
		return fmt.Errorf("%s failed; the rest were not attempted (see the result of each lease)", plural(failed, "write"))
	case skipped > 0:
		return &ExitError{Code: ExitProblems, Err: fmt.Errorf("%s changed since the plan and not written: plan again to include them", plural(skipped, "lease"))}
	}
	return nil
}

func workersText(l reset.Liveness) string {
	if len(l.Workers) == 0 {
		return fmt.Sprintf("%d lease counters moved", len(l.Moved))
	}
	return "workers " + strings.Join(l.Workers, ", ")
}

func planSummary(counts map[reset.Action]int) string {
	var parts []string
	for _, a := range []reset.Action{reset.ActionUpdate, reset.ActionCreate, reset.ActionRestore, reset.ActionDelete, reset.ActionNone, reset.ActionSkip} {
		if n := counts[a]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, a))
		}
	}
	return strings.Join(parts, ", ")
}

// saveBackup writes the plan and the backup of the whole table into dir,
// each atomically, before the first write, and says how to undo.
func saveBackup(f *Factory, plan *reset.Plan, e *reset.Export, dir, undo string) error {
	base := filepath.Join(dir, fmt.Sprintf("kcltool-%s-%s-%s", plan.Kind, safeName(plan.Table), e.ExportedAt.UTC().Format("20060102T150405.000Z")))
	var pb bytes.Buffer
	if err := writePlanFile(&pb, plan); err != nil {
		return err
	}
	if err := writeFileAtomic(base+".plan.json", pb.Bytes()); err != nil {
		return err
	}
	var bb bytes.Buffer
	if err := e.WriteJSON(&bb); err != nil {
		return err
	}
	if err := writeFileAtomic(base+".backup.json", bb.Bytes()); err != nil {
		return err
	}
	l, n, m := e.Counts()
	fmt.Fprintf(f.IO.ErrOut, "kcltool: plan saved to %s\n", base+".plan.json")
	fmt.Fprintf(f.IO.ErrOut, "kcltool: backup of table %q (%d leases, %d non-lease items, %d malformed) saved to %s\n", plan.Table, l, n, m, base+".backup.json")
	prune := ""
	if plan.Creates() {
		prune = " --prune"
	}
	fmt.Fprintf(f.IO.ErrOut, "kcltool: undo with: %s --file %s%s --execute\n", undo, shellQuote(base+".backup.json"), prune)
	return nil
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ' ' || r == ':' {
			return '_'
		}
		return r
	}, s)
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=+@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
