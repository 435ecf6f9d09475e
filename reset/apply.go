package reset

import (
	"context"
	"fmt"
	"github.com/kcltool/kcltool/internal/clock"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/backoff"
	"github.com/kcltool/kcltool/leasecore"
)

// Outcome is what happened to one change when a plan was applied.
type Outcome string

// The outcomes of applying a change.
const (
	OutcomeApplied   Outcome = "applied"
	OutcomeUnchanged Outcome = "unchanged"     // nothing to write
	OutcomeSkipped   Outcome = "skipped"       // the lease changed since the plan: not written
	OutcomeFailed    Outcome = "failed"        // the write failed
	OutcomeNotRun    Outcome = "not-attempted" // an earlier write failed
)

// Result is the outcome of one change, parallel to Plan.Changes.
type Result struct {
	Outcome Outcome
	Detail  string
	// ConfirmedBy is ConfirmedByReadBack for a write whose answer was lost
	// or failed and that a read of the lease showed applied; "" otherwise.
	ConfirmedBy string
}

// ExecOptions tunes Execute.
type ExecOptions struct {
	// Sample is the window in which no lease counter may move: from the
	// plan's read to a second read (KCL's failover time, 10s, is the
	// natural value: a live worker renews several times within it).
	Sample time.Duration
	// Force applies to a live application and to leases in a KCL 3.x
	// handoff: each write is conditioned on the lease as just read.
	Force bool
	Clock clock.Clock
	// Backup receives the whole table as last read, after the checks and
	// before the first write, and the keys of the leases about to be
	// written (the plan's writes less those that changed since the plan):
	// exactly what an undo restores. An error stops everything, nothing
	// written.
	Backup func(e *Export, writes []string) error
	// ForceRetries bounds how often a forced write re-reads a lease that a
	// live worker keeps renewing between the read and the write (default 5).
	ForceRetries int
	// Progress, when set, hears of each write attempted: done of total.
	Progress func(done, total int)
}

// Execution is the outcome of Execute.
type Execution struct {
	Results []Result
	// Live is what the sample saw; with Force it names the workers that
	// lose their leases.
	Live Liveness
}

// ConfirmedByReadBack returns how many writes a read-back showed applied.
func (x *Execution) ConfirmedByReadBack() int {
	n := 0
	for _, r := range x.Results {
		if r.ConfirmedBy == ConfirmedByReadBack {
			n++
		}
	}
	return n
}

// Written returns the keys of the leases the execution may have written:
// applied, or failed with the outcome unknown (a failed write whose
// read-back failed too). Skipped and not-attempted leases were not
// written, so an undo must leave them alone.
func (x *Execution) Written(p *Plan) []string {
	var keys []string
	for i, r := range x.Results {
		if r.Outcome == OutcomeApplied || r.Outcome == OutcomeFailed {
			keys = append(keys, p.Changes[i].LeaseKey)
		}
	}
	return keys
}

// Count returns how many changes had the outcome.
func (x *Execution) Count(o Outcome) int {
	n := 0
	for _, r := range x.Results {
		if r.Outcome == o {
			n++
		}
	}
	return n
}

// Execute applies a plan. Without Force it refuses (*RefusedError, before
// any write) when a lease counter moved during the sample or a lease to
// write is in a KCL 3.x handoff. A lease that changed since the plan is
// reported as skipped and not written; the conditional write catches what
// the second read did not. Writes go parents first; after a failed write
// the rest are not attempted, so a child is never reset without its
// recreated parent.
func Execute(ctx context.Context, api TableAPI, p *Plan, opt ExecOptions) (*Execution, error) {
	clk := opt.Clock
	if clk == nil {
		clk = clock.RealClock()
	}
	if !opt.Force {
		var handoff []string
		for _, c := range p.Changes {
			if c.Action.Writes() && c.InHandoff() {
				handoff = append(handoff, c.LeaseKey)
			}
		}
		if len(handoff) > 0 {
			return nil, &RefusedError{Handoff: handoff}
		}
	}
	if err := clock.Sleep(ctx, clk, p.ReadAt.Add(opt.Sample).Sub(clk.Now())); err != nil {
		return nil, err
	}
	second, err := leasecore.ScanTable(ctx, api, p.Table, leasecore.ScanOptions{ConsistentRead: true, KeepItems: true})
	if err != nil {
		return nil, fmt.Errorf("scan lease table %q: %w", p.Table, err)
	}
	x := &Execution{Results: make([]Result, len(p.Changes)), Live: compareReads(p.Scan, second)}
	if x.Live.Live() && !opt.Force {
		return nil, &RefusedError{Workers: x.Live.Workers, Moved: x.Live.Moved}
	}
	now := itemsByKey(second.Items)
	for i, c := range p.Changes {
		switch {
		case !c.Action.Writes():
			x.Results[i] = Result{Outcome: OutcomeUnchanged, Detail: c.Reason}
		case !opt.Force:
			if why := changedSince(c, now[c.LeaseKey]); why != "" {
				x.Results[i] = Result{Outcome: OutcomeSkipped, Detail: why}
			}
		}
	}
	if opt.Backup != nil {
		var writes []string
		for i, c := range p.Changes {
			if x.Results[i].Outcome == "" {
				writes = append(writes, c.LeaseKey)
			}
		}
		if err := opt.Backup(NewExport(p.Table, clk.Now(), second.Items), writes); err != nil {
			return nil, fmt.Errorf("save the backup: %w (nothing was written)", err)
		}
	}
	w := &writer{api: api, table: p.Table, force: opt.Force, retries: opt.ForceRetries, clock: clk}
	if w.retries <= 0 {
		w.retries = 5
	}
	total, done := 0, 0
	for _, r := range x.Results {
		if r.Outcome == "" {
			total++
		}
	}
	failed := false
	for i, c := range p.Changes {
		if x.Results[i].Outcome != "" {
			continue
		}
		if failed {
			x.Results[i] = Result{Outcome: OutcomeNotRun, Detail: "an earlier write failed"}
			continue
		}
		x.Results[i] = w.apply(ctx, c)
		failed = x.Results[i].Outcome == OutcomeFailed
		if done++; opt.Progress != nil {
			opt.Progress(done, total)
		}
	}
	return x, nil
}

