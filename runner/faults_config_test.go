package runner

import (
	"time"

	"github.com/kcltool/kcltool/runner/retrieval"
)

// shortKinesisTimeout sets the Kinesis request deadline of a test worker.
// (Kept apart so that the fault tests can be run against code without the
// setting, where it is a no-op, to show that they fail there.)
func shortKinesisTimeout(cfg *Config, d time.Duration) { cfg.KinesisTimeout = d }

// shortDynamoDBTimeout sets the DynamoDB request deadline of a test worker.
func shortDynamoDBTimeout(cfg *Config, d time.Duration) { cfg.DynamoDBTimeout = d }

// shortWarnInterval shortens the interval of the "still failing" warnings
// and returns the undo.
func shortWarnInterval(d time.Duration) func() {
	old := retrieval.FailingWarnEvery
	retrieval.FailingWarnEvery = d
	return func() { retrieval.FailingWarnEvery = old }
}
