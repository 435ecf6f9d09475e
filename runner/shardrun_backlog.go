package runner

import (
	"time"

	"github.com/kcltool/kcltool/runner/retrieval"
)

// received takes a page the reader delivered: its bytes count for the
// lease's throughput, its records join the batcher and the holding's
// backlog (read, not yet checkpointed) until a checkpoint covers them.
func (r *shardRun) received(b *batcher, p retrieval.Page, now time.Time) {
	r.readBytes(p)
	at := p.Received
	if at.IsZero() {
		at = now
	}
	r.backlog.Read(p.Records, p.MillisBehind, at)
	b.add(p, now)
}