// changedSince says how the lease differs from what the plan read, "" when
// it does not.
func changedSince(c Change, now map[string]types.AttributeValue) string {
	switch {
	case c.Current == nil && now != nil:
		return "a lease " + c.LeaseKey + " was created since the plan"
	case c.Current == nil:
		return ""
	case now == nil:
		return "the lease was deleted since the plan"
	}
	if diff := diffAttributes(c.Current, now); len(diff) > 0 {
		return "the lease changed since the plan (" + listShort(diff) + ")"
	}
	return ""
}

// writer applies single changes.
type writer struct {
	api     TableAPI
	table   string
	force   bool
	retries int
	clock   clock.Clock
}

func (w *writer) apply(ctx context.Context, c Change) Result {
	if c.Action == ActionCreate {
		r, _ := w.settle(ctx, c, nil, "a lease "+c.LeaseKey+" was created since the plan")
		return r
	}
	read, note := c.Current, ""
	var r Result
	// No wait between tries: a forced write reads the lease again at once.
	noWait := func(int) time.Duration { return 0 }
	_ = backoff.Retry(ctx, w.sleep, noWait, func(attempt int) (bool, error) {
		if w.force {
			fresh, err := getItem(ctx, w.api, w.table, c.LeaseKey)
			if err != nil {
				r = Result{Outcome: OutcomeFailed, Detail: err.Error()}
				return false, nil
			}
			if fresh == nil {
				r = Result{Outcome: OutcomeSkipped, Detail: "the lease was deleted since the plan"}
				return false, nil
			}
			if !leasecore.IsLeaseItem(fresh) {
				r = Result{Outcome: OutcomeSkipped, Detail: "the item is no longer a lease"}
				return false, nil
			}
			read, note = fresh, liveNote(c.Current, fresh)
		}
		var changed bool
		r, changed = w.settle(ctx, c, read, "the lease changed since the plan (the conditional write failed)")
		// attempt-1 retries so far: w.retries of them after the first try.
		if changed && w.force && attempt <= w.retries {
			return true, nil // renewed between the read and the write: read again
		}
		if r.Outcome == OutcomeApplied {
			r.Detail = note
		}
		return false, nil
	})
	return r
}

func (w *writer) write(ctx context.Context, c Change, read map[string]types.AttributeValue) error {
	switch c.Action {
	case ActionCreate:
		return putItem(ctx, w.api, w.table, nil, c.Item)
	case ActionUpdate:
		return writeCheckpoint(ctx, w.api, w.table, read, *c.After)
	case ActionRestore:
		return putItem(ctx, w.api, w.table, read, w.restoreItem(c, read))
	case ActionDelete:
		return deleteLease(ctx, w.api, w.table, read)
	}
	return fmt.Errorf("no write for action %q", c.Action)
}

// restoreItem is the item a restore puts: the exported one with the
// counter after the one read.
func (w *writer) restoreItem(c Change, read map[string]types.AttributeValue) map[string]types.AttributeValue {
	item := withCounter(c.Item, counterOf(read)+1)
	if w.force {
		// The holder of a live lease must lose it: restoring its own
		// name would let it read the new counter as its own renewal.
		delete(item, leasecore.AttrLeaseOwner)
		delete(item, leasecore.AttrCheckpointOwner)
	}
	return item
}

// liveNote tells a forced write's result what the live application did to
// the lease since the plan.
func liveNote(planned, fresh map[string]types.AttributeValue) string {
	if planned == nil || counterOf(planned) == counterOf(fresh) {
		return ""
	}
	l, err := leasecore.DecodeLease(fresh)
	if err != nil || l.LeaseOwner == "" {
		return "renewed since the plan; written with --force"
	}
	return "held by " + l.LeaseOwner + " (renewed since the plan): it loses the lease"
}
