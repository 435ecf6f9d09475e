package fleetsim

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

// stopSlack is added to the evict's bound (one leader round plus one
// discovery interval): the model charges no latency, so what is left is
// the fake clock's stepping between the leader's round, the discovery
// query and the read that follows it, well under a second.
const stopSlack = time.Second

// measureStops runs MeasureStop3 for each seed in one synctest bubble each.
func measureStops(t *testing.T, p Point, mode StopMode, seeds []uint64) []time.Duration {
	var out []time.Duration
	for _, seed := range seeds {
		synctest.Test(t, func(t *testing.T) {
			out = append(out, MeasureStop3(p, mode, seed).Regain)
		})
	}
	return out
}

// TestKCL3Stop: at a graceful stop, kcltool's stop (evict+unlist: the
// metrics item deleted, then the evict) gets the worker's leases held
// elsewhere sooner than leaving them to expire, as a Java worker does, and
// within one assignment interval plus one discovery interval. With the
// worker still listed (its metrics item fresh: evict alone), the leader
// hands the evicted leases back to it, so both ways wait for the item to
// go stale; the evict is still ahead in the median.
func TestKCL3Stop(t *testing.T) {
	p := Point{Leases: 64, Workers: 4}
	seeds := []uint64{1, 2, 3, 4, 5}
	bound := KCL3AssignmentInterval + (leasecore.Config{}).WithDefaults().DiscoveryInterval() + stopSlack
	res := map[StopMode][]time.Duration{}
	for _, m := range []StopMode{StopEvict, StopExpire, StopEvictUnlist, StopExpireUnlist} {
		res[m] = measureStops(t, p, m, seeds)
		t.Logf("%s: %v", m, res[m])
	}
	for _, pair := range [][2]StopMode{{StopEvictUnlist, StopExpire}, {StopEvict, StopExpire}, {StopEvictUnlist, StopExpireUnlist}} {
		ev, _ := medianMax(res[pair[0]])
		ex, _ := medianMax(res[pair[1]])
		if ev >= ex {
			t.Errorf("%s median %s is not below %s median %s", pair[0], ev, pair[1], ex)
		}
	}
	if _, mx := medianMax(res[StopEvictUnlist]); mx > bound {
		t.Errorf("%s max %s is over one assignment interval + one discovery interval + %s (%s)", StopEvictUnlist, mx, stopSlack, bound)
	}
}
