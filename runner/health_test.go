package runner

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

// A running worker's loops and shard readers register with its health
// state, it is ready once its lease-table calls succeed, and a graceful stop
// makes it not ready and ends every loop's watch.
func TestWorkerHealthWatchesItsLoops(t *testing.T) {
	t.Run("polling", func(t *testing.T) { checkHealthWatchesLoops(t, false) })
	// Enhanced fan-out readers are watched too: a subscription that stops
	// delivering without ending is a reader loop not making progress.
	t.Run("fan-out", func(t *testing.T) { checkHealthWatchesLoops(t, true) })
}

func checkHealthWatchesLoops(t *testing.T, efo bool) {
	s := newStack(t, 2)
	cfg := s.config(t, "A", outFile(t))
	if efo {
		cfg.FanOut = fanOut(t, 0)
	}
	r := start(t, s, cfg)
	h := r.w.Health()
	want := []string{"discoverer", "kcl3-state", "lease-cleanup", "reader shardId-000000000000", "reader shardId-000000000001", "renewer", "shard-sync", "taker"}
	eventually(t, 30*time.Second, "every loop and both readers watched", func() bool {
		return slices.Equal(h.LoopNames(), want)
	})
	eventually(t, 30*time.Second, "ready holding both leases", func() bool {
		rd := h.Ready()
		return rd.Ready && rd.LeasesHeld == 2
	})
	if l := h.Live(); !l.Live || l.Loops != len(want) {
		t.Fatalf("Live: %+v, want live with %d loops", l, len(want))
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	if rd := h.Ready(); rd.Ready || rd.Status != leasecore.ReadyStopping {
		t.Fatalf("after a graceful stop: %+v, want stopping", rd)
	}
	if names := h.LoopNames(); len(names) != 0 {
		t.Fatalf("loops still watched after the stop: %s", strings.Join(names, ", "))
	}
}
