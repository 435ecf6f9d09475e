package fleetsim

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/ddbmodel"
	"github.com/kcltool/kcltool/leasecore"
)

// TestBenchKCL3 is `make bench`'s KCL 3.x figure (issue 25, item 9): at
// each point, a fleet of kcltool's coordinators in AssignByLeader mode and
// a fleet of the Java 3.x worker port, each under the port of the KCL's
// leader, on the simulated table. It prints, as ratios:
//   - handoff latency, the leader's initiateGracefulLeaseHandoff write to
//     checkpointOwner cleared, against one renewal interval plus the batch
//     in flight, and against the Java port;
//   - discovery cost, read units of the index queries and the reads of the
//     leases they name per worker per minute, against the Java port;
//   - renewals per lease per minute against kcltool's 2.x coordinator on
//     the same table (KCL 3.x renews as 2.x does).
func TestBenchKCL3(t *testing.T) {
	if os.Getenv("KCLTOOL_BENCH") == "" {
		t.Skip("benchmark: run with KCLTOOL_BENCH=1 (make bench)")
	}
	const (
		steady   = 5 * time.Minute
		handoffs = 20
		batch    = time.Second
	)
	renew := (leasecore.Config{}).WithDefaults().RenewInterval
	for _, p := range []Point{{64, 2}, {256, 8}, {1000, 10}} {
		var ours, java Result3
		var twoX float64
		t.Run(p.String(), func(t *testing.T) {
			t.Run("kcltool3", func(t *testing.T) {
				t.Parallel()
				synctest.Test(t, func(t *testing.T) { ours = MeasureKCL3(KCLTool3, p, steady, handoffs, batch, 2026) })
			})
			t.Run("java3", func(t *testing.T) {
				t.Parallel()
				synctest.Test(t, func(t *testing.T) { java = MeasureKCL3(Java3, p, steady, handoffs, batch, 2026) })
			})
			t.Run("kcltool2", func(t *testing.T) {
				t.Parallel()
				synctest.Test(t, func(t *testing.T) { twoX = renewals2x(p, steady) })
			})
		})
		med, mx := medianMax(ours.Handoff)
		jmed, jmx := medianMax(java.Handoff)
		bound := renew + batch
		fmt.Printf("bench kcl3 %s: handoff (leader's write to checkpointOwner cleared, batch %s) median %s max %s; bound renew interval + batch %s: max/bound %.2f; Java port median %s max %s: ratio of medians %.2f\n",
			p, batch, med.Round(time.Millisecond), mx.Round(time.Millisecond), bound.Round(time.Millisecond), float64(mx)/float64(bound),
			jmed.Round(time.Millisecond), jmx.Round(time.Millisecond), float64(med)/float64(jmed))
		fmt.Printf("bench kcl3 %s: discovery read units/worker/min %.3f; Java port %.3f; ratio %.3f; assignment of every lease %s (Java port %s)\n",
			p, ours.DiscoveryReadPerWorkerMin, java.DiscoveryReadPerWorkerMin, ours.DiscoveryReadPerWorkerMin/java.DiscoveryReadPerWorkerMin,
			ours.Assign.Round(100*time.Millisecond), java.Assign.Round(100*time.Millisecond))
		fmt.Printf("bench kcl3 %s: renewals/lease/min 3.x %.3f, 2.x %.3f: ratio %.3f\n", p, ours.RenewalsPerLeaseMin, twoX, ours.RenewalsPerLeaseMin/twoX)
	}
}

// renewals2x is kcltool's 2.x coordinators' renewals per lease per minute
// on a running fleet's table (Measure's start and warm-up).
func renewals2x(p Point, steady time.Duration) float64 {
	ids := WorkerIDs("w", p.Workers)
	f := NewFleet(KCLTool, ddbmodel.Config{}, p.Leases, ids, 2026)
	defer f.Stop()
	f.StartAll(ids)
	f.Run(time.Minute, nil)
	sum := func() (n int64) {
		for _, w := range f.workers {
			n += w.(*kcltoolWorker).c.Stats().Renewals
		}
		return n
	}
	before := sum()
	f.Run(steady, nil)
	return float64(sum()-before) / float64(p.Leases) / steady.Minutes()
}

func medianMax(ds []time.Duration) (time.Duration, time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)-1]
}
