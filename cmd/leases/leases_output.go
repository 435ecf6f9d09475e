package leases

import (
	"encoding/base64"
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/inspect"
)

// LeaseJSON is one lease as kcltool prints it, built once per lease by
// leaseRow: the JSON object as it stands, and the values the CSV record
// (csvRecord) and the table's cells (cells) are taken from, so the three
// forms cannot drift apart. The JSON is the documented shape (docs/json.md;
// the key list is jsonSchemas["leases ls"]): keys are the KCL attribute
// names, every key is always present, an attribute the item does not have
// is null and a list it does not have is []. Hash keys and sequence numbers
// are strings, other numbers are numbers. Fields may be added, never
// renamed.
//
// Optional strings are *string, nil when empty, rather than OptString:
// encoding/json writes null for a nil pointer itself, where a MarshalJSON
// per field costs an allocation and a compaction of its result
// (docs/benchmarks.md). The pointers point into the lease, so building the
// row allocates nothing for them.
type LeaseJSON struct {
	LeaseKey                           string   `json:"leaseKey"`
	LeaseOwner                         *string  `json:"leaseOwner"`
	LeaseCounter                       int64    `json:"leaseCounter"`
	OwnerSwitchesSinceCheckpoint       int64    `json:"ownerSwitchesSinceCheckpoint"`
	Checkpoint                         string   `json:"checkpoint"`
	CheckpointSubSequenceNumber        int64    `json:"checkpointSubSequenceNumber"`
	PendingCheckpoint                  *string  `json:"pendingCheckpoint"`
	PendingCheckpointSubSequenceNumber *int64   `json:"pendingCheckpointSubSequenceNumber"`
	PendingCheckpointState             *string  `json:"pendingCheckpointState"`
	ParentShardID                      []string `json:"parentShardId"`
	ChildShardIDs                      []string `json:"childShardIds"`
	StartingHashKey                    *string  `json:"startingHashKey"`
	EndingHashKey                      *string  `json:"endingHashKey"`
	ThroughputKBps                     *float64 `json:"throughputKBps"`
	CheckpointOwner                    *string  `json:"checkpointOwner"`
	EntityType                         *string  `json:"entityType"`
	StreamName                         *string  `json:"streamName"`
	ShardID                            string   `json:"shardId"`
	State                              string   `json:"state"`
	BlockedBy                          []string `json:"blockedBy"`
	RenewalsSeen                       *int64   `json:"renewalsSeen"`
}

// leaseRow is the one row builder of `leases ls`: JSON, CSV and table are
// all written from what it returns.
func leaseRow(r *inspect.LeaseRow) LeaseJSON {
	l := r.Lease
	j := LeaseJSON{
		LeaseKey: l.LeaseKey, LeaseOwner: nonEmpty(&l.LeaseOwner), LeaseCounter: l.LeaseCounter,
		OwnerSwitchesSinceCheckpoint: l.OwnerSwitchesSinceCheckpoint,
		Checkpoint:                   l.Checkpoint.SequenceNumber,
		CheckpointSubSequenceNumber:  l.Checkpoint.SubSequenceNumber,
		ParentShardID:                cmdutil.OrEmpty(l.ParentShardIDs), ChildShardIDs: cmdutil.OrEmpty(l.ChildShardIDs),
		StartingHashKey: nonEmpty(&l.StartingHashKey), EndingHashKey: nonEmpty(&l.EndingHashKey),
		ThroughputKBps: l.ThroughputKBps, CheckpointOwner: nonEmpty(&l.CheckpointOwner),
		EntityType: nonEmpty(&l.EntityType), StreamName: nonEmpty(&l.StreamName),
		// shardId is the shard id in every table, as csv, lag and reset
		// give it: the attribute when the item has one (multi-stream), else
		// taken from a multi-stream key, else the key itself. It used to be
		// the attribute as stored, null in single-stream tables, and
		// a `jq .shardId` got nulls (CHANGELOG).
		ShardID: l.ShardIDOrKey(),
		State:   string(r.State), BlockedBy: cmdutil.OrEmpty(cmdutil.BlockerIDs(r.BlockedBy)), RenewalsSeen: r.RenewalsSeen,
	}
	if p := l.PendingCheckpoint; p != nil {
		j.PendingCheckpoint = nonEmpty(&p.SequenceNumber)
		j.PendingCheckpointSubSequenceNumber = &p.SubSequenceNumber
	}
	if l.PendingCheckpointState != nil {
		s := base64.StdEncoding.EncodeToString(l.PendingCheckpointState)
		j.PendingCheckpointState = &s
	}
	return j
}

