package cmdutil

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kcltool/kcltool/inspect/watch"
)

// DefaultWatchInterval is --interval's default: the KCL failover time, the
// pace doctor --watch reads at, so a watch costs the table one read per
// failover time.
const DefaultWatchInterval = 10 * time.Second

// WatchFlags are --watch (-w) and --interval of `leases ls`, `leases
// owners` and `lag` (docs/watch.md).
type WatchFlags struct {
	Watch    bool
	Interval time.Duration
}

// Register adds --watch and --interval to c.
func (w *WatchFlags) Register(c *cobra.Command) {
	c.Flags().BoolVarP(&w.Watch, "watch", "w", false, "after the listing, read again every --interval and print only what changed, one line per change (Ctrl-C stops)")
	c.Flags().DurationVar(&w.Interval, "interval", DefaultWatchInterval, "with --watch: time from one read to the next (at least 1s)")
}

// Check refuses an interval under a second: each read is a full Scan.
func (w *WatchFlags) Check() error {
	if w.Watch && w.Interval < time.Second {
		return UsageErrorf("--interval must be at least 1s (each read scans the whole lease table)")
	}
	return nil
}

// WatchField is a watched field with its JSON value: the event's from and
// to, and what two reads are compared by.
func WatchField(name string, v any) watch.Field {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte("null")
	}
	return watch.Field{Name: name, Value: string(b)}
}

// WatchSpec is one command's watch: its first read, already made (and in
// table formats already printed), and how to read again.
type WatchSpec struct {
	Flags  WatchFlags
	Format string
	// What is watched, for the line on stderr ("lease table \"orders\"").
	What    string
	First   []watch.Row
	FirstAt time.Time
	Read    func(ctx context.Context) ([]watch.Row, error)
	// CSV is the command's one-shot CSV header and CSVRecord a row's
	// record under it, from Row.Object.
	CSV       []string
	CSVRecord func(obj any) []string
	// Explain rewrites an AWS error for people (ExplainAWS).
	Explain func(error) error
}

// RunWatch prints the changes after the first read until Ctrl-C (exit
// 130), a read fails for good (exit 1) or stdout does. In table formats the
// caller printed the first read as the one-shot command does; in json and
// csv it comes as ADDED events, so every line of the output has one shape.
func RunWatch(ctx context.Context, f *Factory, s WatchSpec) error {
	text := s.Format == FormatTable || s.Format == FormatWide
	fmt.Fprintf(f.IO.ErrOut, "kcltool: watching %s every %s; changes follow (Ctrl-C stops)\n", s.What, s.Flags.Interval)
	out := &watchPrinter{io: f.IO, format: s.Format, spec: &s}
	if s.Format == FormatCSV {
		out.csv = csv.NewWriter(f.IO.Out)
		if err := out.csv.Write(append([]string{"time", "type", "changed"}, s.CSV...)); err != nil {
			return err
		}
	}
	for _, r := range s.First {
		out.width = max(out.width, len(r.Name()))
	}
	err := watch.Run(ctx, watch.Options{
		Interval: s.Flags.Interval, Clock: f.Clock, First: s.First, FirstAt: s.FirstAt, Read: s.Read,
		SkipInitial: text, Emit: out.emit,
		Warn: func(err error) {
			fmt.Fprintf(f.IO.ErrOut, "kcltool: warning: read failed, still watching: %v\n", s.Explain(err))
		},
	})
	if ctx.Err() != nil {
		return ctx.Err() // Ctrl-C: exit 130
	}
	return s.Explain(err)
}

// WatchEventJSON is one line of `--watch -o json` (docs/json.md, "watch
// events"), after kubectl's watch events.
type WatchEventJSON struct {
	Time    time.Time        `json:"time"`
	Type    string           `json:"type"`
	Initial bool             `json:"initial"`
	Key     string           `json:"key"`
	Changed []WatchFieldJSON `json:"changed"`
	Object  any              `json:"object"`
}

// WatchFieldJSON is one changed field of a MODIFIED event.
type WatchFieldJSON struct {
	Field string          `json:"field"`
	From  json.RawMessage `json:"from"`
	To    json.RawMessage `json:"to"`
}

