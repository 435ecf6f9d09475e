package doctor

import (
	"bytes"
	"github.com/kcltool/kcltool/cmd/cmdutil"
	"testing"
)

// TestDoctorLiveViewRedrawsOnATerminal: on a terminal each report replaces
// the last; piped, reports follow one another.
func TestDoctorLiveViewRedrawsOnATerminal(t *testing.T) {
	for _, tty := range []bool{true, false} {
		var out bytes.Buffer
		v := &liveView{io: &cmdutil.IOStreams{Out: &out, OutTTY: tty}}
		for range 2 {
			if err := v.show(func() error { out.WriteString("report\n"); return nil }, cmdutil.FormatTable); err != nil {
				t.Fatal(err)
			}
		}
		want := "report\n\nreport\n"
		if tty {
			want = "\x1b[H\x1b[2Jreport\n\x1b[H\x1b[2Jreport\n"
		}
		if out.String() != want {
			t.Errorf("tty=%v: %q, want %q", tty, out.String(), want)
		}
	}
}
