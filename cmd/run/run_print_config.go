package run

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/runner"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// configRow is one resolved setting of run --print-config.
type configRow struct {
	Setting string
	Value   string
	// Source is flag, env, file or default.
	Source string
	// Property is the properties-file key behind the setting, also when a
	// flag or variable overrode it; "" (null) when the file has none.
	Property string
	Note     string
}

// configRowJSON is the documented JSON of one setting (cmd/json_schema.go).
type configRowJSON struct {
	Setting  string  `json:"setting"`
	Value    string  `json:"value"`
	Source   string  `json:"source"`
	Property *string `json:"property"`
	Note     *string `json:"note"`
}

type RunConfigJSON struct {
	Properties *string         `json:"properties"`
	Settings   []configRowJSON `json:"settings"`
	Warnings   []string        `json:"warnings"`
}

// notPrinted are run's flags that are about this invocation, not settings.
var notPrinted = map[string]bool{"help": true, "print-config": true, "output": true, "properties": true,
	"color": true, "log-level": true, "log-format": true}

// propertyOf maps a flag to the properties key that can set it.
func propertyOf(flag string, p *propertiesRun) string {
	if p == nil {
		return ""
	}
	if e, ok := p.fromFile[flag]; ok {
		return e.Key
	}
	for _, s := range runSettings {
		if s.flag == flag && s.property != "" {
			if _, ok := p.entry(s.property); ok {
				return s.property
			}
		}
	}
	switch flag {
	case "stream", "region":
		if _, ok := p.entry("streamArn"); ok {
			return "streamArn"
		}
	case "initial-position", "initial-timestamp":
		if _, ok := p.entry("initialPositionInStreamExtended"); ok {
			return "initialPositionInStreamExtended"
		}
	}
	return ""
}

// runConfigRows lists every setting of run with its source.
func runConfigRows(cmd *cobra.Command, o *runOptions, p *propertiesRun, mode configRow) []configRow {
	var rows []configRow
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		if notPrinted[fl.Name] {
			return
		}
		row := configRow{Setting: fl.Name, Value: printedValue(fl), Source: sourceOf(fl), Property: propertyOf(fl.Name, p)}
		if p != nil {
			if e, ok := p.fromFile[fl.Name]; ok {
				row.Source = sourceFile
				row.Note = fmt.Sprintf("%s = %s (%s)", e.Key, e.Value, p.where(e))
			} else if row.Property != "" {
				e, _ := p.entry(row.Property)
				row.Note = fmt.Sprintf("overrides %s = %s", e.Key, e.Value)
			}
		}
		if fl.Name == "efo" && p != nil && p.retrieval != "" {
			if p.efoByRule {
				row.Source = sourceFile
			}
			row.Note = p.retrievalWhy + map[string]string{"FANOUT": " means enhanced fan-out", "POLLING": " means polling"}[p.retrieval]
		}
		if fl.Name == "exec" && o.noCommand {
			row.Value = ""
		}
		if fl.Name == "multilang" && o.fromExecutable {
			row.Source, row.Property, row.Note = sourceFile, "executableName", "the file's program is a MultiLang child"
		}
		rows = append(rows, row)
	})
	if len(o.Argv) > 0 && !o.noCommand {
		row := configRow{Setting: "command", Value: strings.Join(o.Argv, " "), Source: sourceFlag, Note: "after --"}
		if o.fromExecutable {
			row.Source, row.Property, row.Note = sourceFile, "executableName", "one long-lived MultiLang child per held lease"
		}
		rows = append(rows, row)
	}
	rows = append(rows, mode)
	if p == nil {
		return rows
	}
	rows = append(rows, p.extra...)
	if e, ok := p.entry("executableName"); ok {
		row := configRow{Setting: "executableName", Value: strings.Join(p.program, " "), Source: sourceFile, Property: e.Key}
		if o.fromExecutable {
			row.Note = "run as the MultiLang child (--multilang)"
		} else {
			row.Note = "recorded, not run: the handler is the command given with --exec or --"
		}
		rows = append(rows, row)
	}
	return rows
}

func printedValue(fl *pflag.Flag) string {
	if s, ok := fl.Value.(pflag.SliceValue); ok {
		return strings.Join(s.GetSlice(), ",")
	}
	return fl.Value.String()
}

// printRunConfig prints the resolved configuration: a table (wide adds
// where each value came from in words) or a JSON document.
func printRunConfig(cmd *cobra.Command, f *cmdutil.Factory, o *runOptions, p *propertiesRun, cfg runner.Config) error {
	rows := runConfigRows(cmd, o, p, assignmentRow(cmd.Context(), f, cfg))
	out := cmdutil.Output{
		Doc: func() any {
			doc := RunConfigJSON{Settings: []configRowJSON{}, Warnings: []string{}}
			if p != nil {
				doc.Properties = &p.path
				doc.Warnings = append(doc.Warnings, p.warnings...)
			}
			for _, r := range rows {
				j := configRowJSON{Setting: r.Setting, Value: r.Value, Source: r.Source}
				if r.Property != "" {
					j.Property = &r.Property
				}
				if r.Note != "" {
					j.Note = &r.Note
				}
				doc.Settings = append(doc.Settings, j)
			}
			return doc
		},
		Text: func(pr *cmdutil.Printer) error {
			header := []string{"SETTING", "VALUE", "SOURCE", "PROPERTY"}
			if pr.Wide() {
				header = append(header, "NOTE")
			}
			var cells [][]string
			for _, r := range rows {
				line := []string{r.Setting, r.Value, r.Source, r.Property}
				if pr.Wide() {
					line = append(line, r.Note)
				}
				cells = append(cells, line)
			}
			return pr.Table(header, cells)
		},
	}
	return cmdutil.NewPrinter(f.IO, o.Output).Print(out)
}

// fromFileHint adds to a usage error about a flag the properties file set
// which key and line set it.
func fromFileHint(err error, p *propertiesRun) error {
	var ee *cmdutil.ExitError
	if p == nil || !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage {
		return err
	}
	msg := err.Error()
	for flag, e := range p.fromFile {
		if strings.Contains(msg, "--"+flag+" ") || strings.HasSuffix(msg, "--"+flag) || strings.Contains(msg, "--"+flag+"\"") {
			return cmdutil.UsageErrorf("%v (set by %s = %s in %s)", err, e.Key, e.Value, p.where(e))
		}
	}
	return err
}