// nonEmpty is s, or nil (JSON null) when *s is empty.
func nonEmpty(s *string) *string {
	if *s == "" {
		return nil
	}
	return s
}

var leaseColumns = []string{"SHARD", "OWNER", "COUNTER", "CHECKPOINT", "SUBSEQ", "SWITCHES", "PARENTS", "STATE"}
var leaseWideColumns = []string{"CHILDREN", "CHECKPOINT-OWNER", "THROUGHPUT-KBPS", "HASH-RANGE", "STREAM", "LEASE-KEY"}

// LeaseCSVColumns use the KCL attribute names, so the file reads back with
// `checkpoint import` and `checkpoint reset --from-file`.
var LeaseCSVColumns = []string{"leaseKey", "shardId", "leaseOwner", "leaseCounter", "checkpoint",
	"checkpointSubSequenceNumber", "ownerSwitchesSinceCheckpoint", "parentShardId", "childShardIds",
	"checkpointOwner", "throughputKBps", "startingHashKey", "endingHashKey", "streamName", "state"}

// csvRecord appends the lease's CSV fields (LeaseCSVColumns) to rec.
func (j *LeaseJSON) csvRecord(rec []string) []string {
	return append(rec, j.LeaseKey, j.ShardID, cmdutil.Deref(j.LeaseOwner), cmdutil.Itoa(j.LeaseCounter),
		j.Checkpoint, cmdutil.Itoa(j.CheckpointSubSequenceNumber), cmdutil.Itoa(j.OwnerSwitchesSinceCheckpoint),
		strings.Join(j.ParentShardID, ";"), strings.Join(j.ChildShardIDs, ";"), cmdutil.Deref(j.CheckpointOwner),
		cmdutil.FloatStr(j.ThroughputKBps), cmdutil.Deref(j.StartingHashKey), cmdutil.Deref(j.EndingHashKey), cmdutil.Deref(j.StreamName), j.State)
}

// cells appends the lease's table cells (leaseColumns, and with -o wide
// leaseWideColumns) to buf.
func (j *LeaseJSON) cells(p *cmdutil.Printer, wide bool, buf []string) []string {
	owner := cmdutil.Deref(j.LeaseOwner)
	if j.CheckpointOwner != nil && !wide {
		owner = *j.CheckpointOwner + "→" + owner
	}
	buf = append(buf, j.ShardID, owner, cmdutil.Itoa(j.LeaseCounter), p.Short(j.Checkpoint),
		cmdutil.Itoa(j.CheckpointSubSequenceNumber), cmdutil.Itoa(j.OwnerSwitchesSinceCheckpoint), strings.Join(j.ParentShardID, ","),
		stateCell(j.State, j.BlockedBy))
	if wide {
		buf = append(buf, strings.Join(j.ChildShardIDs, ","), cmdutil.Deref(j.CheckpointOwner), cmdutil.FloatStr(j.ThroughputKBps),
			cmdutil.HashRange(cmdutil.Deref(j.StartingHashKey), cmdutil.Deref(j.EndingHashKey)), cmdutil.Deref(j.StreamName), j.LeaseKey)
	}
	return buf
}

// renderLeases prints the listing. JSON and CSV are written lease by lease
// as they are built, never a second copy of the whole table: a 100,000-lease
// listing would otherwise hold its rows twice at the end (docs/benchmarks.md,
// leases ls at scale). The bytes are writeJSONLines' and writeCSV's.
func renderLeases(streams *cmdutil.IOStreams, format string, l *inspect.Listing) error {
	return cmdutil.NewPrinter(streams, format).Print(cmdutil.Output{
		Write: map[string]func(w io.Writer) error{
			cmdutil.FormatJSON: func(w io.Writer) error { return writeLeasesJSON(w, l.Leases) },
			cmdutil.FormatCSV:  func(w io.Writer) error { return writeLeasesCSV(w, l.Leases) },
		},
		Text: func(p *cmdutil.Printer) error { return leasesTable(p, l) },
	})
}

// writeLeasesJSON writes the leases as writeJSONLines writes a []LeaseJSON:
// an array, one compact object a line, each by encoding/json.
func writeLeasesJSON(w io.Writer, rows []inspect.LeaseRow) error {
	var j LeaseJSON // one row reused: a pointer to a fresh one would escape per lease
	return cmdutil.WriteJSONLinesOf(w, len(rows), func(i int) any {
		j = leaseRow(&rows[i])
		return &j
	})
}

