package doctor

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/inspect/doctor"
)

// ReportJSON is the documented JSON shape of a doctor report (docs/json.md;
// the key list is jsonSchemas["doctor"]). Every key is always present: no
// stream is null; lists are [] and values {} when empty.
type ReportJSON struct {
	App                string            `json:"app"`
	Table              string            `json:"table"`
	Stream             cmdutil.OptString `json:"stream"`
	Started            time.Time         `json:"started"`
	Ended              time.Time         `json:"ended"`
	WindowMillis       int64             `json:"windowMillis"`
	FailoverTimeMillis int64             `json:"failoverTimeMillis"`
	Reads              int               `json:"reads"`
	Partial            bool              `json:"partial"`
	Leases             int               `json:"leases"`
	Workers            int               `json:"workers"`
	KCL3               bool              `json:"kcl3"`
	Worst              string            `json:"worst"`
	FailOn             string            `json:"failOn"`
	Failed             bool              `json:"failed"`
	Findings           []findingJSON     `json:"findings"`
	Cost               costJSON          `json:"cost"`
	Capacity           capacityJSON      `json:"capacity"`
}

// capacityJSON is the fleet's consumption against the table's capacity
// (doctor.CapacityUse).
type capacityJSON struct {
	BillingMode           string   `json:"billingMode"`
	ProvisionedReadUnits  optInt64 `json:"provisionedReadUnits"`
	ProvisionedWriteUnits optInt64 `json:"provisionedWriteUnits"`
	ReadUnitsPerSecond    float64  `json:"readUnitsPerSecond"`
	ReadUnitsSource       string   `json:"readUnitsSource"`
	WriteUnitsPerSecond   float64  `json:"writeUnitsPerSecond"`
	WriteUnitsSource      string   `json:"writeUnitsSource"`
}

// optInt64 is a number, or null when zero.
type optInt64 int64

func (v optInt64) MarshalJSON() ([]byte, error) {
	if v == 0 {
		return []byte("null"), nil
	}
	return strconv.AppendInt(nil, int64(v), 10), nil
}

func unitsSource(estimated bool) string {
	if estimated {
		return "estimate"
	}
	return "cloudwatch"
}

func capacityOf(c *doctor.CapacityUse) capacityJSON {
	if c == nil {
		return capacityJSON{ReadUnitsSource: "estimate", WriteUnitsSource: "estimate"}
	}
	return capacityJSON{BillingMode: c.BillingMode, ProvisionedReadUnits: optInt64(c.ProvisionedRead), ProvisionedWriteUnits: optInt64(c.ProvisionedWrite),
		ReadUnitsPerSecond: c.ReadUnitsPerSecond, ReadUnitsSource: unitsSource(c.ReadEstimated),
		WriteUnitsPerSecond: c.WriteUnitsPerSecond, WriteUnitsSource: unitsSource(c.WriteEstimated)}
}

type findingJSON struct {
	ID       string       `json:"id"`
	Severity string       `json:"severity"`
	Summary  string       `json:"summary"`
	Evidence evidenceJSON `json:"evidence"`
	Cause    string       `json:"cause"`
	Fix      string       `json:"fix"`
}

type evidenceJSON struct {
	Lines   []string           `json:"lines"`
	Values  map[string]float64 `json:"values"`
	Shards  []string           `json:"shards"`
	Workers []string           `json:"workers"`
}

type costJSON struct {
	DynamoDB struct {
		Scans             int     `json:"scans"`
		Pages             int     `json:"pages"`
		LegacyScans       int     `json:"legacyScans"`
		Coordination      int     `json:"coordination"`
		DescribeTable     int     `json:"describeTable"`
		ReadCapacityUnits float64 `json:"readCapacityUnits"`
	} `json:"dynamodb"`
	Kinesis struct {
		GetRecords            int `json:"getRecords"`
		ListShards            int `json:"listShards"`
		DescribeStreamSummary int `json:"describeStreamSummary"`
		ListStreamConsumers   int `json:"listStreamConsumers"`
	} `json:"kinesis"`
	CloudWatch struct {
		GetMetricData int `json:"getMetricData"`
		Metrics       int `json:"metrics"`
	} `json:"cloudwatch"`
}

func severityName(s doctor.Severity) string {
	if s > doctor.SeverityCritical {
		return "never"
	}
	if s < 0 {
		return "none"
	}
	return s.String()
}

