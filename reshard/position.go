package reshard

import (
	"fmt"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

// Position is the application's initial position in the stream.
type Position struct {
	// Kind is leasecore.TRIM_HORIZON, leasecore.LATEST or
	// leasecore.AT_TIMESTAMP; the same string becomes the checkpoint of
	// leases created at the initial position.
	Kind string
	// Timestamp is the AT_TIMESTAMP instant. It picks the shards of a new
	// application but is never stored: KCL writes the bare sentinel and each
	// worker substitutes its own configured timestamp (docs/kcl-compat.md,
	// Sentinel checkpoints), so the runner supplies it when it builds the shard
	// iterator.
	Timestamp time.Time
}

// TrimHorizon, Latest and AtTimestamp build the three initial positions.
func TrimHorizon() Position            { return Position{Kind: leasecore.TRIM_HORIZON} }
func Latest() Position                 { return Position{Kind: leasecore.LATEST} }
func AtTimestamp(t time.Time) Position { return Position{Kind: leasecore.AT_TIMESTAMP, Timestamp: t} }

// Validate rejects kinds KCL has no InitialPositionInStream for, and an
// AT_TIMESTAMP without a timestamp.
func (p Position) Validate() error {
	switch p.Kind {
	case leasecore.TRIM_HORIZON, leasecore.LATEST:
		return nil
	case leasecore.AT_TIMESTAMP:
		if p.Timestamp.IsZero() {
			return fmt.Errorf("initial position AT_TIMESTAMP needs a timestamp")
		}
		return nil
	}
	return fmt.Errorf("initial position %q is not TRIM_HORIZON, LATEST or AT_TIMESTAMP", p.Kind)
}
