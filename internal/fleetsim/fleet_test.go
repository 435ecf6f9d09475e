package fleetsim

import (
	"testing"
	"testing/synctest"
	"time"
)

func measure(t *testing.T, e Engine, p Point, o Options) Result {
	t.Helper()
	var r Result
	synctest.Test(t, func(t *testing.T) { r = Measure(e, p, o) })
	return r
}

func TestFleetSmoke(t *testing.T) {
	for _, e := range []Engine{KCLTool, KCL2} {
		r := measure(t, e, Point{64, 2}, Options{Steady: 2 * time.Minute})
		t.Logf("%+v", r)
	}
}
