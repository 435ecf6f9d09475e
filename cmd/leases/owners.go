package leases

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/inspect"
)

type leasesOwnersOptions struct {
	cmdutil.AppFlags
	Output string
	Sample time.Duration
	Watch  cmdutil.WatchFlags
}

func newLeasesOwnersCmd(f *cmdutil.Factory) *cobra.Command {
	o := &leasesOwnersOptions{}
	c := &cobra.Command{
		Use:   "owners --app APP",
		Short: "Show each worker's leases against the fair share",
		Long: `Show each worker with the leases it holds, its share against the fair share
(ceil(leases / workers), the KCL taker's target), and the shards it holds.
Leases at SHARD_END are not counted: they need no worker. Imbalance beyond one
lease and unassigned leases are flagged under the table.

With --sample, the table is read twice and each worker's renewals and expired
leases are shown: a worker that renews nothing is dead or stalled.

For KCL 3.x applications it also shows the leader lock holder, each worker's
summed throughputKBps (from its leases, as the leader balances by it), and the
worker-metrics items (last update age and CPU series), read where the
application keeps them: KCL 3.0-3.4's <app>-CoordinatorState and
<app>-WorkerMetricStats tables, the lease table of KCL 3.5, or both during the
table migration. kcltool workers appear there like Java ones.

A "mode:" line under the table says how a kcltool run worker would get
leases on this table now: "workers take leases" (KCL 2.x, or 3.x upgrading
from or rolled back to 2.x) or "leader assigns" (KCL 3.x), with the evidence:
the LeaseOwnerToLeaseKeyIndex, the Migration3.0 item's cv and the
TableMigration3.5 item's tm.

With --watch (-w) the table is followed by one line per changed worker, read
every --interval, until Ctrl-C (docs/watch.md).`,
		Example: `  kcltool leases owners --app orders
  kcltool leases owners --app orders --sample 10s
  kcltool leases owners --app orders -o json | jq '.[] | {worker, leases}'
  kcltool leases owners --app orders -w            # then one line per change`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.CheckOutput(o.Output); err != nil {
				return err
			}
			if err := checkWatch(cmd, o.Watch, o.Sample > 0, false); err != nil {
				return err
			}
			table, ddb, err := o.Open(cmd, f)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if o.Sample > 0 {
				fmt.Fprintf(f.IO.ErrOut, "kcltool: sampling lease table %q for %s...\n", table, o.Sample)
			}
			started := f.Clock.Now()
			listing, err := inspect.ListLeases(ctx, ddb, table, inspect.ListOptions{Sample: o.Sample, Clock: f.Clock})
			if err != nil {
				return cmdutil.ExplainAWS(err, f.AWSContext(table, ""))
			}
			for _, m := range listing.Malformed {
				fmt.Fprintf(f.IO.ErrOut, "kcltool: warning: skipped malformed item: %v\n", m)
			}
			owners := inspect.OwnersOf(listing)
			// KCL 3.x: the leader and the worker metrics, read where the
			// application keeps them (side tables, lease table, or both).
			// A side table this caller may not read costs the 3.x columns,
			// not the listing.
			// The same read gives the lease assignment mode a `kcltool run`
			// worker would follow on this table now (2.x tables too).
			mode, k3, err := inspect.ReadKCL3State(ctx, ddb, coordination.DefaultTables(table, o.App), len(listing.NonLeases))
			if err != nil {
				fmt.Fprintf(f.IO.ErrOut, "kcltool: warning: KCL 3.x leader and worker metrics not read: %v\n", err)
			}
			if o.Watch.Watch {
				return watchOwners(ctx, f, o, table, ddb, owners.WithKCL3(k3).WithMode(mode), started)
			}
			return renderOwners(f, o.Output, owners.WithKCL3(k3).WithMode(mode), o.Sample > 0)
		},
	}
	o.Register(c)
	cmdutil.AddOutputFlag(c, &o.Output)
	cmdutil.AddTableFlags(c, f.IO, "WORKER", "LEASES", "FAIR-SHARE", "BALANCE", "RENEWALS", "EXPIRED", "KBPS", "SHARDS")
	c.Flags().DurationVar(&o.Sample, "sample", 0, "read the table twice this far apart to find expired leases and count renewals (10s when given without a value)")
	c.Flags().Lookup("sample").NoOptDefVal = "10s"
	o.Watch.Register(c)
	return c
}

