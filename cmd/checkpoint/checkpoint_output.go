package checkpoint

import (
	"fmt"
	"strings"
	"time"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/inspect"
)

// LagJSON is the documented JSON shape of one `checkpoint diff` row
// (docs/json.md; the key list is jsonSchemas["checkpoint diff"]). Every key
// is always present; what does not apply is null, lists are [].
// Fields may be added, never renamed.
type LagJSON struct {
	StreamName                  cmdutil.OptString `json:"streamName"`
	ShardID                     string            `json:"shardId"`
	LeaseKey                    *string           `json:"leaseKey"`
	LeaseOwner                  *string           `json:"leaseOwner"`
	Checkpoint                  *string           `json:"checkpoint"`
	CheckpointSubSequenceNumber *int64            `json:"checkpointSubSequenceNumber"`
	ShardStatus                 *string           `json:"shardStatus"`
	MillisBehindLatest          *int64            `json:"millisBehindLatest"`
	State                       string            `json:"state"`
	BlockedBy                   []string          `json:"blockedBy"`
	Note                        cmdutil.OptString `json:"note"`
}

func toLagJSON(r inspect.LagRow) LagJSON {
	j := LagJSON{StreamName: cmdutil.OptString(r.Stream), ShardID: r.ShardID, MillisBehindLatest: r.MillisBehindLatest,
		State: string(r.State), BlockedBy: cmdutil.OrEmpty(cmdutil.BlockerIDs(r.BlockedBy)), Note: cmdutil.OptString(r.Note)}
	if r.Lease != nil {
		j.LeaseKey, j.Checkpoint = &r.Lease.LeaseKey, &r.Lease.Checkpoint.SequenceNumber
		j.CheckpointSubSequenceNumber = &r.Lease.Checkpoint.SubSequenceNumber
		if r.Lease.LeaseOwner != "" {
			j.LeaseOwner = &r.Lease.LeaseOwner
		}
	}
	if r.Shard != nil {
		status := shardStatus(r)
		j.ShardStatus = &status
	}
	return j
}

func shardStatus(r inspect.LagRow) string {
	switch {
	case r.Shard == nil:
		return ""
	case r.Shard.Open:
		return "open"
	default:
		return "closed"
	}
}

func multiStream(l *inspect.Lag) bool {
	for _, r := range l.Rows {
		if r.Lease != nil && r.Lease.StreamName != "" {
			return true
		}
	}
	return false
}

func renderLag(io *cmdutil.IOStreams, format string, l *inspect.Lag) error {
	return cmdutil.NewPrinter(io, format).Print(cmdutil.Output{
		Items: func() any {
			out := make([]LagJSON, 0, len(l.Rows))
			for _, r := range l.Rows {
				out = append(out, toLagJSON(r))
			}
			return out
		},
		CSV: LagCSVColumns,
		Rows: func() [][]string {
			rows := make([][]string, 0, len(l.Rows))
			for _, r := range l.Rows {
				j := toLagJSON(r)
				rows = append(rows, []string{r.Stream, r.ShardID, cmdutil.Deref(j.LeaseKey), cmdutil.Deref(j.LeaseOwner), cmdutil.Deref(j.Checkpoint),
					shardStatus(r), millis(r.MillisBehindLatest), string(r.State), strings.Join(j.BlockedBy, ";")})
			}
			return rows
		},
		Text: func(p *cmdutil.Printer) error { return lagTable(p, l) },
	})
}

func lagTable(p *cmdutil.Printer, l *inspect.Lag) error {
	multi := multiStream(l)
	wide := p.Wide()
	header := []string{"SHARD", "LEASE-OWNER", "CHECKPOINT", "SHARD-STATUS", "BEHIND", "STATE"}
	if multi {
		header = append([]string{"STREAM"}, header...)
	}
	if wide {
		header = append(header, "SUBSEQ", "PARENTS", "LEASE-KEY", "NOTE")
	}
	st := p.Styles()
	rows := make([][]string, 0, len(l.Rows))
	for _, r := range l.Rows {
		j := toLagJSON(r)
		state := string(r.State)
		if len(j.BlockedBy) > 0 {
			state += " on " + strings.Join(j.BlockedBy, ",")
		}
		row := []string{r.ShardID, cmdutil.Deref(j.LeaseOwner), p.Short(cmdutil.Deref(j.Checkpoint)), shardStatus(r), behind(r.MillisBehindLatest), state}
		if multi {
			row = append([]string{r.Stream}, row...)
		}
		if wide {
			var sub, parents string
			if r.Lease != nil {
				sub = cmdutil.Itoa(r.Lease.Checkpoint.SubSequenceNumber)
			}
			if r.Shard != nil {
				parents = strings.Join(r.Shard.ParentShardIDs(), ",")
			}
			row = append(row, sub, parents, cmdutil.Deref(j.LeaseKey), r.Note)
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		p.Empty("no shards or leases found")
		return nil
	}
	// On a narrow terminal these go before shard ids would break: STATE
	// already tells a closed shard's story; the checkpoint is for -o wide.
	p.Spare("SHARD-STATUS", "CHECKPOINT")
	if err := p.Table(header, rows); err != nil {
		return err
	}
	counts := l.Counts()
	var parts []string
	for _, s := range inspect.LagStates {
		if n := counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	p.Blank()
	for _, line := range p.Wrap(cmdutil.Plural(len(l.Rows), "row")+": ", strings.Join(parts, ", ")) {
		p.Println(st.Dim.Render(line))
	}
	return nil
}

func millis(m *int64) string {
	if m == nil {
		return ""
	}
	return cmdutil.Itoa(*m)
}

// behind renders millisBehindLatest for the table; unknown is "" (shown as
// "-"). JSON keeps the milliseconds.
func behind(m *int64) string {
	if m == nil {
		return ""
	}
	return cmdutil.HumanDuration(time.Duration(*m) * time.Millisecond)
}

// LagCSVColumns are checkpoint diff's (and lag's) CSV header.
var LagCSVColumns = []string{"streamName", "shardId", "leaseKey", "leaseOwner", "checkpoint", "shardStatus",
	"millisBehindLatest", "state", "blockedBy"}
