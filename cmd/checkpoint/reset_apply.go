package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/reset"
	"github.com/kcltool/kcltool/reset/backupstore"
)

// finishPlan prints a plan's warnings and either the plan (dry run) or,
// with --execute, applies it and prints the results. dest names the table
// written to, for the commands it prints.
func finishPlan(cmd *cobra.Command, f *cmdutil.Factory, plan *reset.Plan, a *applyFlags, dest cmdutil.AppFlags) error {
	for _, w := range plan.Warnings {
		fmt.Fprintf(f.IO.ErrOut, "kcltool: warning: %s\n", w)
	}
	if !a.Execute {
		warnOwners(f, plan, dest)
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
		return skippedEntries(plan)
	}
	return executePlan(cmd, f, plan, a, dest)
}

// skippedEntries is the problem (exit 3) of a plan that skipped entries of
// its file (--skip-invalid): the rest was applied, these were not.
func skippedEntries(plan *reset.Plan) error {
	if len(plan.Invalid) == 0 {
		return nil
	}
	return &cmdutil.ExitError{Code: cmdutil.ExitProblems, Err: errors.New(plan.SkippedText())}
}

// warnOwners says in the dry run that leases to change are held: an
// application that is plainly running should not take an --execute and its
// sample to find out. An owner alone does not prove a running worker (a
// stopped KCL worker leaves its name on its leases), so this only warns;
// --execute decides by sampling the counters, and names the live workers.
func warnOwners(f *cmdutil.Factory, plan *reset.Plan, dest cmdutil.AppFlags) {
	n, seen := 0, map[string]bool{}
	var owners []string
	for _, c := range plan.Changes {
		if !c.Action.Writes() || c.Lease.LeaseOwner == "" {
			continue
		}
		n++
		if !seen[c.Lease.LeaseOwner] {
			seen[c.Lease.LeaseOwner] = true
			owners = append(owners, c.Lease.LeaseOwner)
		}
	}
	if n == 0 {
		return
	}
	sort.Strings(owners)
	if len(owners) > 5 {
		owners = append(owners[:5], fmt.Sprintf("and %d more", len(owners)-5))
	}
	verb := "are"
	if n == 1 {
		verb = "is"
	}
	fmt.Fprintf(f.IO.ErrOut, "kcltool: warning: %s to change %s held by %s: if the application is running, --execute refuses (stop it first, or --force)\n",
		cmdutil.Plural(n, "lease"), verb, strings.Join(owners, ", "))
	fmt.Fprintf(f.IO.ErrOut, "kcltool: hint: see whether the owners renew: kcltool leases ls %s --sample\n", cmdutil.TableArgs(f, dest))
}

