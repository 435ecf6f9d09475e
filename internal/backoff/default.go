package backoff

import "time"

// Default is exponential backoff with full jitter: a random wait in
// [0, min(5s, 50ms·2^attempt)), which spreads retries of many workers apart.
// It is the wait of every AWS retry that has no reason for a policy of its
// own (scans, lease-table reads, Kinesis discovery).
func Default(attempt int) time.Duration { return defaultPolicy.Delay(attempt, nil) }

var defaultPolicy = Policy{Base: 50 * time.Millisecond, Max: 5 * time.Second, Min: 1, Jitter: Full}
