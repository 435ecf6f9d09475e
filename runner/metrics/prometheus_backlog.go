package metrics

import "time"

// writeBacklogs writes the two gauges of a shard whose records wait
// (backlog.go), for the shards this worker reads now.
func writeBacklogs(p *promWriter, shards []*ShardStats, labels func(*ShardStats) []string, now time.Time) {
	for _, g := range []struct {
		name, help string
		get        func(checkpoint, oldest time.Duration) time.Duration
	}{
		{"kcltool_shard_last_checkpoint_age_seconds",
			"Time since the shard's last checkpoint (or since this worker took its lease) while records wait: read and not checkpointed, or the last read said the shard is behind; 0 when nothing waits (shards this worker reads now).",
			func(c, _ time.Duration) time.Duration { return c }},
		{"kcltool_shard_oldest_unprocessed_record_age_seconds",
			"Age of the oldest record read and not yet checkpointed, from its ApproximateArrivalTimestamp; 0 when none (shards this worker reads now).",
			func(_, o time.Duration) time.Duration { return o }},
	} {
		p.family(g.name, "gauge", g.help)
		for _, s := range shards {
			if s.held.Load() {
				p.sample(g.name, labels(s), g.get(s.backlog.Load().ages(now)).Seconds())
			}
		}
	}
}