func executePlan(cmd *cobra.Command, f *cmdutil.Factory, plan *reset.Plan, a *applyFlags, dest cmdutil.AppFlags) error {
	ctx := cmd.Context()
	store, err := backupStore(ctx, f, a.BackupDir, true)
	if err != nil {
		return err
	}
	ddb, err := f.DynamoDB(ctx)
	if err != nil {
		return err
	}
	if a.Sample > 0 {
		fmt.Fprintf(f.IO.ErrOut, "kcltool: checking that the application is stopped: no lease counter may move for %s...\n", a.Sample)
	}
	p := cmdutil.NewProgress(f)
	var backup string // the backup file, once saved
	var writes []string
	x, err := reset.Execute(ctx, ddb, plan, reset.ExecOptions{
		Sample: a.Sample, Force: a.Force, Clock: f.Clock,
		Backup: func(e *reset.Export, w []string) (err error) {
			writes = w
			backup, err = saveBackup(ctx, f, plan, e, store, undoCommand(f, dest), w)
			return err
		},
		Progress: p.Counter("wrote", "leases"),
	})
	p.Done()
	var saveErr *backupSaveError
	if errors.As(err, &saveErr) {
		// Not ExplainAWS: an S3 error here is about the backup's bucket,
		// not the lease table, and the message must say nothing was written.
		return backupStoreError(f, saveErr.store, "upload", saveErr.err)
	}
	var refused *reset.RefusedError
	if errors.As(err, &refused) {
		if rerr := renderPlan(f.IO, a.Output, plan, nil); rerr != nil {
			return rerr
		}
		return &cmdutil.ExitError{Code: cmdutil.ExitProblems, Err: fmt.Errorf("not applied, nothing written: %w", forceRefusal{refused})}
	}
	if err != nil {
		return cmdutil.ExplainAWS(err, f.AWSContext(plan.Table, ""))
	}
	if a.Force && x.Live.Live() {
		// Named even though --force goes on: they are the ones that lose leases.
		fmt.Fprintf(f.IO.ErrOut, "kcltool: --force: the application was running (%s); the holders of the reset leases lose them\n", workersText(x.Live))
	}
	if err := renderPlan(f.IO, a.Output, plan, x); err != nil {
		return err
	}
	applied, skipped, failed := x.Count(reset.OutcomeApplied), x.Count(reset.OutcomeSkipped), x.Count(reset.OutcomeFailed)
	confirmed := ""
	if n := x.ConfirmedByReadBack(); n > 0 {
		confirmed = fmt.Sprintf(" (%d confirmed by a read-back: their answer was lost)", n)
	}
	fmt.Fprintf(f.IO.ErrOut, "kcltool: applied %d%s, skipped %d (changed since the plan), failed %d, not attempted %d\n",
		applied, confirmed, skipped, failed, x.Count(reset.OutcomeNotRun))
	// The undo printed before the writes names leases that were then
	// skipped or not attempted: restoring those would undo somebody else's
	// progress, not this command's.
	switch written := x.Written(plan); {
	case len(written) == len(writes):
	case len(written) == 0:
		fmt.Fprintf(f.IO.ErrOut, "kcltool: none of the %d leases planned was written: nothing to undo\n", len(writes))
	default:
		fmt.Fprintf(f.IO.ErrOut, "kcltool: %d of the %d leases planned were written; undo only them with: %s\n",
			len(written), len(writes), UndoImport(undoCommand(f, dest), backup, plan, written))
	}
	switch {
	case failed > 0:
		return fmt.Errorf("%s failed; the rest were not attempted (see the result of each lease)", cmdutil.Plural(failed, "write"))
	case skipped > 0:
		return &cmdutil.ExitError{Code: cmdutil.ExitProblems, Err: fmt.Errorf("%s changed since the plan and not written: plan again to include them", cmdutil.Plural(skipped, "lease"))}
	}
	return skippedEntries(plan)
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

// saveBackup saves the plan and the backup of the whole table into the
// store, each whole or not at all (a file renamed into place, an S3 object
// uploaded in one PutObject), before the first write, and says how to
// undo: an import of the backup limited to writes, the leases about to be
// written. It returns the backup's path. A store that fails stops the
// command before any write (reset.ExecOptions.Backup).
func saveBackup(ctx context.Context, f *cmdutil.Factory, plan *reset.Plan, e *reset.Export, store backupstore.Store, undo string, writes []string) (string, error) {
	base := fmt.Sprintf("kcltool-%s-%s-%s", plan.Kind, safeName(plan.Table), e.ExportedAt.UTC().Format("20060102T150405.000Z"))
	backup := store.Path(base + backupSuffix)
	line := UndoImport(undo, backup, plan, writes)
	var pb bytes.Buffer
	if err := writePlanFile(&pb, plan, writes, line); err != nil {
		return "", err
	}
	if err := store.Put(ctx, base+planSuffix, pb.Bytes()); err != nil {
		return "", &backupSaveError{store, err}
	}
	var bb bytes.Buffer
	if err := e.WriteJSON(&bb); err != nil {
		return "", err
	}
	if err := store.Put(ctx, base+backupSuffix, bb.Bytes()); err != nil {
		return "", &backupSaveError{store, err}
	}
	l, n, m := e.Counts()
	fmt.Fprintf(f.IO.ErrOut, "kcltool: plan saved to %s\n", store.Path(base+planSuffix))
	fmt.Fprintf(f.IO.ErrOut, "kcltool: backup of table %q (%d leases, %d non-lease items, %d malformed) saved to %s\n", plan.Table, l, n, m, backup)
	if len(writes) == 0 {
		fmt.Fprintf(f.IO.ErrOut, "kcltool: no lease is left to write, so nothing to undo\n")
		return backup, nil
	}
	fmt.Fprintf(f.IO.ErrOut, "kcltool: undo with: %s\n", line)
	return backup, nil
}

// backupSaveError is a store that failed to save the plan or the backup.
type backupSaveError struct {
	store backupstore.Store
	err   error
}

func (e *backupSaveError) Error() string { return e.err.Error() }
func (e *backupSaveError) Unwrap() error { return e.err }

// UndoImport is the import that undoes the writes to keys: the backup,
// limited by --shard to exactly those leases, because the rest of the
// table moves on after the command (a worker that runs again checkpoints
// its other shards, and restoring the backup there would replay their
// records). --prune when some of them are created, so the undo deletes
// them again. Lease keys rather than shard ids: in a multi-stream table a
// shard id may name a lease of each stream.
func UndoImport(undo, backup string, plan *reset.Plan, keys []string) string {
	if len(keys) == 0 {
		return ""
	}
	line := undo + " --file " + cmdutil.ShellQuote(backup) + " --shard " + cmdutil.ShellQuote(strings.Join(keys, ","))
	created := map[string]bool{}
	for _, c := range plan.Changes {
		if c.Action == reset.ActionCreate {
			created[c.LeaseKey] = true
		}
	}
	if slices.ContainsFunc(keys, func(k string) bool { return created[k] }) {
		line += " --prune"
	}
	return line + " --execute"
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ' ' || r == ':' {
			return '_'
		}
		return r
	}, s)
}

// forceRefusal says reset's refusal with the flag that overrides it.
type forceRefusal struct{ *reset.RefusedError }

func (r forceRefusal) Error() string { return r.Explain("pass --force") }
func (r forceRefusal) Unwrap() error { return r.RefusedError }
