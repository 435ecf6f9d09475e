package processor

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/kcltool/kcltool/kinesisrec"
)

// funcHandler is a handler written in Go, for tests that only need
// outcomes.
type funcHandler func(Batch) Result

func (f funcHandler) Run(_ context.Context, b Batch) Result { return f(b) }

// Retrying is called as each run of records already handed to a handler
// starts (the runs whose KCLTOOL_ATTEMPT is above 1), before the handler
// runs: a batch that keeps failing is counted while it does. Here a poison
// record is bisected out and given up on.
func TestPolicyRetryingCountsEachRetryAsItStarts(t *testing.T) {
	retries := 0
	type run struct {
		first, last string
		attempt     int
		retriesSeen int
	}
	var runs []run
	h := funcHandler(func(b Batch) Result {
		runs = append(runs, run{b.Records[0].SequenceNumber, b.Records[len(b.Records)-1].SequenceNumber, b.Attempt, retries})
		if slices.ContainsFunc(b.Records, func(r kinesisrec.Record) bool { return r.SequenceNumber == "102" }) {
			return Result{Outcome: Failed}
		}
		return Result{Outcome: Succeeded}
	})
	p, _, _ := newPolicy(h)
	p.BisectOnError, p.MaxRetries, p.OnFailureDir = true, 1, t.TempDir()
	p.Retrying = func() { retries++ }
	var cps checkpoints
	st, err := p.Process(context.Background(), nil, testBatch(4), cps.fn)
	if err != nil {
		t.Fatal(err)
	}
	want := []run{
		{"100", "103", 1, 0}, // fails: bisected
		{"100", "101", 2, 1}, // a half: its records were handed before
		{"102", "103", 2, 2}, // fails: bisected
		{"102", "102", 3, 3}, // fails
		{"102", "102", 4, 4}, // fails again: given up on
		{"103", "103", 3, 5},
	}
	if !reflect.DeepEqual(runs, want) || retries != 5 || st.Skipped != 1 {
		t.Fatalf("runs (first, last, attempt, retries counted before it ran) %v, %d retries, %d skipped; want %v, 5, 1", runs, retries, st.Skipped, want)
	}
}
