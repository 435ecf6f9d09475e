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

// ConfirmedByReadBack is Result.ConfirmedBy for a write whose answer was
// lost or failed and that a read of the lease showed applied.
const ConfirmedByReadBack = "read-back"

// Read-backs after a write whose outcome is unknown: several attempts with
// doubling waits, so that the throttling or the network fault that lost the
// write's answer does not also decide its report.
const (
	readBackAttempts = 6
	readBackBackoff  = 200 * time.Millisecond
	readBackMaxWait  = 3 * time.Second
)

// settle makes one write and reports what it did to the table. A write
// that succeeded is applied. Any other write is ambiguous until the lease
// is read back: a timeout, a reset connection or a 5xx may have applied
// it, and the SDK retries a write internally, so a conditional write whose
// first attempt applied but lost its answer fails its condition on the
// retry, against our own write. So every failed write is read back and the
// lease compared with what we meant to write:
//
//   - as meant: applied, confirmed by the read-back;
//   - as read before the write (the guarded attributes): not applied, and
//     nobody else wrote it; the write is tried once more with the same
//     condition;
//   - anything else: someone else changed the lease; changed is true and
//     the result is skipped.
//
// A read-back that keeps failing leaves the outcome unknown: failed, which
// stops the rest of the plan.
func (w *writer) settle(ctx context.Context, c Change, read map[string]types.AttributeValue, changedMsg string) (r Result, changed bool) {
	meant := w.meant(c, read)
	for try := 0; ; try++ {
		err := w.write(ctx, c, read)
		if err == nil {
			return Result{Outcome: OutcomeApplied}, false
		}
		fresh, rerr := w.readBack(ctx, c.LeaseKey)
		if rerr != nil {
			return Result{Outcome: OutcomeFailed, Detail: fmt.Sprintf("%v; whether it applied is unknown: reading the lease back failed too: %v", describeWriteError(err), rerr)}, false
		}
		switch {
		case sameItem(meant, fresh):
			return Result{Outcome: OutcomeApplied, ConfirmedBy: ConfirmedByReadBack}, false
		case sameGuarded(read, fresh) && try == 0:
			continue
		case sameGuarded(read, fresh):
			return Result{Outcome: OutcomeFailed, Detail: describeWriteError(err).Error() + " (tried twice; the lease is unchanged)"}, false
		}
		return Result{Outcome: OutcomeSkipped, Detail: changedMsg}, true
	}
}

func describeWriteError(err error) error {
	if err == errChanged {
		return fmt.Errorf("the conditional write failed")
	}
	return err
}

// readBack reads the lease strongly consistently, retrying with backoff.
func (w *writer) readBack(ctx context.Context, key string) (map[string]types.AttributeValue, error) {
	var item map[string]types.AttributeValue
	err := backoff.Retry(ctx, w.sleep, readBackWait, func(attempt int) (bool, error) {
		got, err := getItem(ctx, w.api, w.table, key)
		if err == nil || attempt == readBackAttempts || ctx.Err() != nil {
			item = got
			return false, err
		}
		return true, err
	}, backoff.OpErrorOnCut)
	return item, err
}

// readBackWait doubles from readBackBackoff up to readBackMaxWait.
func readBackWait(attempt int) time.Duration {
	wait := readBackBackoff
	for range attempt - 1 {
		wait = min(2*wait, readBackMaxWait)
	}
	return wait
}

func (w *writer) sleep(ctx context.Context, d time.Duration) error {
	return clock.Sleep(ctx, w.clock, d)
}

// meant is the item a change's write leaves in the table, nil for a delete.
func (w *writer) meant(c Change, read map[string]types.AttributeValue) map[string]types.AttributeValue {
	switch c.Action {
	case ActionCreate:
		return c.Item
	case ActionRestore:
		return w.restoreItem(c, read)
	case ActionUpdate:
		return checkpointedItem(read, *c.After)
	}
	return nil
}

// checkpointedItem is read as writeCheckpoint leaves it.
func checkpointedItem(read map[string]types.AttributeValue, cp leasecore.SequenceNumber) map[string]types.AttributeValue {
	out := make(map[string]types.AttributeValue, len(read))
	for k, v := range read {
		out[k] = v
	}
	for _, a := range checkpointRemoves {
		delete(out, a)
	}
	out[leasecore.AttrCheckpoint] = &types.AttributeValueMemberS{Value: cp.SequenceNumber}
	out[leasecore.AttrCheckpointSubSequenceNumber] = numberAV(cp.SubSequenceNumber)
	out[leasecore.AttrOwnerSwitchesSinceCheckpoint] = numberAV(0)
	out[leasecore.AttrLeaseCounter] = numberAV(counterOf(read) + 1)
	return out
}

// sameItem compares whole items; nil is an absent item.
func sameItem(a, b map[string]types.AttributeValue) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return EqualItems(a, b) && EqualItems(b, a)
}

// sameGuarded says the lease is as read in every attribute the writes'
// conditions compare: a write conditioned on read would still apply.
func sameGuarded(read, fresh map[string]types.AttributeValue) bool {
	if read == nil || fresh == nil {
		return read == nil && fresh == nil
	}
	pick := func(item map[string]types.AttributeValue) map[string]types.AttributeValue {
		out := map[string]types.AttributeValue{}
		for _, a := range append([]string{leasecore.AttrLeaseKey}, guardedAttrs...) {
			if v, ok := item[a]; ok {
				out[a] = v
			}
		}
		return out
	}
	return sameItem(pick(read), pick(fresh))
}
