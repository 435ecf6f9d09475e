package cmd

import (
	"github.com/spf13/cobra"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/internal/buildinfo"
)

// versionString is "VERSION (commit COMMIT)" (internal/buildinfo), what
// --version prints.
func versionString() string { return buildinfo.String() }

// VersionJSON is `kcltool version -o json` (docs/json.md; the key list is
// jsonSchemas["version"]).
type VersionJSON struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Modified  bool   `json:"modified"`
	GoVersion string `json:"goVersion"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
}

func versionJSON(in buildinfo.Info) VersionJSON {
	return VersionJSON{Version: in.Version, Commit: in.Commit, Modified: in.Modified, GoVersion: in.GoVersion, OS: in.OS, Arch: in.Arch}
}

// newVersionCmd is `kcltool version`: what --version says, in full and as
// JSON for scripts that check which kcltool a host runs (kubectl and gh
// have the same command).
func newVersionCmd(f *cmdutil.Factory) *cobra.Command {
	var format string
	c := &cobra.Command{
		Use:   "version",
		Short: "Print kcltool's version, commit, Go version and platform",
		Long: `Print which kcltool this is. The version is the one a release or 'make build'
stamped in, else the module version 'go install github.com/kcltool/kcltool@vX'
recorded, else "dev". The commit is the stamped one, else the one the Go
toolchain recorded from the work tree, else "unknown"; "modified" says the
toolchain saw uncommitted changes. --version prints the short form.`,
		Example: `  kcltool version
  kcltool version -o json | jq -r .version`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.CheckOutputOf(format, cmdutil.FormatTable, cmdutil.FormatJSON); err != nil {
				return err
			}
			v := versionJSON(buildinfo.Read())
			return cmdutil.NewPrinter(f.IO, format).Print(cmdutil.Output{
				Doc:  func() any { return v },
				Text: func(p *cmdutil.Printer) error { return versionText(p, v) },
			})
		},
	}
	cmdutil.AddOutputFlagOf(c, &format, "output format: table or json", cmdutil.FormatTable, cmdutil.FormatJSON)
	return c
}

func versionText(p *cmdutil.Printer, v VersionJSON) error {
	modified := "no"
	if v.Modified {
		modified = "yes: built from a work tree with uncommitted changes"
	}
	return p.Table([]string{"FIELD", "VALUE"}, [][]string{
		{"version", v.Version},
		{"commit", v.Commit},
		{"modified", modified},
		{"go", v.GoVersion},
		{"platform", v.OS + "/" + v.Arch},
	})
}
