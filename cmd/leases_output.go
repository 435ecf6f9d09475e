package cmd

import (
	"bufio"
	"encoding/base64"
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/reshard"
)

// leaseJSON is the documented JSON shape of one lease (docs/json.md; the
// key list is jsonSchemas["leases ls"]). Keys are the KCL attribute names.
// Every key is always present: an attribute the item does not have is null,
// a list it does not have is []. Hash keys and sequence numbers are strings,
// other numbers are numbers. Fields may be added, never renamed.
type leaseJSON struct {
	LeaseKey                           string    `json:"leaseKey"`
	LeaseOwner                         optString `json:"leaseOwner"`
	LeaseCounter                       int64     `json:"leaseCounter"`
	OwnerSwitchesSinceCheckpoint       int64     `json:"ownerSwitchesSinceCheckpoint"`
	Checkpoint                         string    `json:"checkpoint"`
	CheckpointSubSequenceNumber        int64     `json:"checkpointSubSequenceNumber"`
	PendingCheckpoint                  optString `json:"pendingCheckpoint"`
	PendingCheckpointSubSequenceNumber *int64    `json:"pendingCheckpointSubSequenceNumber"`
	PendingCheckpointState             optString `json:"pendingCheckpointState"`
	ParentShardID                      []string  `json:"parentShardId"`
	ChildShardIDs                      []string  `json:"childShardIds"`
	StartingHashKey                    optString `json:"startingHashKey"`
	EndingHashKey                      optString `json:"endingHashKey"`
	ThroughputKBps                     *float64  `json:"throughputKBps"`
	CheckpointOwner                    optString `json:"checkpointOwner"`
	EntityType                         optString `json:"entityType"`
	StreamName                         optString `json:"streamName"`
	ShardID                            optString `json:"shardId"`
	State                              string    `json:"state"`
	BlockedBy                          []string  `json:"blockedBy"`
	RenewalsSeen                       *int64    `json:"renewalsSeen"`
}

func toLeaseJSON(r inspect.LeaseRow) leaseJSON {
	j := leaseJSON{
		LeaseKey: r.LeaseKey, LeaseOwner: optString(r.LeaseOwner), LeaseCounter: r.LeaseCounter,
		OwnerSwitchesSinceCheckpoint: r.OwnerSwitchesSinceCheckpoint,
		Checkpoint:                   r.Checkpoint.SequenceNumber,
		CheckpointSubSequenceNumber:  r.Checkpoint.SubSequenceNumber,
		ParentShardID:                orEmpty(r.ParentShardIDs), ChildShardIDs: orEmpty(r.ChildShardIDs),
		StartingHashKey: optString(r.StartingHashKey), EndingHashKey: optString(r.EndingHashKey),
		ThroughputKBps: r.ThroughputKBps, CheckpointOwner: optString(r.CheckpointOwner),
		EntityType: optString(r.EntityType), StreamName: optString(r.StreamName), ShardID: optString(r.ShardID),
		State: string(r.State), BlockedBy: orEmpty(blockerIDs(r.BlockedBy)), RenewalsSeen: r.RenewalsSeen,
	}
	if p := r.PendingCheckpoint; p != nil {
		j.PendingCheckpoint = optString(p.SequenceNumber)
		sub := p.SubSequenceNumber
		j.PendingCheckpointSubSequenceNumber = &sub
	}
	if r.PendingCheckpointState != nil {
		j.PendingCheckpointState = optString(base64.StdEncoding.EncodeToString(r.PendingCheckpointState))
	}
	return j
}

var leaseColumns = []string{"SHARD", "OWNER", "COUNTER", "CHECKPOINT", "SUBSEQ", "SWITCHES", "PARENTS", "STATE"}
var leaseWideColumns = []string{"CHILDREN", "CHECKPOINT-OWNER", "THROUGHPUT-KBPS", "HASH-RANGE", "STREAM", "LEASE-KEY"}

// leaseCSVColumns use the KCL attribute names, so the file reads back with
// `checkpoint import` and `checkpoint reset --from-file`.
var leaseCSVColumns = []string{"leaseKey", "shardId", "leaseOwner", "leaseCounter", "checkpoint",
	"checkpointSubSequenceNumber", "ownerSwitchesSinceCheckpoint", "parentShardId", "childShardIds",
	"checkpointOwner", "throughputKBps", "startingHashKey", "endingHashKey", "streamName", "state"}

// renderLeases prints the listing. JSON and CSV are written lease by lease
// as they are built, never a second copy of the whole table: a 100,000-lease
// listing would otherwise hold its rows twice at the end (docs/benchmarks.md,
// leases ls at scale). The bytes are writeJSONLines' and writeCSV's.
func renderLeases(streams *IOStreams, format string, l *inspect.Listing) error {
	return newPrinter(streams, format).Print(output{
		Write: map[string]func(w io.Writer) error{
			FormatJSON: func(w io.Writer) error { return writeLeasesJSON(w, l.Leases) },
			FormatCSV:  func(w io.Writer) error { return writeLeasesCSV(w, l.Leases) },
		},
		Text: func(p *Printer) error { return leasesTable(p, l) },
	})
}

