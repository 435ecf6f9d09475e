package fleetsim

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

// TestKCL3Fleets runs a small KCL 3.x fleet of each engine under the
// leader: every lease gets held, and each handoff (the leader's write to
// checkpointOwner cleared) takes at most one renewal interval plus the
// batch in flight, in simulated time.
func TestKCL3Fleets(t *testing.T) {
	bound := (leasecore.Config{}).WithDefaults().RenewInterval + time.Second
	for _, e := range []Engine{KCLTool3, Java3} {
		t.Run(string(e), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := MeasureKCL3(e, Point{Leases: 8, Workers: 2}, time.Minute, 4, time.Second, 1)
				if len(r.Handoff) != 4 {
					t.Fatalf("handoffs: %v", r.Handoff)
				}
				for _, d := range r.Handoff {
					if d > bound {
						t.Errorf("handoff took %s, more than a renewal interval plus the batch (%s)", d, bound)
					}
				}
				if r.DiscoveryReadPerWorkerMin <= 0 {
					t.Errorf("no discovery reads measured")
				}
				t.Logf("%s: assign %s, handoffs %v, discovery %.2f units/worker/min, renewals %.2f/lease/min", e, r.Assign, r.Handoff, r.DiscoveryReadPerWorkerMin, r.RenewalsPerLeaseMin)
			})
		})
	}
}
