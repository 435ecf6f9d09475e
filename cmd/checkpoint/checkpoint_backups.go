package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/reset"
	"github.com/kcltool/kcltool/reset/backupstore"
)

// backupDirDefault is how the help shows --backup-dir's default: the rule,
// not this machine's path, so that the generated command reference is the
// same everywhere.
const backupDirDefault = "$XDG_STATE_HOME/kcltool/backups or ~/.local/state/kcltool/backups"

// addBackupDirFlag registers --backup-dir with an empty default value; the
// folder is decided when it is needed (BackupDir).
func addBackupDirFlag(c *cobra.Command, dst *string, usage string) {
	// The variable's note is written here so that it comes before the
	// default, as cobra places it for every other flag.
	c.Flags().StringVar(dst, "backup-dir", "", usage+" [$"+cmdutil.EnvName("backup-dir")+"] (default "+backupDirDefault+")")
}

// BackupDir is --backup-dir, or the XDG state folder kcltool keeps its
// backups in: $XDG_STATE_HOME/kcltool/backups, or
// ~/.local/state/kcltool/backups when XDG_STATE_HOME is unset (or, against
// the XDG rules, relative). One known folder rather than the current one,
// which scattered backups wherever a reset happened to be run.
func BackupDir(f *cmdutil.Factory, flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if x := f.Getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "kcltool", "backups"), nil
	}
	home := f.Getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil || home == "" {
			return "", cmdutil.UsageErrorf("no home folder for the default --backup-dir (%s): pass --backup-dir", backupDirDefault)
		}
	}
	return filepath.Join(home, ".local", "state", "kcltool", "backups"), nil
}

// makeBackupDir decides the folder and creates it, readable by the user
// only (backups hold the whole table), before anything else happens: a
// folder that cannot be created fails the command at once, not after the
// sample.
func makeBackupDir(f *cmdutil.Factory, flag string) (string, error) {
	dir, err := BackupDir(f, flag)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("backup folder: %w (pass --backup-dir to save elsewhere)", err)
	}
	return dir, nil
}

func newCheckpointBackupsCmd(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "backups",
		Short: "The backups that reset and import saved before writing",
	}
	c.AddCommand(newCheckpointBackupsLsCmd(f))
	return c
}

type backupsLsOptions struct {
	cmdutil.AppFlags
	Output    string
	BackupDir string
}

