package fleetsim

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/kcltool/kcltool/coordination/assignment"
)

// TestLedKCLToolThroughputSteady: with the default strategy (throughput;
// the simulated workers report no CPU, so the leader balances them on the
// synthetic throughput metric) a kcltool-led fleet moves nothing in steady
// state, and a new worker still gets its share within a few runs. The
// KCL's rules moved a lease a minute here for many minutes (0.75 a minute
// at 64 × 2 in the steady window): every worker above the average counted
// as above its operating range (coordination/assignment, variance.go).
func TestLedKCLToolThroughputSteady(t *testing.T) {
	for _, p := range []Point{{Leases: 16, Workers: 4}, {Leases: 64, Workers: 2}} {
		t.Run(p.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := MeasureLed(LeadKCLTool, KCLTool3, p, LedOptions{Warmup: 2 * time.Minute, Steady: 3 * time.Minute, SkipKill: true,
					Assign: assignment.Config{Strategy: assignment.ByThroughput}})
				t.Logf("%+v", r)
				if r.MovesPerMin != 0 {
					t.Errorf("steady state moved %.2f leases a minute", r.MovesPerMin)
				}
				// Balancing runs at the first run and every third:
				// the joiner's first balancing run comes within three.
				if !r.JoinDone || r.JoinRuns > 3 {
					t.Errorf("new worker held %d of its %d leases after %s (%d runs)", r.JoinHeld, r.JoinFair, r.Join, r.JoinRuns)
				}
			})
		})
	}
}
