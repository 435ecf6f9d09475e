package cmd

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// lineageJSON is the documented JSON shape of one `shards lineage` node.
type lineageJSON struct {
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
	LeaseKey                    string   `json:"leaseKey"`
	LeaseOwner                  *string  `json:"leaseOwner"`
	Checkpoint                  string   `json:"checkpoint"`
	CheckpointSubSequenceNumber int64    `json:"checkpointSubSequenceNumber"`
	State                       string   `json:"state"`
	BlockedBy                   []string `json:"blockedBy"`
	Waiting                     string   `json:"waiting,omitempty"`
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func toLineageJSON(n *inspect.LineageNode) lineageJSON {
	j := lineageJSON{ShardID: n.ShardID, ParentShardID: strPtr(n.ParentShardID), AdjacentParentShardID: strPtr(n.AdjacentParentShardID),
		ChildShardIDs: n.ChildShardIDs, Open: n.Open, StartingHashKey: n.HashRange.Start.String(),
		EndingHashKey: n.HashRange.End.String(), Share: n.Share()}
	if j.ChildShardIDs == nil {
		j.ChildShardIDs = []string{}
	}
	if n.Lease != nil {
		lj := &lineageLeaseJSON{LeaseKey: n.Lease.LeaseKey, LeaseOwner: strPtr(n.Lease.LeaseOwner), Checkpoint: n.Lease.Checkpoint.SequenceNumber,
			CheckpointSubSequenceNumber: n.Lease.Checkpoint.SubSequenceNumber, State: string(n.State), BlockedBy: blockerIDs(n.BlockedBy)}
		if lj.BlockedBy == nil {
			lj.BlockedBy = []string{}
		}
		lj.Waiting = waitingText(n.BlockedBy)
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

func renderLineage(io *IOStreams, format string, l *inspect.Lineage) error {
	order := l.Graph.TopoOrder()
	switch format {
	case FormatJSON:
		out := make([]lineageJSON, 0, len(order))
		for _, id := range order {
			out = append(out, toLineageJSON(l.Nodes[id]))
		}
		return writeJSONLines(io.Out, out)
	case FormatCSV:
		var rows [][]string
		for _, id := range order {
			j := toLineageJSON(l.Nodes[id])
			row := []string{j.ShardID, deref(j.ParentShardID), deref(j.AdjacentParentShardID), strings.Join(j.ChildShardIDs, ";"),
				strconv.FormatBool(j.Open), j.StartingHashKey, j.EndingHashKey, strconv.FormatFloat(j.Share, 'f', -1, 64), "", "", ""}
			if j.Lease != nil {
				row[8], row[9], row[10] = deref(j.Lease.LeaseOwner), j.Lease.Checkpoint, j.Lease.State
			}
			rows = append(rows, row)
		}
		return writeCSV(io.Out, []string{"shardId", "parentShardId", "adjacentParentShardId", "childShardIds", "open",
			"startingHashKey", "endingHashKey", "share", "leaseOwner", "checkpoint", "state"}, rows)
	case formatDot:
		return writeDot(io.Out, l)
	}
	return writeTree(io, l, format == FormatWide)
}

// writeTree prints roots first, each child indented under its parent. A
// merge child is printed under both parents; under the second it is marked
// and not expanded again.
func writeTree(io *IOStreams, l *inspect.Lineage, wide bool) error {
	st := io.Styles()
	expanded := map[string]bool{}
	var walk func(id, prefix string, last, root bool, via string)
	walk = func(id, prefix string, last, root bool, via string) {
		n := l.Nodes[id]
		branch, next := "", ""
		if !root {
			branch, next = "├── ", "│   "
			if last {
				branch, next = "└── ", "    "
			}
		}
		line := prefix + branch + nodeText(n, l, wide, io.OutTTY)
		if n.IsMergeChild() {
			other := n.ParentShardID
			if other == via {
				other = n.AdjacentParentShardID
			}
			line += st.Dim.Render(fmt.Sprintf("  (merge: also under %s)", other))
		}
		fmt.Fprintln(io.Out, line)
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
	if len(l.Orphans) > 0 {
		fmt.Fprintln(io.Out)
		fmt.Fprintln(io.Out, st.Warn.Render("leases of shards the stream does not have (trimmed, or a deleted or recreated stream):"))
		for _, o := range l.Orphans {
			line := fmt.Sprintf("  %s  owner %s  checkpoint %s", o.LeaseKey, dash(o.Owner), shorten(o.Checkpoint.SequenceNumber, io.OutTTY))
			if o.Blocking {
				line += "  blocks " + strings.Join(o.Children, ",")
			}
			fmt.Fprintln(io.Out, line)
		}
	}
	return nil
}

func nodeText(n *inspect.LineageNode, l *inspect.Lineage, wide, tty bool) string {
	status := "closed"
	if n.Open {
		status = "open"
	}
	text := fmt.Sprintf("%s  %5.1f%%  %s", n.ShardID, n.Share()*100, status)
	if wide {
		text += "  [" + n.HashRange.Start.String() + " … " + n.HashRange.End.String() + "]"
	}
	if !l.WithLeases {
		return text
	}
	if n.Lease == nil {
		return text + "  no lease"
	}
	text += fmt.Sprintf("  %s  %s  %s", dash(n.Lease.LeaseOwner), shorten(n.Lease.Checkpoint.SequenceNumber, tty), n.State)
	if len(n.BlockedBy) > 0 {
		text += ": " + waitingText(n.BlockedBy)
	}
	return text
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

func checkpointLabel(cp leasecore.SequenceNumber) string {
	return shorten(cp.SequenceNumber, true)
}