func newCheckpointBackupsLsCmd(f *cmdutil.Factory) *cobra.Command {
	o := &backupsLsOptions{}
	c := &cobra.Command{
		Use:     "ls [--app APP] [--backup-dir DIR]",
		Aliases: []string{"list"},
		Short:   "List the backups in the backup folder",
		Long: `List the backups that checkpoint reset and checkpoint import --execute saved
before their first write, oldest first: the file, the lease table, the time of
the read, the number of leases and the size. Each is a complete export of the
table. UNDOES names the leases the command was about to write (from its plan
file, which also holds the undo command); restore those with the command it
printed, which limits the import to them:

  kcltool checkpoint import --app APP --file FILE --shard LEASES [--prune] --execute

The folder is --backup-dir, by default $XDG_STATE_HOME/kcltool/backups, or
~/.local/state/kcltool/backups when XDG_STATE_HOME is unset. With
--backup-dir s3://bucket/prefix the backups a reset or import saved to that
bucket are listed (ListObjectsV2; PATH is then an s3:// URL, which checkpoint
import --file reads), from any machine with access. --app or --table lists
only the backups of that table. Only the header of each file is read.`,
		Example: `  kcltool checkpoint backups ls
  kcltool checkpoint backups ls --app orders -o wide
  kcltool checkpoint backups ls --backup-dir s3://team-backups/kcltool
  kcltool checkpoint backups ls -o json | jq -r '.[-1].path'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.CheckOutput(o.Output); err != nil {
				return err
			}
			if err := checkBackupDir(o.BackupDir); err != nil {
				return err
			}
			return runBackupsLs(cmd, f, o)
		},
	}
	c.Flags().StringVar(&o.App, "app", "", "only the backups of this application's lease table")
	c.Flags().StringVar(&o.Table, "table", "", "only the backups of this lease table")
	addBackupDirFlag(c, &o.BackupDir, "the folder, or s3://bucket/prefix, to list")
	cmdutil.AddOutputFlag(c, &o.Output)
	cmdutil.AddTableFlags(c, f.IO, "FILE", "PATH", "KIND", "TABLE", "TIME", "LEASES", "NON-LEASES", "MALFORMED", "SIZE", "PLAN", "UNDOES")
	return c
}

// BackupJSON is the documented JSON shape of one backup (docs/json.md).
// Every key is always present; plan is null when the plan file is missing;
// writes is [] and undo null also when the plan file is older than them.
type BackupJSON struct {
	File       string  `json:"file"`
	Path       string  `json:"path"`
	Kind       string  `json:"kind"`
	Table      string  `json:"table"`
	ExportedAt string  `json:"exportedAt"`
	Leases     int     `json:"leases"`
	NonLeases  int     `json:"nonLeases"`
	Malformed  int     `json:"malformed"`
	SizeBytes  int64   `json:"sizeBytes"`
	Plan       *string `json:"plan"`
	// Writes are the leases the command was about to write, and Undo the
	// import that restores exactly them, from the plan file: what this
	// backup is the undo of.
	Writes []string          `json:"writes"`
	Undo   cmdutil.OptString `json:"undo"`
}

const (
	backupSuffix = ".backup.json"
	planSuffix   = ".plan.json"
)

func runBackupsLs(cmd *cobra.Command, f *cmdutil.Factory, o *backupsLsOptions) error {
	ctx := cmd.Context()
	store, err := backupStore(ctx, f, o.BackupDir, false)
	if err != nil {
		return err
	}
	only := o.Table
	if only == "" {
		only = o.App
	}
	rows, err := readBackups(ctx, f, store, only)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		fmt.Fprintf(f.IO.ErrOut, "kcltool: no backups in %s\n", store)
	}
	return renderBackups(f.IO, o.Output, rows)
}

// readBackups summarises every backup in the store, oldest first. A file
// that is not a readable export is reported and left out.
func readBackups(ctx context.Context, f *cmdutil.Factory, store backupstore.Store, table string) ([]BackupJSON, error) {
	entries, err := store.List(ctx)
	if err != nil {
		return nil, backupStoreError(f, store, "list", err)
	}
	present := map[string]bool{}
	for _, e := range entries {
		present[e.Name] = true
	}
	var rows []BackupJSON
	times := map[string]time.Time{}
	for _, e := range entries {
		name := e.Name
		if !strings.HasPrefix(name, "kcltool-") || !strings.HasSuffix(name, backupSuffix) {
			continue
		}
		path := store.Path(name)
		s, err := summarise(ctx, store, name)
		if err != nil {
			fmt.Fprintf(f.IO.ErrOut, "kcltool: warning: skipped %s: %v\n", path, err)
			continue
		}
		if table != "" && s.Table != table {
			continue
		}
		r := BackupJSON{File: name, Path: path, Kind: backupKind(name), Table: s.Table,
			ExportedAt: s.ExportedAt.UTC().Format(time.RFC3339Nano), Leases: s.Leases, NonLeases: s.NonLeases,
			Malformed: s.Malformed, SizeBytes: e.Size, Writes: []string{}}
		if plan := strings.TrimSuffix(name, backupSuffix) + planSuffix; present[plan] {
			planPath := store.Path(plan)
			r.Plan = &planPath
			if w, undo, err := readPlanUndo(ctx, store, plan); err != nil {
				fmt.Fprintf(f.IO.ErrOut, "kcltool: warning: %s: %v\n", planPath, err)
			} else {
				r.Writes, r.Undo = cmdutil.OrEmpty(w), cmdutil.OptString(undo)
			}
		}
		times[name] = s.ExportedAt
		rows = append(rows, r)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		ti, tj := times[rows[i].File], times[rows[j].File]
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return rows[i].File < rows[j].File
	})
	return rows, nil
}

// summarise reads the header of a backup; the rest of the file (or the
// download) is never read.
func summarise(ctx context.Context, store backupstore.Store, name string) (reset.ExportSummary, error) {
	r, err := store.Open(ctx, name)
	if err != nil {
		return reset.ExportSummary{}, err
	}
	defer r.Close()
	return reset.ReadExportSummary(r)
}

// readPlanUndo reads writes and undo from a plan file, stopping where the
// changes begin (they come last, and may be thousands of rows). Both are
// absent from plan files older than these keys.
func readPlanUndo(ctx context.Context, store backupstore.Store, name string) (writes []string, undo string, err error) {
	fh, err := store.Open(ctx, name)
	if err != nil {
		return nil, "", err
	}
	defer fh.Close()
	dec := json.NewDecoder(fh)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, "", errors.New("not a kcltool plan file: not a JSON object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, "", fmt.Errorf("not a kcltool plan file: %w", err)
		}
		var dst any = new(json.RawMessage)
		switch t {
		case "changes":
			return writes, undo, nil
		case "writes":
			dst = &writes
		case "undo":
			dst = &undo
		}
		if err := dec.Decode(dst); err != nil {
			return nil, "", fmt.Errorf("not a kcltool plan file: %v: %w", t, err)
		}
	}
	return writes, undo, nil
}

// backupKind is the command that saved the backup, from its name
// (kcltool-KIND-TABLE-TIME.backup.json).
func backupKind(name string) string {
	k, _, _ := strings.Cut(strings.TrimPrefix(name, "kcltool-"), "-")
	return k
}

var BackupCSVColumns = []string{"file", "path", "kind", "table", "exportedAt", "leases", "nonLeases", "malformed", "sizeBytes", "plan", "writes", "undo"}

func renderBackups(io *cmdutil.IOStreams, format string, rows []BackupJSON) error {
	return cmdutil.NewPrinter(io, format).Print(cmdutil.Output{
		Items: func() any { return rows },
		CSV:   BackupCSVColumns,
		Rows: func() [][]string {
			var out [][]string
			for _, r := range rows {
				plan := ""
				if r.Plan != nil {
					plan = *r.Plan
				}
				out = append(out, []string{r.File, r.Path, r.Kind, r.Table, r.ExportedAt, strconv.Itoa(r.Leases), strconv.Itoa(r.NonLeases),
					strconv.Itoa(r.Malformed), strconv.FormatInt(r.SizeBytes, 10), plan, strings.Join(r.Writes, ";"), string(r.Undo)})
			}
			return out
		},
		Text: func(p *cmdutil.Printer) error { return backupsTable(p, rows) },
	})
}

func backupsTable(p *cmdutil.Printer, rows []BackupJSON) error {
	header := []string{"FILE", "TABLE", "TIME", "LEASES", "SIZE", "UNDOES"}
	if p.Wide() {
		header = []string{"PATH", "KIND", "TABLE", "TIME", "LEASES", "NON-LEASES", "MALFORMED", "SIZE", "PLAN", "UNDOES"}
	}
	var out [][]string
	for _, r := range rows {
		at := r.ExportedAt
		if t, err := time.Parse(time.RFC3339Nano, at); err == nil {
			at = t.UTC().Format("2006-01-02T15:04:05Z")
		}
		row := []string{r.File, r.Table, at, strconv.Itoa(r.Leases), humanBytes(r.SizeBytes), undoesText(r.Writes)}
		if p.Wide() {
			plan := "-"
			if r.Plan != nil {
				plan = filepath.Base(*r.Plan)
			}
			row = []string{r.Path, r.Kind, r.Table, at, strconv.Itoa(r.Leases), strconv.Itoa(r.NonLeases), strconv.Itoa(r.Malformed), humanBytes(r.SizeBytes), plan, row[5]}
		}
		out = append(out, row)
	}
	// On a narrow terminal these go before a file name would break: the
	// file's name holds the table and the time already.
	p.Spare("TABLE", "TIME", "SIZE", "LEASES")
	return p.Table(header, out)
}

// undoesText names the leases a backup is the undo of: up to two by key,
// more as a count; "-" for none (or a plan file that does not say).
func undoesText(writes []string) string {
	switch {
	case len(writes) == 0:
		return "-"
	case len(writes) <= 2:
		return strings.Join(writes, ", ")
	}
	return cmdutil.Plural(len(writes), "lease")
}

// humanBytes shows a size for people: 812B, 14.2KiB, 3.0MiB.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + "B"
	}
	v, suffix := float64(n)/unit, "KiB"
	for _, s := range []string{"MiB", "GiB", "TiB"} {
		if v < unit {
			break
		}
		v, suffix = v/unit, s
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + suffix
}
