package runner

import (
	"testing"
	"time"
)

// The hand-written arrival time formatter agrees with the layout.
func TestAppendArrivalMatchesLayout(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(2025, 3, 4, 5, 6, 7, 891_999_999, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.FixedZone("x", 5*3600)),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(1_700_000_000, 123_456_789),
	} {
		if got, want := string(appendArrival(nil, tm)), tm.UTC().Format(arrivalLayout); got != want {
			t.Errorf("%v: got %s, want %s", tm, got, want)
		}
	}
}
