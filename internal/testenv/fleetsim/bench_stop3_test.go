package fleetsim

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// TestBenchKCL3Stop is `make bench`'s graceful-stop figure (issue 25, item
// 8): in a kcltool fleet under the port of the KCL's leader at the KCL
// defaults, the simulated time from one worker's graceful stop until each
// of its leases is held by another worker, for each StopMode, median and
// max over seeds.
func TestBenchKCL3Stop(t *testing.T) {
	if os.Getenv("KCLTOOL_BENCH") == "" {
		t.Skip("benchmark: run with KCLTOOL_BENCH=1 (make bench)")
	}
	seeds := []uint64{1, 2, 3, 4, 5, 6, 7}
	modes := []StopMode{StopExpire, StopEvict, StopExpireUnlist, StopEvictUnlist}
	for _, p := range []Point{{64, 4}, {256, 8}} {
		for _, m := range modes {
			var ds []time.Duration
			t.Run(fmt.Sprintf("%s/%s", p, m), func(t *testing.T) { ds = measureStops(t, p, m, seeds) })
			med, mx := medianMax(ds)
			fmt.Printf("bench kcl3 stop %s %-13s: leases held elsewhere after median %s max %s (%d seeds)\n",
				p, m, med.Round(100*time.Millisecond), mx.Round(100*time.Millisecond), len(ds))
		}
	}
}
