package inspect

import (
	"context"
	"github.com/kcltool/kcltool/internal/clock"
	"sort"
	"time"

	"github.com/kcltool/kcltool/internal/awserr"
)

// AppActivity is what a lease table says about whether its application is
// running: who holds leases (one read) and, over a sample, whose leases
// were renewed. It answers "is anyone still using this application's
// stream consumer?" before the consumer is deregistered.
type AppActivity struct {
	Table string
	// Missing: the table does not exist, so no KCL application by this
	// name runs (a KCL worker creates its table at start), unless the
	// application named its table otherwise.
	Missing bool
	// Leases counts the leases that are not at SHARD_END.
	Leases int
	// Holders are the owners of those leases, sorted.
	Holders []string
	// Sample is the time between the two reads; zero for one read.
	Sample time.Duration
	// Moved are the keys of the leases whose counter moved during the
	// sample (renewed, taken or checkpointed), sorted; Workers their owners.
	Moved, Workers []string
}

// Live reports whether a lease was renewed during the sample: some worker
// of the application is running (KCL's own expiry rule, docs/kcl-compat.md,
// Expiry, seen from the other side). Without a sample it is false: held
// leases alone do not prove a running worker, since a stopped KCL worker
// leaves its name on its leases.
func (a *AppActivity) Live() bool { return len(a.Moved) > 0 }

// ReadAppActivity reads the lease table once, or twice sample apart, and
// says who holds and who renews leases. A missing table is not an error:
// it is reported as Missing.
func ReadAppActivity(ctx context.Context, api TableAPI, table string, sample time.Duration, clk clock.Clock) (*AppActivity, error) {
	a := &AppActivity{Table: table}
	l, err := ListLeases(ctx, api, table, ListOptions{Sample: sample, Clock: clk})
	if awserr.NotFound(err) {
		a.Missing = true
		return a, nil
	}
	if err != nil {
		return nil, err
	}
	a.Sample = l.Sample
	holders, workers := map[string]bool{}, map[string]bool{}
	for _, r := range l.Leases {
		if !r.Checkpoint.IsShardEnd() {
			a.Leases++
			if r.LeaseOwner != "" {
				holders[r.LeaseOwner] = true
			}
		}
		// Any moved counter counts, a finished shard's too: something
		// wrote the lease.
		if r.RenewalsSeen != nil && *r.RenewalsSeen != 0 {
			a.Moved = append(a.Moved, r.LeaseKey)
			for _, w := range []string{r.LeaseOwner, r.CheckpointOwner} {
				if w != "" {
					workers[w] = true
				}
			}
		}
	}
	a.Holders, a.Workers = sortedSet(holders), sortedSet(workers)
	sort.Strings(a.Moved)
	return a, nil
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
