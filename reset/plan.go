package reset

import (
	"slices"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/leasecore"
)

// Action is what applying one Change does.
type Action string

// The actions of a plan.
const (
	ActionUpdate  Action = "update"    // set the checkpoint of an existing lease
	ActionCreate  Action = "create"    // create a lease that does not exist
	ActionRestore Action = "restore"   // put an exported lease item back, attribute for attribute
	ActionDelete  Action = "delete"    // delete a lease that is not in the export (import --prune)
	ActionNone    Action = "unchanged" // nothing to write
	ActionSkip    Action = "skip"      // cannot be written; Reason says why
)

// Writes reports whether applying the action writes to the table.
func (a Action) Writes() bool {
	switch a {
	case ActionUpdate, ActionCreate, ActionRestore, ActionDelete:
		return true
	}
	return false
}

// Change is one row of a plan: one lease, before and after.
type Change struct {
	LeaseKey string
	ShardID  string
	Action   Action
	// Before is the lease's checkpoint as planning read it; nil when there
	// is no lease.
	Before *leasecore.SequenceNumber
	// After is the checkpoint the lease gets; nil for a delete or a skip.
	After  *leasecore.SequenceNumber
	Reason string

	// Current is the lease item as planning read it, nil when absent. Every
	// write is conditioned on the item still being in this state.
	Current map[string]types.AttributeValue
	// Lease is Current decoded (the zero Lease when absent).
	Lease leasecore.Lease
	// Item is the item a create or restore writes. A restore's
	// leaseCounter is replaced at write time by the current one plus one.
	Item map[string]types.AttributeValue
}

// InHandoff reports a KCL 3.x lease in graceful handoff: checkpointOwner is the
// worker still processing it, leaseOwner the next one (docs/kcl-compat.md,
// Leader and graceful handoff).
func (c Change) InHandoff() bool { return c.Lease.CheckpointOwner != "" }

// Plan is a reset or an import, read and decided but not applied.
type Plan struct {
	// Kind is "reset" or "import".
	Kind  string
	Table string
	// Target describes where the checkpoints go, for headers and files:
	// "TRIM_HORIZON", "2026-11-01T10:00:00.000Z", "positions from f.csv",
	// "export backup.json".
	Target   string
	Changes  []Change
	Warnings []string
	// ReadAt is when the table was read; the liveness sample starts there.
	ReadAt time.Time
	// Scan is that read, raw items included: the liveness check compares
	// every lease counter of the table with a second read.
	Scan leasecore.ScanResult
	// Invalid are the entries of InvalidFile that could not be used and
	// were skipped (--skip-invalid): applying the rest is a problem to
	// report (exit 3), not a success.
	Invalid     []InvalidEntry
	InvalidFile string
}

// Counts tallies the changes by action.
func (p *Plan) Counts() map[Action]int {
	m := map[Action]int{}
	for _, c := range p.Changes {
		m[c.Action]++
	}
	return m
}

func (p *Plan) warnf(format string, args ...any) {
	p.Warnings = append(p.Warnings, sprintf(format, args...))
}

// seqPtr returns a pointer to a copy of n.
func seqPtr(n leasecore.SequenceNumber) *leasecore.SequenceNumber { return &n }

// changeFor starts the row of an existing lease.
func changeFor(l leasecore.Lease, raw map[string]types.AttributeValue) Change {
	return Change{LeaseKey: l.LeaseKey, ShardID: l.ShardIDOrKey(), Before: seqPtr(l.Checkpoint), Current: raw, Lease: l}
}

// setAfter decides between an update and no change.
func (c *Change) setAfter(after leasecore.SequenceNumber, reason string) {
	c.After, c.Reason = seqPtr(after), reason
	c.Action = ActionUpdate
	if c.Before != nil && sameCheckpoint(*c.Before, after) {
		c.Action = ActionNone
	}
	if c.Action.Writes() && c.InHandoff() {
		c.Reason += "; in a KCL 3.x handoff (" + c.Lease.CheckpointOwner + " → " + c.Lease.LeaseOwner + "): applying needs --force"
	}
}

// sameCheckpoint is exact equality, sub-sequence number included (KCL's
// equals; Compare would call any two SHARD_END values equal).
func sameCheckpoint(a, b leasecore.SequenceNumber) bool { return a == b }

// orderParentsFirst sorts changes by lease key, then moves every lease
// after the leases of its parents, so that applying in order creates a
// recreated parent before its child is reset: a crash in between must not
// leave a child free to start while its parent is missing (a missing parent
// lease counts as finished).
func orderParentsFirst(changes []Change) []Change {
	sort.SliceStable(changes, func(i, j int) bool { return changes[i].LeaseKey < changes[j].LeaseKey })
	idx := make(map[string]int, len(changes))
	for i, c := range changes {
		idx[c.LeaseKey] = i
	}
	parents := func(c Change) []string {
		l := c.Lease
		if c.Current == nil && c.Item != nil {
			if dl, err := leasecore.DecodeLease(c.Item); err == nil {
				l = dl
			}
		}
		return l.ParentLeaseKeys()
	}
	out := make([]Change, 0, len(changes))
	state := make([]int, len(changes)) // 0 new, 1 visiting, 2 done
	var visit func(i int)
	visit = func(i int) {
		if state[i] != 0 {
			return
		}
		state[i] = 1
		ps := parents(changes[i])
		slices.Sort(ps)
		for _, p := range ps {
			if j, ok := idx[p]; ok {
				visit(j)
			}
		}
		state[i] = 2
		out = append(out, changes[i])
	}
	for i := range changes {
		visit(i)
	}
	return out
}
