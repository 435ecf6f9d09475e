package doctor

// check is one of doctor's checks: a function of the facts that returns
// its findings. It reads the facts and changes nothing, so the table's
// order is no contract (checks_test.go runs it shuffled).
type check struct {
	name string
	run  func(*facts) []Finding
}

// checks are every check a report runs.
var checks = []check{
	{"cloudwatch-skipped", checkCloudWatchSkipped},
	{"malformed", checkMalformed},
	{"liveness", checkLiveness},
	{"no-workers", checkNoWorkers},
	{"churn", checkChurn},
	{"stuck", checkStuck},
	{"kinesis-stuck", checkKinesisStuck},
	{"shard-lag", checkShardLag},
	{"stream-leases", checkStreamLeases},
	{"blocked", checkBlocked},
	{"expired", checkExpired},
	{"unassigned", checkUnassigned},
	{"imbalance", checkImbalance},
	{"kcl3", checkKCL3},
	{"capacity", checkCapacity},
	{"throttling", checkThrottling},
	{"iterator-age", checkIteratorAge},
	{"kcl-metrics", checkKCLMetrics},
	{"consumers", checkConsumers},
	{"skipped", checkSkipped},
}

// runChecks runs the checks over the facts, then the one pass that makes
// the findings a report: every finding gets its Values map (scripts read
// it), the findings are sorted worst first, and a finding equal to one
// already kept is dropped (dedupFindings).
func runChecks(fc *facts, cs []check) []Finding {
	var found []Finding
	for _, c := range cs {
		for _, f := range c.run(fc) {
			if f.Evidence.Values == nil {
				f.Evidence.Values = map[string]float64{}
			}
			found = append(found, f)
		}
	}
	sortFindings(found)
	return dedupFindings(found)
}