type watchPrinter struct {
	io     *IOStreams
	format string
	spec   *WatchSpec
	csv    *csv.Writer
	width  int  // the widest row name seen: the change lines align
	lines  bool // a change line was printed: the first follows a blank line
}

func (p *watchPrinter) emit(e watch.Event) error {
	at := e.At.UTC().Truncate(time.Millisecond)
	switch p.format {
	case FormatJSON:
		enc := json.NewEncoder(p.io.Out)
		for _, c := range e.Changes {
			ev := WatchEventJSON{Time: at, Type: string(c.Type), Initial: e.Initial, Key: c.Row.Key,
				Changed: []WatchFieldJSON{}, Object: c.Row.Object}
			for _, fc := range c.Changed {
				ev.Changed = append(ev.Changed, WatchFieldJSON{Field: fc.Name, From: rawOrNull(fc.From), To: rawOrNull(fc.To)})
			}
			if err := enc.Encode(ev); err != nil {
				return err
			}
		}
		return nil
	case FormatCSV:
		for _, c := range e.Changes {
			names := make([]string, 0, len(c.Changed))
			for _, fc := range c.Changed {
				names = append(names, fc.Name)
			}
			rec := append([]string{at.Format(time.RFC3339Nano), string(c.Type), strings.Join(names, ";")}, p.spec.CSVRecord(c.Row.Object)...)
			if err := p.csv.Write(rec); err != nil {
				return err
			}
		}
		p.csv.Flush()
		return p.csv.Error()
	}
	st := p.io.Styles()
	if !p.lines && len(e.Changes) > 0 {
		// Apart from the lines under the first table.
		fmt.Fprintln(p.io.Out)
		p.lines = true
	}
	for _, c := range e.Changes {
		p.width = max(p.width, len(c.Row.Name()))
		typ := fmt.Sprintf("%-8s", c.Type)
		switch c.Type {
		case watch.Added:
			typ = st.Good.Render(typ)
		case watch.Deleted:
			typ = st.Bad.Render(typ)
		}
		line := fmt.Sprintf("%s  %s  %-*s  %s", at.Format("15:04:05Z"), typ, p.width, c.Row.Name(), p.describe(c))
		if _, err := fmt.Fprintln(p.io.Out, strings.TrimRight(line, " ")); err != nil {
			return err
		}
	}
	return nil
}

// describe is a change's text: "field from -> to" for each changed field,
// the row's values for a new row, nothing more for one that went.
func (p *watchPrinter) describe(c watch.Change) string {
	var parts []string
	switch c.Type {
	case watch.Modified:
		for _, fc := range c.Changed {
			parts = append(parts, fmt.Sprintf("%s %s -> %s", fc.Name, p.value(fc.Name, fc.From), p.value(fc.Name, fc.To)))
		}
	case watch.Added:
		for _, f := range c.Row.Fields {
			if v := p.value(f.Name, f.Value); v != "-" {
				parts = append(parts, f.Name+" "+v)
			}
		}
	}
	return strings.Join(parts, ", ")
}

// value renders a field's JSON value for people: strings unquoted, lists
// joined with commas, null and [] as "-", sequence numbers shortened on a
// terminal as the tables do.
func (p *watchPrinter) value(name, js string) string {
	var v any
	if js == "" || json.Unmarshal([]byte(js), &v) != nil || v == nil {
		return "-"
	}
	switch v := v.(type) {
	case string:
		if v == "" {
			return "-"
		}
		if name == "checkpoint" || name == "pendingCheckpoint" {
			return Shorten(v, p.io.OutTTY)
		}
		return v
	case float64:
		if name == "millisBehindLatest" {
			return HumanDuration(time.Duration(v) * time.Millisecond)
		}
	case []any:
		if len(v) == 0 {
			return "-"
		}
		s := make([]string, len(v))
		for i, e := range v {
			s[i] = fmt.Sprint(e)
		}
		return strings.Join(s, ",")
	}
	return js
}

func rawOrNull(js string) json.RawMessage {
	if js == "" {
		return json.RawMessage("null")
	}
	return json.RawMessage(js)
}