func reportJSON(rep *doctor.Report, failOn doctor.Severity) ReportJSON {
	j := ReportJSON{
		App: rep.App, Table: rep.Table, Stream: cmdutil.OptString(rep.Stream), Started: rep.Started.UTC(), Ended: rep.Ended.UTC(),
		WindowMillis: rep.Window.Milliseconds(), FailoverTimeMillis: rep.FailoverTime.Milliseconds(),
		Reads: rep.Reads, Partial: rep.Partial, Leases: rep.Leases, Workers: rep.Workers, KCL3: rep.KCL3,
		Worst: severityName(rep.Worst()), FailOn: severityName(failOn), Failed: len(rep.AtLeast(failOn)) > 0,
		Findings: make([]findingJSON, 0, len(rep.Findings)),
	}
	for _, f := range rep.Findings {
		values := f.Evidence.Values
		if values == nil {
			values = map[string]float64{}
		}
		j.Findings = append(j.Findings, findingJSON{
			ID: f.ID, Severity: f.Severity.String(), Summary: f.Summary, Cause: f.Cause, Fix: f.Fix,
			Evidence: evidenceJSON{Lines: cmdutil.OrEmpty(f.Evidence.Lines), Values: values, Shards: cmdutil.OrEmpty(f.Evidence.Shards), Workers: cmdutil.OrEmpty(f.Evidence.Workers)},
		})
	}
	c := rep.Cost
	j.Cost.DynamoDB.Scans, j.Cost.DynamoDB.Pages, j.Cost.DynamoDB.LegacyScans = c.Scans, c.Pages, c.LegacyScans
	j.Cost.DynamoDB.Coordination = c.Coordination
	j.Cost.DynamoDB.DescribeTable, j.Cost.DynamoDB.ReadCapacityUnits = c.DescribeTable, c.ReadCapacityUnits
	j.Cost.Kinesis.GetRecords, j.Cost.Kinesis.ListShards, j.Cost.Kinesis.DescribeStreamSummary = c.GetRecords, c.ListShards, c.DescribeStream
	j.Cost.Kinesis.ListStreamConsumers = c.ListStreamConsumers
	j.Cost.CloudWatch.GetMetricData, j.Cost.CloudWatch.Metrics = c.GetMetricData, c.Metrics
	j.Capacity = capacityOf(rep.Capacity)
	return j
}

// renderDoctor writes a report in the chosen format.
func renderDoctor(f *cmdutil.Factory, format string, rep *doctor.Report, failOn doctor.Severity) error {
	return printDoctor(cmdutil.NewPrinter(f.IO, format), rep, failOn)
}

func printDoctor(p *cmdutil.Printer, rep *doctor.Report, failOn doctor.Severity) error {
	return p.Print(cmdutil.Output{
		Doc: func() any { return reportJSON(rep, failOn) },
		CSV: CSVColumns,
		Rows: func() [][]string {
			var recs [][]string
			for _, fd := range rep.Findings {
				recs = append(recs, []string{fd.ID, fd.Severity.String(), fd.Summary, strings.Join(fd.Evidence.Shards, ";"),
					strings.Join(fd.Evidence.Workers, ";"), fd.Cause, fd.Fix})
			}
			return recs
		},
		Text: func(p *cmdutil.Printer) error { return doctorTable(p, rep, failOn) },
	})
}

