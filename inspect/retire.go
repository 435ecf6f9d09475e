package inspect

import (
	"context"
	"time"

	"github.com/kcltool/kcltool/internal/clock"
)

// Blocker is what stops a stream consumer from being deregistered, as the
// application's lease table tells it: deregistering a consumer that a
// running Java KCL application reads with ends its open shards
// (docs/efo.md), so the rule errs on the side of refusing.
type Blocker int

const (
	// NoBlocker: the table exists and no lease counter moved during the
	// sample (or there was no sample, which proves nothing either way:
	// the caller decides whether to go on unchecked).
	NoBlocker Blocker = iota
	// BlockedTableMissing: the application's lease table does not exist,
	// so nothing says whether an application still reads with the
	// consumer (it may have named its table otherwise).
	BlockedTableMissing
	// BlockedAppRunning: a lease counter moved during the sample, so a
	// worker of the application runs.
	BlockedAppRunning
)

// RetireBlocker is the liveness rule of consumers deregister: a missing
// table blocks, because it is no evidence that the application stopped;
// a lease renewed during the sample blocks (Live); held leases alone do
// not, since a stopped KCL worker leaves its name on its leases.
func (a *AppActivity) RetireBlocker() Blocker {
	switch {
	case a.Missing:
		return BlockedTableMissing
	case a.Live():
		return BlockedAppRunning
	}
	return NoBlocker
}

// CheckRetired reads the application's lease table sample apart and
// applies RetireBlocker: the check consumers deregister makes before it
// deregisters. A missing table is a blocker, not an error.
func CheckRetired(ctx context.Context, api TableAPI, table string, sample time.Duration, clk clock.Clock) (*AppActivity, Blocker, error) {
	a, err := ReadAppActivity(ctx, api, table, sample, clk)
	if err != nil {
		return nil, NoBlocker, err
	}
	return a, a.RetireBlocker(), nil
}
