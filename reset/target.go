package reset

import (
	"errors"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

// Target is where a reset moves checkpoints. Exactly one field is set.
type Target struct {
	// To is leasecore.TRIM_HORIZON or leasecore.LATEST.
	To string
	// At is a point in time; Ago says it was given as a duration before now
	// (only for the description).
	At  time.Time
	Ago time.Duration
	// Sequence is an explicit checkpoint for a single shard: a sequence
	// number of that shard, or TRIM_HORIZON, LATEST or SHARD_END.
	Sequence *leasecore.SequenceNumber
	// Positions are checkpoints per lease key, read from a file.
	Positions []Position
	// File names the file Positions came from, for the description.
	File string
	// Invalid are the entries of File that cannot be used: the plan is
	// refused unless SkipInvalid, when they are skipped and named.
	Invalid     []InvalidEntry
	SkipInvalid bool
}

// Position is one lease's checkpoint in a positions file or an export.
type Position struct {
	LeaseKey   string
	Checkpoint leasecore.SequenceNumber
}

// Validate checks that exactly one target is set and is one a reset may
// write.
func (t Target) Validate() error {
	n := 0
	if t.To != "" {
		n++
		if t.To != leasecore.TRIM_HORIZON && t.To != leasecore.LATEST {
			return errors.New("the target position must be TRIM_HORIZON or LATEST")
		}
	}
	if !t.At.IsZero() {
		n++
	}
	if t.Sequence != nil {
		n++
	}
	if t.Positions != nil || t.File != "" {
		n++
	}
	if n != 1 {
		return errors.New("give exactly one target")
	}
	return nil
}

// needsStream reports whether the target reads the stream: every target but
// a positions file, which says exactly what to write.
func (t Target) needsStream() bool { return t.Positions == nil && t.File == "" }

// String describes the target for plan headers and file names.
func (t Target) String() string {
	switch {
	case t.To != "":
		return t.To
	case !t.At.IsZero() && t.Ago > 0:
		return stamp(t.At) + " (" + t.Ago.String() + " ago)"
	case !t.At.IsZero():
		return stamp(t.At)
	case t.Sequence != nil:
		return describeCheckpoint(*t.Sequence)
	}
	return "positions from " + t.File
}
