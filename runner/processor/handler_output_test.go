package processor

import (
	"bytes"
	"testing"
)

func TestCountMarkersIgnoresCase(t *testing.T) {
	for in, want := range map[string]int{
		`{"batchItemFailures":[]}`:                     1,
		`{"BatchItemFailures":[]}`:                     1,
		`{"BATCHITEMFAILURES":[]} "batchitemfailures"`: 2,
		`batchItemFailures without quotes`:             0,
		`"batchItemFailure" "batchItemFailuresX" ""`:   0,
		`"""batchItemFailures"`:                        1,
		`"batchItemFailures""batchItemFailures"`:       2,
		`"batchItemFailures`:                           0,
	} {
		if got := countMarkers([]byte(in)); got != want {
			t.Errorf("countMarkers(%q) = %d, want %d", in, got, want)
		}
	}
}

// A mis-cased response key split across writes is still counted, so that a
// response beyond the kept window is noticed in any case.
func TestStdoutCaptureCountsMisCasedMarkersAcrossWrites(t *testing.T) {
	var c stdoutCapture
	in := []byte(`{"BatchItemFailures":[]}`)
	for i := range in {
		_, _ = c.Write(in[i : i+1])
	}
	if c.markers != 1 || !bytes.Equal(c.window, in) {
		t.Fatalf("markers %d, window %q", c.markers, c.window)
	}
}
