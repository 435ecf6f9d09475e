package runner

import (
	"time"

	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/runner/retrieval"
)

// The worker's part of the health endpoints (leasecore/health.go,
// docs/deploy.md): its own loops and its shard readers register with the
// worker's Health and beat at every round and every AWS call that returns
// (the deadline wrappers, deadline.go, beat the loop the call's context
// carries).

// healthMargin is added to every bound: a slow machine, a long garbage
// collection must not look like a wedged loop.
const healthMargin = 30 * time.Second

// callBound is the longest one AWS call of the worker's own loops can take:
// its deadline (the KCL's defaults when none is set, as a call with none can
// hang, and is then rightly reported) twice over, for a retry's backoff
// (backoff.Default's 5 s ceiling) and the call after it.
func (w *Worker) callBound() time.Duration {
	d, k := w.cfg.DynamoDBTimeout, w.cfg.KinesisTimeout
	if d <= 0 {
		d = DefaultDynamoDBTimeout
	}
	if k <= 0 {
		k = DefaultKinesisTimeout
	}
	return 2*max(d, k) + 5*time.Second
}

// loopBound is the staleness bound of a worker loop that sleeps interval
// between rounds: shard sync, lease cleanup, the KCL 3.x state check, the
// leader watch and the migration monitor.
func (w *Worker) loopBound(interval time.Duration) time.Duration {
	return interval + w.callBound() + healthMargin
}

// readerBound is a polling reader's staleness bound: a GetRecords or
// GetShardIterator call ends within the Kinesis timeout, a failing shard
// retries at most every retrieval.MaxReadBackoff, and an idle shard pauses
// IdleBetweenReads. Waiting for the shard's handler to take the page read,
// or for a read slot, is parked and never counts: the handler has its own
// limits (--handler-timeout), and so have the other readers' calls.
func (w *Worker) readerBound() time.Duration {
	k := w.cfg.KinesisTimeout
	if k <= 0 {
		k = DefaultKinesisTimeout
	}
	return k + retrieval.MaxReadBackoff + w.cfg.IdleBetweenReads + healthMargin
}

// Health is the worker's health state, which the metrics server's /livez
// and /readyz answer from.
func (w *Worker) Health() *leasecore.Health { return w.health }

// name is how the shard is named in metrics, logs and /livez: its shard id,
// or in multi-stream mode its lease key (shard ids repeat across streams).
func (r *shardRun) name() string {
	if r.w.multi {
		return r.key
	}
	return r.shardID
}

// fanOutReaderBound is an enhanced fan-out reader's staleness bound. It
// beats at every event and at least every end check (at most EndCheckEvery/2,
// at least 1 s); between beats it waits at most for a SubscribeToShard
// answer or a silent subscription (each the Kinesis timeout), an end check's
// ListShards (callBound), or a failed subscription's backoff
// (subscribeBackoff.Max) after the spacing between subscriptions.
func (w *Worker) fanOutReaderBound() time.Duration {
	k := w.cfg.KinesisTimeout
	if k <= 0 {
		k = DefaultKinesisTimeout
	}
	return max(k, w.callBound(), max(w.cfg.FanOut.EndCheckEvery/2, time.Second)) + subscribeBackoff.Max + subscribeSpacing + healthMargin
}
