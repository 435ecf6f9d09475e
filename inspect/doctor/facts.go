package doctor

import (
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/fanout"
	"github.com/kcltool/kcltool/inspect"
)

// facts is everything the checks judge by, gathered once per report
// (diagnose's gather phase) and then only read: every check is a function
// of the facts, so no check sees what another one did, and the checks can
// run in any order (checks_test.go runs them shuffled).
//
// What one check used to work out for another is derived here, once:
// kinesisStuck (which the orphan-lease check leaves to stuck-shard) and the
// lag rows doctor could not measure (which checks-skipped names).
type facts struct {
	opt  Options
	now  time.Time
	view *fleetView
	last sample
	rows []inspect.LeaseRow // the last read, states derived against the one before
	kcl3 kcl3State
	lag  *inspect.Lag // nil when the stream was not probed
	// metrics is nil when CloudWatch was not read; cwSkipped then says why.
	metrics   *metricSet
	cwSkipped *string
	desc      *ddbtypes.TableDescription // nil when the table was not described
	// consumers are the streams' enhanced fan-out consumers (consumers.go).
	consumers []*fanout.ConsumerListing
	skipped   []string // checks not run, with why

	// kinesisStuck are the lease keys stuck on failing Kinesis calls
	// (stuck_kinesis.go): stuck-shard reports them, orphan-lease does not.
	kinesisStuck map[string]bool
}

// derive works out the facts that rest on other facts; it runs once, at the
// end of the gather phase.
func (fc *facts) derive() {
	fc.kinesisStuck = map[string]bool{}
	stuck, unmeasured := fc.probeFailures()
	for _, r := range stuck {
		fc.kinesisStuck[r.Lease.LeaseKey] = true
	}
	if len(unmeasured) > 0 {
		fc.skipped = append(fc.skipped, unmeasuredSkip(unmeasured))
	}
}