// writeLeasesJSON writes the leases as writeJSONLines writes a []leaseJSON:
// an array, one compact object a line.
func writeLeasesJSON(w io.Writer, rows []inspect.LeaseRow) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	if len(rows) == 0 {
		bw.WriteString("[]\n")
		return bw.Flush()
	}
	bw.WriteString("[\n")
	var buf []byte
	for i := range rows {
		j := toLeaseJSON(rows[i])
		var err error
		if buf, err = j.appendJSON(buf[:0]); err != nil {
			return err
		}
		bw.WriteString("  ")
		bw.Write(buf)
		if i < len(rows)-1 {
			bw.WriteByte(',')
		}
		bw.WriteByte('\n')
	}
	bw.WriteString("]\n")
	return bw.Flush()
}

// writeLeasesCSV writes the header and one record per lease, RFC 4180.
func writeLeasesCSV(w io.Writer, rows []inspect.LeaseRow) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(jsonSchema("leases ls").CSV); err != nil {
		return err
	}
	rec := make([]string, len(leaseCSVColumns))
	for _, r := range rows {
		rec = append(rec[:0], r.LeaseKey, r.ShardIDOrKey(), r.LeaseOwner, itoa(r.LeaseCounter),
			r.Checkpoint.SequenceNumber, itoa(r.Checkpoint.SubSequenceNumber), itoa(r.OwnerSwitchesSinceCheckpoint),
			strings.Join(r.ParentShardIDs, ";"), strings.Join(r.ChildShardIDs, ";"), r.CheckpointOwner,
			floatStr(r.ThroughputKBps), r.StartingHashKey, r.EndingHashKey, r.StreamName, string(r.State))
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func leasesTable(p *Printer, l *inspect.Listing) error {
	wide := p.Wide()
	header := leaseColumns
	if wide {
		header = append(append([]string{}, leaseColumns...), leaseWideColumns...)
	}
	row := func(i int, cells []string) []string {
		r := &l.Leases[i]
		owner := r.LeaseOwner
		if r.CheckpointOwner != "" && !wide {
			owner = r.CheckpointOwner + "→" + r.LeaseOwner
		}
		cells = append(cells, r.ShardIDOrKey(), owner, itoa(r.LeaseCounter), p.Short(r.Checkpoint.SequenceNumber),
			itoa(r.Checkpoint.SubSequenceNumber), itoa(r.OwnerSwitchesSinceCheckpoint), strings.Join(r.ParentShardIDs, ","),
			stateCell(*r))
		if wide {
			cells = append(cells, strings.Join(r.ChildShardIDs, ","), r.CheckpointOwner, floatStr(r.ThroughputKBps),
				hashRange(r.StartingHashKey, r.EndingHashKey), r.StreamName, r.LeaseKey)
		}
		return cells
	}
	if len(l.Leases) == 0 {
		p.Empty("no leases in table %q match", l.Table)
	} else if err := p.TableOf(header, len(l.Leases), row); err != nil {
		return err
	}
	writeLeaseSummary(p, l)
	return nil
}

func stateCell(r inspect.LeaseRow) string {
	if r.State == inspect.StateWaitingOnParent {
		return string(r.State) + "(" + strings.Join(blockerIDs(r.BlockedBy), ",") + ")"
	}
	return string(r.State)
}

// writeLeaseSummary prints the counts under the table, and with --sample
// the renewals each owner made.
func writeLeaseSummary(p *Printer, l *inspect.Listing) {
	s := l.Summarize()
	st := p.Styles()
	line := fmt.Sprintf("%s, %s, %d unassigned, %d at SHARD_END", plural(s.Leases, "lease"), plural(s.Workers, "worker"), s.Unassigned, s.ShardEnd)
	if l.Sample > 0 {
		line += fmt.Sprintf(", %d expired", s.Expired)
	}
	line += fmt.Sprintf("; %s skipped", plural(s.NonLeases, "non-lease item"))
	if s.Malformed > 0 {
		line += fmt.Sprintf(", %s skipped", plural(s.Malformed, "malformed item"))
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

// nonLeaseJSON is one item of `leases ls --non-leases -o json`.
type nonLeaseJSON struct {
	LeaseKey   string    `json:"leaseKey"`
	EntityType optString `json:"entityType"`
}

func renderNonLeases(io *IOStreams, format string, l *inspect.Listing) error {
	rows := func() [][]string {
		rows := make([][]string, 0, len(l.NonLeases))
		for _, n := range l.NonLeases {
			rows = append(rows, []string{n.Key, n.EntityType})
		}
		return rows
	}
	return newPrinter(io, format).Print(output{
		Items: func() any {
			out := make([]nonLeaseJSON, 0, len(l.NonLeases))
			for _, n := range l.NonLeases {
				out = append(out, nonLeaseJSON{LeaseKey: n.Key, EntityType: optString(n.EntityType)})
			}
			return out
		},
		Schema: "leases ls --non-leases",
		Rows:   rows,
		Text: func(p *Printer) error {
			if len(l.NonLeases) == 0 {
				p.Empty("no non-lease items in table %q", l.Table)
				return nil
			}
			return p.Table([]string{"KEY", "ENTITY-TYPE"}, rows())
		},
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func floatStr(f *float64) string {
	if f == nil {
		return ""
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}

func hashRange(start, end string) string {
	if start == "" && end == "" {
		return ""
	}
	return start + "-" + end
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// blockerIDs lists the parent shard ids that hold a child back.
func blockerIDs(bs []reshard.Blocker) []string {
	if len(bs) == 0 {
		return nil
	}
	ids := make([]string, len(bs))
	for i, b := range bs {
		ids[i] = b.ShardID
	}
	return ids
}
