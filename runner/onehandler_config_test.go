package runner

import (
	"time"

	"github.com/kcltool/kcltool/leasecore"
)

// stealOverlapBound is the longest a stolen shard's handlers may overlap
// when the old owner cannot renew: failover − renew interval − 2 × stop
// margin + kill grace. (Kept apart so that the tests of one handler per
// shard can be run against code without the stop margin, with the figure
// written out, to show that they fail there.)
func stealOverlapBound(cfg leasecore.Config) time.Duration {
	cfg = cfg.WithDefaults()
	return cfg.FailoverTime - cfg.RenewInterval - 2*cfg.StopMargin() + killGrace(cfg)
}
