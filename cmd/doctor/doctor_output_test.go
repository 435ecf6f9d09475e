package doctor

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/inspect/doctor"
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

// TestDoctorFirstLookIsMarked: --watch's first report, from one read, says
// so in the table and in JSON ("partial"); a full report does not.
func TestDoctorFirstLookIsMarked(t *testing.T) {
	for _, partial := range []bool{true, false} {
		var out bytes.Buffer
		rep := &doctor.Report{Table: "orders", Reads: 1, Partial: partial}
		if err := printDoctor(cmdutil.NewPrinter(&cmdutil.IOStreams{Out: &out}, cmdutil.FormatTable), rep, doctor.SeverityWarn); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(out.String(), "first look from one read"); got != partial {
			t.Errorf("partial=%v: table says first look: %v\n%s", partial, got, out.String())
		}
		if j := reportJSON(rep, doctor.SeverityWarn); j.Partial != partial {
			t.Errorf("partial=%v: JSON partial %v", partial, j.Partial)
		}
	}
}