// writeLeasesCSV writes the header and one record per lease, RFC 4180.
func writeLeasesCSV(w io.Writer, rows []inspect.LeaseRow) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(LeaseCSVColumns); err != nil {
		return err
	}
	rec := make([]string, len(LeaseCSVColumns))
	for i := range rows {
		j := leaseRow(&rows[i])
		if err := cw.Write(j.csvRecord(rec[:0])); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func leasesTable(p *cmdutil.Printer, l *inspect.Listing) error {
	wide := p.Wide()
	header := leaseColumns
	if wide {
		header = append(append([]string{}, leaseColumns...), leaseWideColumns...)
	}
	row := func(i int, cells []string) []string {
		j := leaseRow(&l.Leases[i])
		return j.cells(p, wide, cells)
	}
	if len(l.Leases) == 0 {
		p.Empty("no leases in table %q match", l.Table)
	} else {
		// On a narrow terminal these go before shard ids would break: the
		// sub-sequence and switches are rarely read, and STATE names the
		// parent a lease waits on.
		p.Spare("SUBSEQ", "SWITCHES", "COUNTER", "PARENTS")
		if err := p.TableOf(header, len(l.Leases), row); err != nil {
			return err
		}
	}
	writeLeaseSummary(p, l)
	return nil
}

// stateCell is the STATE cell: a child waiting on its parents names them.
func stateCell(state string, blockedBy []string) string {
	if state == string(inspect.StateWaitingOnParent) {
		return state + "(" + strings.Join(blockedBy, ",") + ")"
	}
	return state
}

// writeLeaseSummary prints the counts under the table, and with --sample
// the renewals each owner made.
func writeLeaseSummary(p *cmdutil.Printer, l *inspect.Listing) {
	s := l.Summarize()
	st := p.Styles()
	line := fmt.Sprintf("%s, %s, %d unassigned, %d at SHARD_END", cmdutil.Plural(s.Leases, "lease"), cmdutil.Plural(s.Workers, "worker"), s.Unassigned, s.ShardEnd)
	if l.Sample > 0 {
		line += fmt.Sprintf(", %d expired", s.Expired)
	}
	line += fmt.Sprintf("; %s skipped", cmdutil.Plural(s.NonLeases, "non-lease item"))
	if s.Malformed > 0 {
		line += fmt.Sprintf(", %s skipped", cmdutil.Plural(s.Malformed, "malformed item"))
	}
	p.Blank()
	p.Println(st.Dim.Render(line))
	if l.Sample > 0 {
		owners := make([]string, 0, len(l.OwnerRenewals))
		for o := range l.OwnerRenewals {
			owners = append(owners, o)
		}
		sort.Strings(owners)
		p.Println(fmt.Sprintf("renewals seen in %s:", l.Sample))
		for _, o := range owners {
			n := l.OwnerRenewals[o]
			text := fmt.Sprintf("  %s  %d", o, n)
			if n == 0 {
				text = st.Bad.Render(text + "  (not renewing: its leases will be taken)")
			}
			p.Println(text)
		}
	}
}

// NonLeaseJSON is one item of `leases ls --non-leases -o json`.
type NonLeaseJSON struct {
	LeaseKey   string            `json:"leaseKey"`
	EntityType cmdutil.OptString `json:"entityType"`
}

// nonLeaseRows is the one row builder of `leases ls --non-leases`: the JSON
// items, and the CSV records and table rows taken from them.
func nonLeaseRows(l *inspect.Listing) []NonLeaseJSON {
	out := make([]NonLeaseJSON, 0, len(l.NonLeases))
	for _, n := range l.NonLeases {
		out = append(out, NonLeaseJSON{LeaseKey: n.Key, EntityType: cmdutil.OptString(n.EntityType)})
	}
	return out
}

func renderNonLeases(io *cmdutil.IOStreams, format string, l *inspect.Listing) error {
	rows := func() [][]string {
		rows := make([][]string, 0, len(l.NonLeases))
		for _, j := range nonLeaseRows(l) {
			rows = append(rows, []string{j.LeaseKey, string(j.EntityType)})
		}
		return rows
	}
	return cmdutil.NewPrinter(io, format).Print(cmdutil.Output{
		Items: func() any { return nonLeaseRows(l) },
		CSV:   NonLeaseCSVColumns,
		Rows:  rows,
		Text: func(p *cmdutil.Printer) error {
			if len(l.NonLeases) == 0 {
				p.Empty("no non-lease items in table %q", l.Table)
				return nil
			}
			return p.Table([]string{"KEY", "ENTITY-TYPE"}, rows())
		},
	})
}

// NonLeaseCSVColumns are leases ls --non-leases's CSV header.
var NonLeaseCSVColumns = []string{"leaseKey", "entityType"}