// OwnerJSON is the documented JSON shape of one `leases owners` worker
// (docs/json.md; the key list is jsonSchemas["leases owners"]). Every key
// is always present: what was not measured is null, lists are [].
type OwnerJSON struct {
	Worker     string     `json:"worker"`
	Leases     int        `json:"leases"`
	FairShare  int        `json:"fairShare"`
	Shards     []string   `json:"shards"`
	Expired    *int       `json:"expired"`
	Renewals   *int64     `json:"renewals"`
	LastUpdate *time.Time `json:"lastUpdate"`
	CPU        []float64  `json:"cpu"`
	Leader     bool       `json:"leader"`
	// ThroughputKBps is the sum of its leases' throughputKBps; null when
	// none has one (KCL 2.x leases).
	ThroughputKBps *float64 `json:"throughputKBps"`
	// MetricsTable is where its worker-metrics item was read; null without one.
	MetricsTable *string `json:"metricsTable"`
	// The table's lease assignment mode, the same in every row (ownerMode).
	Assignment       *string `json:"assignment"`
	AssignmentReason *string `json:"assignmentReason"`
	ClientVersion    *string `json:"clientVersion"`
	TableMigration   *string `json:"tableMigration"`
	Layout           *string `json:"layout"`
}

func ownersJSON(o *inspect.Owners, sampled bool) []OwnerJSON {
	mode := ownerModeOf(o.Mode)
	metrics := map[string]inspect.WorkerMetrics{}
	for _, m := range o.Metrics {
		metrics[m.Worker] = m
	}
	out := make([]OwnerJSON, 0, len(o.Workers))
	for _, w := range o.Workers {
		j := OwnerJSON{Worker: w.Worker, Leases: len(w.Shards), FairShare: o.FairShare, Shards: cmdutil.OrEmpty(w.Shards),
			CPU: []float64{}, Leader: o.Leader != "" && o.Leader == w.Worker, ThroughputKBps: w.ThroughputKBps}
		j.Assignment, j.AssignmentReason, j.ClientVersion, j.TableMigration, j.Layout = mode.Assignment, mode.AssignmentReason, mode.ClientVersion, mode.TableMigration, mode.Layout
		if sampled {
			n := w.Expired
			j.Expired, j.Renewals = &n, w.Renewals
		}
		if m, ok := metrics[w.Worker]; ok {
			if !m.LastUpdate.IsZero() {
				t := m.LastUpdate.UTC()
				j.LastUpdate = &t
			}
			if m.CPU != nil {
				j.CPU = m.CPU
			}
			if m.Table != "" {
				t := m.Table
				j.MetricsTable = &t
			}
		}
		out = append(out, j)
	}
	return out
}

func renderOwners(f *cmdutil.Factory, format string, o *inspect.Owners, sampled bool) error {
	return cmdutil.NewPrinter(f.IO, format).Print(cmdutil.Output{
		Items: func() any { return ownersJSON(o, sampled) },
		CSV:   OwnersCSVColumns,
		Rows: func() [][]string {
			var recs [][]string
			for _, r := range ownersJSON(o, sampled) {
				recs = append(recs, []string{r.Worker, strconv.Itoa(r.Leases), strconv.Itoa(r.FairShare), strings.Join(r.Shards, ";"), kbps(r.ThroughputKBps)})
			}
			return recs
		},
		Text: func(p *cmdutil.Printer) error { return ownersTable(p, f.Clock.Now, o, sampled) },
	})
}

