package shards

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// LineageJSON is the documented JSON shape of one `shards lineage` node
// (docs/json.md; the key list is jsonSchemas["shards lineage"]). Every key
// is always present: what a shard does not have is null, lists are [].
type LineageJSON struct {
	ShardID               string            `json:"shardId"`
	ParentShardID         *string           `json:"parentShardId"`
	AdjacentParentShardID *string           `json:"adjacentParentShardId"`
	ChildShardIDs         []string          `json:"childShardIds"`
	Open                  bool              `json:"open"`
	StartingHashKey       string            `json:"startingHashKey"`
	EndingHashKey         string            `json:"endingHashKey"`
	Share                 float64           `json:"share"`
	Lease                 *lineageLeaseJSON `json:"lease"`
}

// lineageLeaseJSON is the lease part of a lineage node.
type lineageLeaseJSON struct {
	LeaseKey                    string            `json:"leaseKey"`
	LeaseOwner                  *string           `json:"leaseOwner"`
	Checkpoint                  string            `json:"checkpoint"`
	CheckpointSubSequenceNumber int64             `json:"checkpointSubSequenceNumber"`
	State                       string            `json:"state"`
	BlockedBy                   []string          `json:"blockedBy"`
	Waiting                     cmdutil.OptString `json:"waiting"`
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func toLineageJSON(n *inspect.LineageNode) LineageJSON {
	j := LineageJSON{ShardID: n.ShardID, ParentShardID: strPtr(n.ParentShardID), AdjacentParentShardID: strPtr(n.AdjacentParentShardID),
		ChildShardIDs: cmdutil.OrEmpty(n.ChildShardIDs), Open: n.Open, StartingHashKey: n.HashRange.Start.String(),
		EndingHashKey: n.HashRange.End.String(), Share: n.Share()}
	if n.Lease != nil {
		lj := &lineageLeaseJSON{LeaseKey: n.Lease.LeaseKey, LeaseOwner: strPtr(n.Lease.LeaseOwner), Checkpoint: n.Lease.Checkpoint.SequenceNumber,
			CheckpointSubSequenceNumber: n.Lease.Checkpoint.SubSequenceNumber, State: string(n.State), BlockedBy: cmdutil.OrEmpty(cmdutil.BlockerIDs(n.BlockedBy))}
		lj.Waiting = cmdutil.OptString(waitingText(n.BlockedBy))
		j.Lease = lj
	}
	return j
}

func waitingText(bs []reshard.Blocker) string {
	var parts []string
	for _, b := range bs {
		parts = append(parts, b.String())
	}
	return strings.Join(parts, "; ")
}

func renderLineage(streams *cmdutil.IOStreams, format string, l *inspect.Lineage) error {
	return cmdutil.NewPrinter(streams, format).Print(cmdutil.Output{
		Items: func() any {
			order := l.Graph.TopoOrder()
			out := make([]LineageJSON, 0, len(order))
			for _, id := range order {
				out = append(out, toLineageJSON(l.Nodes[id]))
			}
			return out
		},
		CSV: LineageCSVColumns,
		Rows: func() [][]string {
			var rows [][]string
			for _, id := range l.Graph.TopoOrder() {
				j := toLineageJSON(l.Nodes[id])
				row := []string{j.ShardID, cmdutil.Deref(j.ParentShardID), cmdutil.Deref(j.AdjacentParentShardID), strings.Join(j.ChildShardIDs, ";"),
					strconv.FormatBool(j.Open), j.StartingHashKey, j.EndingHashKey, strconv.FormatFloat(j.Share, 'f', -1, 64), "", "", ""}
				if j.Lease != nil {
					row[8], row[9], row[10] = cmdutil.Deref(j.Lease.LeaseOwner), j.Lease.Checkpoint, j.Lease.State
				}
				rows = append(rows, row)
			}
			return rows
		},
		Write: map[string]func(io.Writer) error{cmdutil.FormatDot: func(w io.Writer) error { return writeDot(w, l) }},
		Text:  func(p *cmdutil.Printer) error { return writeTree(p, l) },
	})
}

// LineageCSVColumns is the header of `shards lineage -o csv`, the same
// with or without --app.
var LineageCSVColumns = []string{"shardId", "parentShardId", "adjacentParentShardId", "childShardIds", "open",
	"startingHashKey", "endingHashKey", "share", "leaseOwner", "checkpoint", "state"}

// treeSpace is a no-break space (U+00A0). The tree drawing is made of it
// instead of plain spaces so the drawing and the shard id are one field for
// awk, cut -d' ' and read: the columns after it keep their numbers at every
// depth. It looks the same on a terminal.
const treeSpace = "\u00a0"

var (
	treeBranch     = "├──" + treeSpace
	treeLastBranch = "└──" + treeSpace
	treeIndent     = "│" + strings.Repeat(treeSpace, 3)
	treeLastIndent = strings.Repeat(treeSpace, 4)
)

// writeTree prints the lineage as a table whose first column is the tree:
// roots first, each child indented under its parent. A merge child is
// printed under both parents; ALSO-UNDER names the other one, and under the
// second it is not expanded again. No cell holds a space, and a missing
// value is "-", so every line has the same number of fields.
func writeTree(p *cmdutil.Printer, l *inspect.Lineage) error {
	wide := p.Wide()
	st := p.Styles()
	header := []string{"SHARD", "SHARE", "STATUS"}
	if l.WithLeases {
		header = append(header, "OWNER", "CHECKPOINT", "STATE", "WAITING-ON")
	}
	header = append(header, "ALSO-UNDER")
	if wide {
		header = append(header, "HASH-RANGE")
		if l.WithLeases {
			header = append(header, "SUBSEQ", "LEASE-KEY")
		}
	}
	var rows [][]string
	expanded := map[string]bool{}
	var walk func(id, prefix string, last, root bool, via string)
	walk = func(id, prefix string, last, root bool, via string) {
		n := l.Nodes[id]
		branch, next := "", ""
		if !root {
			branch, next = treeBranch, treeIndent
			if last {
				branch, next = treeLastBranch, treeLastIndent
			}
		}
		rows = append(rows, nodeRow(prefix+branch, n, via, l.WithLeases, wide, p.Fit()))
		if expanded[id] {
			return
		}
		expanded[id] = true
		kids := n.ChildShardIDs
		for i, k := range kids {
			if _, ok := l.Nodes[k]; ok {
				walk(k, prefix+next, i == len(kids)-1, false, id)
			}
		}
	}
	for _, id := range l.Graph.Roots() {
		walk(id, "", true, true, "")
	}
	// Leases of shards the stream does not have are rows too, so a script
	// sees every lease; STATE says what they are.
	for _, o := range l.Orphans {
		row := []string{orphanShard(o), "", "", o.Owner, p.Short(o.Checkpoint.SequenceNumber), "orphan-lease", "", ""}
		if wide {
			row = append(row, "", cmdutil.Itoa(o.Checkpoint.SubSequenceNumber), o.LeaseKey)
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		p.Empty("stream %q has no shards", l.Stream)
		return nil
	}
	// On a narrow terminal these go before shard ids would break: STATE
	// says a shard waits on its parent; ALSO-UNDER repeats the tree.
	p.Spare("ALSO-UNDER", "SHARE", "WAITING-ON")
	if err := p.Table(header, rows); err != nil {
		return err
	}
	if len(l.Orphans) > 0 {
		p.Blank()
		for _, line := range p.Wrap("orphan-lease: ", fmt.Sprintf("%s of shards the stream does not have (trimmed, or a deleted or recreated stream)",
			cmdutil.Plural(len(l.Orphans), "lease"))) {
			p.Println(st.Warn.Render(line))
		}
		for _, o := range l.Orphans {
			if o.Blocking {
				p.Println(st.Warn.Render(fmt.Sprintf("%s blocks %s until it is at SHARD_END or removed", o.LeaseKey, strings.Join(o.Children, ","))))
			}
		}
	}
	return nil
}

// nodeRow is one shard's row: tree and id, share, status, and with --app
// its lease; "" cells print as "-".
func nodeRow(tree string, n *inspect.LineageNode, via string, withLeases, wide, short bool) []string {
	status := "closed"
	if n.Open {
		status = "open"
	}
	row := []string{tree + n.ShardID, fmt.Sprintf("%.1f%%", n.Share()*100), status}
	if withLeases {
		if n.Lease == nil {
			row = append(row, "", "", "", "")
		} else {
			row = append(row, n.Lease.LeaseOwner, cmdutil.Shorten(n.Lease.Checkpoint.SequenceNumber, short), string(n.State),
				strings.Join(cmdutil.BlockerIDs(n.BlockedBy), ","))
		}
	}
	also := ""
	if n.IsMergeChild() {
		also = n.ParentShardID
		if also == via {
			also = n.AdjacentParentShardID
		}
	}
	row = append(row, also)
	if wide {
		row = append(row, cmdutil.HashRange(n.HashRange.Start.String(), n.HashRange.End.String()))
		if withLeases {
			if n.Lease == nil {
				row = append(row, "", "")
			} else {
				row = append(row, cmdutil.Itoa(n.Lease.Checkpoint.SubSequenceNumber), n.Lease.LeaseKey)
			}
		}
	}
	return row
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeDot renders the lineage for Graphviz: closed shards grey, open ones
// bold, merge edges from the adjacent parent dashed.
func writeDot(w io.Writer, l *inspect.Lineage) error {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %q {\n  rankdir=TB;\n  node [shape=box, fontname=\"Helvetica\"];\n", l.Stream)
	for _, id := range l.Graph.TopoOrder() {
		n := l.Nodes[id]
		label := fmt.Sprintf("%s\\n%.1f%% %s", id, n.Share()*100, map[bool]string{true: "open", false: "closed"}[n.Open])
		if n.Lease != nil {
			label += fmt.Sprintf("\\n%s %s", dash(n.Lease.LeaseOwner), checkpointLabel(n.Lease.Checkpoint))
			label += "\\n" + string(n.State)
		}
		style := "color=gray40, fontcolor=gray40"
		if n.Open {
			style = "style=bold"
		}
		fmt.Fprintf(&b, "  %q [label=\"%s\", %s];\n", id, label, style)
	}
	for _, e := range l.Graph.Edges() {
		attr := ""
		if e.Adjacent {
			attr = " [style=dashed, label=\"merge\"]"
		}
		fmt.Fprintf(&b, "  %q -> %q%s;\n", e.Parent, e.Child, attr)
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// checkpointLabel is whole: dot is a format for tools, and only a fitted
// table shortens (docs/output.md). Graphviz wraps nothing, so a long label
// makes a wide node, not a wrong one.
func checkpointLabel(cp leasecore.SequenceNumber) string {
	return cp.SequenceNumber
}

func orphanShard(o reshard.Orphan) string {
	if o.ShardID != "" {
		return o.ShardID
	}
	return o.LeaseKey
}