// doctorTable: the findings as a table, worst first, then the evidence,
// cause and fix of each finding that needs action (of every finding with
// -o wide), then what the run read and cost.
func doctorTable(p *cmdutil.Printer, rep *doctor.Report, failOn doctor.Severity) error {
	wide := p.Wide()
	st := p.Styles()
	header := fmt.Sprintf("%s: %s, %s, %s (reads %s apart over %s, %s to %s)", rep.Table, cmdutil.Plural(rep.Leases, "lease"),
		cmdutil.Plural(rep.Workers, "worker"), cmdutil.Plural(rep.Reads, "read"), rep.FailoverTime, rep.Window.Round(time.Millisecond),
		stamp(rep.Started, p.TTY()), stamp(rep.Ended, p.TTY()))
	for _, l := range p.Wrap("", header) {
		p.Println(st.Dim.Render(l))
	}
	if rep.Partial {
		for _, l := range p.Wrap("", fmt.Sprintf("first look from one read: expired leases, dead workers, churn and stuck shards need reads %s apart; the full report follows once a window of reads is in", rep.FailoverTime)) {
			p.Println(st.Warn.Render(l))
		}
	}
	p.Blank()
	if len(rep.Findings) == 0 {
		p.Println(st.Good.Render("no findings"))
	} else {
		var rows [][]string
		for _, fd := range rep.Findings {
			rows = append(rows, []string{fd.Severity.String(), fd.ID, fd.Summary})
		}
		if err := p.Table([]string{"SEVERITY", "ID", "SUMMARY"}, rows); err != nil {
			return err
		}
	}
	for _, fd := range rep.Findings {
		if !wide && fd.Severity < doctor.SeverityWarn {
			continue
		}
		p.Blank()
		style := st.Warn
		switch fd.Severity {
		case doctor.SeverityCritical:
			style = st.Bad
		case doctor.SeverityInfo:
			style = st.Dim
		}
		// The prose wraps to the terminal, each line under its label.
		p.WrapLine(style.Render(fd.Severity.String()+" "+fd.ID)+": ", fd.Summary)
		for _, l := range fd.Evidence.Lines {
			p.WrapLine("  - ", l)
		}
		if wide && len(fd.Evidence.Values) > 0 {
			p.WrapLine("  values: ", formatValues(fd.Evidence.Values))
		}
		p.WrapLine("  cause: ", fd.Cause)
		p.WrapLine("  fix:   ", fd.Fix)
	}
	p.Blank()
	for _, l := range p.Wrap("cost: ", costLine(rep.Cost)) {
		p.Println(st.Dim.Render(l))
	}
	p.Println(verdictLine(st, rep, failOn))
	return nil
}

func stamp(t time.Time, tty bool) string {
	if tty {
		return t.Local().Format("15:04:05")
	}
	return t.UTC().Format(time.RFC3339)
}

func formatValues(v map[string]float64) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func costLine(c doctor.ReadCost) string {
	parts := []string{fmt.Sprintf("%s (%s, %s read capacity)", cmdutil.Plural(c.Scans, "lease-table scan"), cmdutil.Plural(c.Pages, "page"),
		strconv.FormatFloat(c.ReadCapacityUnits, 'f', -1, 64)), cmdutil.Plural(c.DescribeTable, "DescribeTable")}
	if c.LegacyScans > 0 {
		parts = append(parts, cmdutil.Plural(c.LegacyScans, "KCL 3.x side-table scan"))
	}
	if c.Coordination > 0 {
		parts = append(parts, cmdutil.Plural(c.Coordination, "KCL 3.x coordination read"))
	}
	if c.GetRecords+c.ListShards > 0 {
		parts = append(parts, fmt.Sprintf("%s, %s", cmdutil.Plural(c.ListShards, "ListShards"), cmdutil.Plural(c.GetRecords, "GetRecords probe")))
	}
	if c.DescribeStream > 0 {
		parts = append(parts, cmdutil.Plural(c.DescribeStream, "DescribeStreamSummary"))
	}
	if c.ListStreamConsumers > 0 {
		parts = append(parts, cmdutil.Plural(c.ListStreamConsumers, "ListStreamConsumers"))
	}
	if c.GetMetricData > 0 {
		parts = append(parts, fmt.Sprintf("%s (%s)", cmdutil.Plural(c.GetMetricData, "GetMetricData"), cmdutil.Plural(c.Metrics, "metric")))
	}
	return strings.Join(parts, ", ")
}

func verdictLine(st cmdutil.Styles, rep *doctor.Report, failOn doctor.Severity) string {
	counts := map[doctor.Severity]int{}
	for _, f := range rep.Findings {
		counts[f.Severity]++
	}
	line := fmt.Sprintf("%d critical, %d warn, %d info", counts[doctor.SeverityCritical], counts[doctor.SeverityWarn], counts[doctor.SeverityInfo])
	if failOn <= doctor.SeverityCritical && len(rep.AtLeast(failOn)) > 0 {
		return st.Bad.Render(line + fmt.Sprintf(" (exit 3: --fail-on %s)", failOn))
	}
	return line
}

// liveView redraws the report in place on a terminal; elsewhere reports
// follow one another (one JSON document per line with -o json).
type liveView struct {
	io     *cmdutil.IOStreams
	frames int
}

func (l *liveView) show(render func() error, format string) error {
	l.frames++
	cmdutil.NewPrinter(l.io, format).Next(l.frames)
	return render()
}

// CSVColumns are doctor's CSV header: one finding a row.
var CSVColumns = []string{"id", "severity", "summary", "shards", "workers", "cause", "fix"}