func ownersTable(p *cmdutil.Printer, now func() time.Time, o *inspect.Owners, sampled bool) error {
	header := []string{"WORKER", "LEASES", "FAIR-SHARE", "BALANCE"}
	if sampled {
		header = append(header, "RENEWALS", "EXPIRED")
	}
	// The throughput column only where some lease carries one (KCL 3.x).
	withKBps := false
	for _, w := range o.Workers {
		withKBps = withKBps || w.ThroughputKBps != nil
	}
	if withKBps {
		header = append(header, "KBPS")
	}
	header = append(header, "SHARDS")
	var recs [][]string
	for _, r := range ownersJSON(o, sampled) {
		// The leader is named under the table, not in the cell: a cell
		// with a space would shift every later column for awk.
		rec := []string{r.Worker, strconv.Itoa(r.Leases), strconv.Itoa(r.FairShare), fmt.Sprintf("%+d", r.Leases-r.FairShare)}
		if sampled {
			rec = append(rec, strconv.FormatInt(*r.Renewals, 10), strconv.Itoa(*r.Expired))
		}
		if withKBps {
			v := "-"
			if t := r.ThroughputKBps; t != nil {
				v = strconv.FormatFloat(*t, 'f', 1, 64)
			}
			rec = append(rec, v)
		}
		shards := strings.Join(r.Shards, ",")
		if !p.Wide() && len(r.Shards) > 4 {
			shards = strings.Join(r.Shards[:4], ",") + fmt.Sprintf(",…(+%d)", len(r.Shards)-4)
		}
		recs = append(recs, append(rec, shards))
	}
	if len(recs) == 0 {
		p.Empty("no worker holds a lease")
	} else if err := p.Table(header, recs); err != nil {
		return err
	}
	st := p.Styles()
	p.Blank()
	p.Println(st.Dim.Render(fmt.Sprintf("%s, %s, fair share %d", cmdutil.Plural(o.Leases, "lease"), cmdutil.Plural(len(o.Workers), "worker"), o.FairShare)))
	if o.Leader != "" {
		where := ""
		if o.LeaderTable != "" {
			where = " (lock in " + o.LeaderTable + ")"
		}
		p.Println(st.Dim.Render("KCL 3.x leader: " + o.Leader + where))
	}
	if o.Mode != nil {
		for _, l := range p.Wrap("", modeLine(o.Mode)) {
			p.Println(st.Dim.Render(l))
		}
	}
	if o.Imbalanced {
		for _, l := range p.Wrap("imbalanced: ", "workers differ by more than one lease (KCL 2.x steals one lease per taker run, every 20s by default)") {
			p.Println(st.Warn.Render(l))
		}
	}
	if len(o.Unassigned) > 0 {
		p.Println(st.Warn.Render(fmt.Sprintf("unassigned: %s (%s)", cmdutil.Plural(len(o.Unassigned), "lease"), strings.Join(o.Unassigned, ","))))
	}
	if len(o.Metrics) > 0 {
		p.Blank()
		var mrecs [][]string
		for _, m := range o.Metrics {
			age := ""
			if !m.LastUpdate.IsZero() {
				age = cmdutil.HumanDuration(now().Sub(m.LastUpdate))
			}
			var cpu []string
			for _, v := range m.CPU {
				cpu = append(cpu, strconv.FormatFloat(v, 'f', -1, 64))
			}
			rec := []string{m.Worker, age, strings.Join(cpu, ",")}
			if p.Wide() {
				rec = append(rec, m.Table)
			}
			mrecs = append(mrecs, rec)
		}
		mheader := []string{"WORKER-METRICS", "LAST-UPDATE-AGE", "CPU"}
		if p.Wide() {
			mheader = append(mheader, "TABLE")
		}
		if err := p.Table(mheader, mrecs); err != nil {
			return err
		}
	}
	return nil
}

// OwnersCSVColumns are leases owners's CSV header.
var OwnersCSVColumns = []string{"worker", "leases", "fairShare", "shards", "throughputKBps"}

// kbps writes a throughput, "" when unknown.
func kbps(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}
