package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/leasecore"
)

// mlProcessor is the RecordProcessor of --multilang: one long-lived child
// per reading of a shard speaking the KCL MultiLangDaemon's protocol
// (multilang_msg.go). Unlike the MLD, a child that fails ends its reading
// only: the runner's shard run restarts the shard from its checkpoint with a new
// child after a backoff, and the other shards go on.
//
// Checkpoints are the child's: nothing is checkpointed on its behalf, and
// each request is validated first, as the KCL's checkpointer does.
type mlProcessor struct {
	r     MultiLang
	child *mlChild
	// cur is the lease's checkpoint as this holding knows it (the KCL
	// checkpointer's lastCheckpointValue).
	cur leasecore.SequenceNumber
	// last is the newest position handed to the child, nil before the
	// first record: the largest a checkpoint may name (the KCL's
	// largestPermittedCheckpointValue). A page's records are in order, so
	// its last record is its largest.
	last *leasecore.SequenceNumber
	// lost: leaseLost was sent; no checkpoint is accepted after it.
	lost bool
	// dead is why the child is gone, once it is.
	dead error
}

// errChildGone: the child was stopped; the reading restarts with a new one.
var errChildGone = errors.New("the MultiLang child was stopped")

// MultiLang is what a MultiLang processor takes from the reading of its
// shard.
type MultiLang struct {
	// Handler is the child's command (Argv, Dir, Env); Format and Timeout
	// are the per-batch handler's and unused here.
	Handler *Handler
	// Timeout bounds each exchange with the child (--multilang-timeout).
	Timeout time.Duration
	// KillGrace is how long a child stopped because its lease was lost
	// may take to acknowledge and exit.
	KillGrace time.Duration
	Clock     clock.Clock
	Log       *slog.Logger
	// Restarted counts a child stopped for a failure; Running and Reaped
	// count its CPU while it runs and its total once it exited.
	Restarted func()
	Running   func(cpu func() time.Duration)
	Reaped    func(total time.Duration)
}

// NewMultiLang is the processor of one reading of a shard for --multilang.
func NewMultiLang(m MultiLang) RecordProcessor { return &mlProcessor{r: m} }

// initAtStart: the child is started and initialized as the reading starts,
// as the MLD starts it in the record processor's initialize when it takes
// the lease: a shard without new records has its child too, and it gets
// shutdownRequested at a graceful stop. One child per held lease, as the
// MLD runs one per shard; --max-leases-for-worker bounds them.
func (p *mlProcessor) InitAtStart() bool { return true }

func (p *mlProcessor) Initialize(ctx context.Context, in InitializeInput) error {
	h := p.r.Handler
	env := append(append([]string(nil), h.Env...),
		"KCLTOOL_APP="+in.App, "KCLTOOL_STREAM="+in.Stream, "KCLTOOL_SHARD_ID="+in.ShardID, "KCLTOOL_WORKER_ID="+in.WorkerID)
	c, err := startMLChild(p.r.Clock, h.Argv, h.Dir, env, p.r.Log, p.r.Reaped)
	if err != nil {
		p.dead = err
		p.r.Restarted()
		return err
	}
	// The handler CPU metric counts the long-lived child while it runs.
	p.r.Running(c.cpuSoFar)
	p.child, p.cur = c, in.Checkpoint
	p.r.Log.Info("started the MultiLang child", "pid", c.pgid)
	_, err = p.exchange(ctx, newMLInitialize(in.ShardID, in.Checkpoint), mlInitialize, nil, false)
	return err
}

func (p *mlProcessor) ProcessRecords(ctx context.Context, _ <-chan struct{}, b Batch, cp Checkpointer) (ProcessStats, error) {
	if p.dead != nil {
		return ProcessStats{}, fmt.Errorf("%w: %v", errChildGone, p.dead)
	}
	if n := len(b.Records); n > 0 {
		p.last = &leasecore.SequenceNumber{SequenceNumber: b.Records[n-1].SequenceNumber, SubSequenceNumber: b.Records[n-1].SubSequenceNumber}
	}
	start := p.r.Clock.Now()
	// A graceful stop lets the batch finish, as the MLD does: the reading
	// stops after it and the child gets shutdownRequested.
	n, err := p.exchange(ctx, newMLProcessRecords(b.Records, b.MillisBehindLatest), mlProcessRecords, cp, false)
	st := ProcessStats{Runs: 1, Checkpoints: n, HandlerTime: p.r.Clock.Now().Sub(start)}
	if err != nil {
		st.Failures = 1
	}
	return st, err
}

// LeaseLost tells the child and stops it: another worker may hold the
// shard soon, so it gets the stop margin's grace (KillGrace) at most.
func (p *mlProcessor) LeaseLost(context.Context) {
	p.lost = true
	if p.child == nil || p.dead != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.r.KillGrace)
	defer cancel()
	if _, err := p.exchange(ctx, mlBareMsg{Action: mlLeaseLost}, mlLeaseLost, nil, false); err != nil && p.dead == nil {
		p.r.Log.Warn("MultiLang child did not acknowledge leaseLost in time; stopping it", "err", err)
	}
	p.stopChild(ctx, "lease lost")
}

// ShardEnded: the child must checkpoint (SHARD_END) before its status;
// the runner's shard run checks that it did.
func (p *mlProcessor) ShardEnded(ctx context.Context, cp Checkpointer) error {
	if p.dead != nil {
		return fmt.Errorf("%w: %v", errChildGone, p.dead)
	}
	ended := false
	watch := CheckpointFunc(func(ctx context.Context, at leasecore.SequenceNumber) error {
		err := cp.Checkpoint(ctx, at)
		ended = ended || (err == nil && at.IsShardEnd())
		return err
	})
	_, err := p.exchange(ctx, mlBareMsg{Action: mlShardEnded}, mlShardEnded, watch, true)
	if err != nil {
		return err
	}
	p.stopChild(ctx, "shard ended")
	if !ended {
		// The runner's shard run reads the shard again with a new child after a
		// backoff, as the KCL retries its shutdown task: count and say it.
		p.r.Restarted()
		p.r.Log.Warn("MultiLang child answered shardEnded without checkpointing SHARD_END; the shard is read again with a new child after a backoff")
	}
	return nil
}

// ShutdownRequested lets the child checkpoint, then closes its stdin and
// waits for it to exit; the worker's --shutdown-grace ends ctx, and the
// child's group is killed then.
func (p *mlProcessor) ShutdownRequested(ctx context.Context, cp Checkpointer) error {
	if p.dead != nil {
		return nil
	}
	_, err := p.exchange(ctx, mlBareMsg{Action: mlShutdownRequested}, mlShutdownRequested, cp, false)
	if p.dead == nil {
		p.stopChild(ctx, "worker stopping")
	}
	return err
}

// stopChild closes the child's stdin and waits for it to exit until ctx
// ends, then kills its group.
func (p *mlProcessor) stopChild(ctx context.Context, why string) {
	p.child.stop(ctx)
	p.dead = fmt.Errorf("stopped: %s", why)
	p.r.Log.Info("MultiLang child stopped", "why", why, "exit", p.child.exitStatus())
}

// fail stops the child's group at once and says which message failed.
func (p *mlProcessor) fail(action string, err error) error {
	err = fmt.Errorf("MultiLang child failed on %s: %w", action, err)
	if p.dead == nil {
		p.child.kill()
		p.dead = err
		p.r.Restarted()
	}
	return err
}

// exchange sends msg and reads the child's lines until its status for
// action, answering checkpoint requests on the way (through cp; nil means
// none is accepted). It returns how many checkpoints were written. A
// cancelled ctx (lease lost, its deadline, the shutdown grace) stops the
// child: what it was doing can no longer be checkpointed.
func (p *mlProcessor) exchange(ctx context.Context, msg any, action string, cp Checkpointer, atShardEnd bool) (int, error) {
	var err error
	if pr, ok := msg.(mlProcessRecordsMsg); ok {
		// Into a buffer an earlier line left once it was written whole
		// (mlLineBuffer, sendBuffer).
		err = p.child.sendBuffer(ctx, pr.appendLine(mlLineBuffer()))
	} else {
		var line []byte
		if line, err = encodeML(msg); err != nil {
			return 0, p.fail(action, err)
		}
		err = p.child.send(ctx, line)
	}
	if err != nil {
		if ctx.Err() != nil {
			return 0, p.cancelled(ctx, action)
		}
		return 0, p.fail(action, fmt.Errorf("write to its stdin: %w", err))
	}
	timeout := p.r.Timeout
	written := 0
	for {
		var expired <-chan time.Time
		var t clock.Timer
		if timeout > 0 {
			t = p.r.Clock.NewTimer(timeout)
			expired = t.C()
		}
		var l []byte
		var ok bool
		select {
		case l, ok = <-p.child.lines:
		case <-expired:
			return written, p.fail(action, fmt.Errorf("no message from the child within %v (timeoutInSeconds)", timeout))
		case <-ctx.Done():
			if t != nil {
				t.Stop()
			}
			return written, p.cancelled(ctx, action)
		}
		if t != nil {
			t.Stop()
		}
		if !ok {
			<-p.child.exited
			return written, p.fail(action, fmt.Errorf("the child closed its stdout before its status (%s)", p.child.exitStatus()))
		}
		m, req, err := decodeML(l)
		switch {
		case errors.Is(err, errNotJSON):
			p.r.Log.Warn("MultiLang child wrote a line that is not a message; skipped", "line", clip(strings.TrimRight(string(l), "\r\n"), StderrLineMax))
			continue
		case err != nil:
			return written, p.fail(action, err)
		case m.Action == "":
			continue
		case m.Action == mlStatus && m.ResponseFor == action:
			return written, nil
		case m.Action == mlStatus:
			return written, p.fail(action, fmt.Errorf("the child's status answers %q", m.ResponseFor))
		case m.Action == mlInitialize || m.Action == mlProcessRecords || m.Action == mlLeaseLost || m.Action == mlShardEnded || m.Action == mlShutdownRequested || m.Action == mlRecord:
			return written, p.fail(action, fmt.Errorf("unexpected action %q from the child (the daemon sends it, a child does not)", m.Action))
		case m.Action != mlCheckpoint:
			return written, p.fail(action, fmt.Errorf("unknown action %q from the child", m.Action))
		}
		class, wrote := p.checkpoint(ctx, req, cp, atShardEnd)
		if wrote {
			written++
		}
		reply, err := encodeML(mlCheckpointReply(req, class))
		if err == nil {
			err = p.child.send(ctx, reply)
		}
		if err != nil {
			if ctx.Err() != nil {
				return written, p.cancelled(ctx, action)
			}
			return written, p.fail(action, fmt.Errorf("write the checkpoint reply: %w", err))
		}
	}
}

// cancelled handles a ctx that ended during an exchange: at the lease
// deadline or when the lease is lost the child is told (leaseLost, without
// waiting for it) and stopped at once.
func (p *mlProcessor) cancelled(ctx context.Context, action string) error {
	cause := context.Cause(ctx)
	if p.dead == nil {
		p.lost = true
		if line, err := encodeML(mlBareMsg{Action: mlLeaseLost}); err == nil && action != mlLeaseLost {
			grace, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			_ = p.child.send(grace, line)
			cancel()
		}
		stop, cancel := context.WithTimeout(context.Background(), p.r.KillGrace)
		p.child.stop(stop)
		cancel()
		p.dead = fmt.Errorf("stopped during %s: %w", action, cause)
		p.r.Log.Warn("MultiLang child stopped", "during", action, "why", cause)
	}
	return cause
}

// checkpoint validates and writes one checkpoint request and returns the
// KCL exception's simple class name for the reply ("" on success) and
// whether a checkpoint was written.
func (p *mlProcessor) checkpoint(ctx context.Context, req mlCheckpointReq, cp Checkpointer, atShardEnd bool) (string, bool) {
	switch {
	case cp == nil:
		// The MLD has no checkpointer during initialize and leaseLost and
		// answers InvalidStateException (MultiLangProtocol.checkpoint).
		p.r.Log.Warn("MultiLang child asked for a checkpoint where none is accepted (initialize, leaseLost)")
		return "InvalidStateException", false
	case p.lost:
		// The KCL's checkpointer once the lease is lost.
		p.r.Log.Warn("MultiLang child asked for a checkpoint after its lease was lost")
		return "ShutdownException", false
	}
	var at leasecore.SequenceNumber
	switch {
	case req.seq == nil && atShardEnd:
		at = leasecore.SequenceNumber{SequenceNumber: leasecore.SHARD_END}
	case req.seq == nil:
		if p.last == nil {
			return "", false // nothing delivered: nothing new to record
		}
		at = *p.last
	default:
		at.SequenceNumber = *req.seq
		if req.sub != nil {
			at.SubSequenceNumber = *req.sub
		}
		if why := p.invalid(at, atShardEnd); why != "" {
			p.r.Log.Warn("refused the MultiLang child's checkpoint", "sequenceNumber", at.SequenceNumber, "subSequenceNumber", at.SubSequenceNumber, "why", why)
			return "IllegalArgumentException", false
		}
		if atShardEnd && leasecore.Compare(at, p.largest()) == 0 {
			// The shard's last position, named: SHARD_END, as the KCL's
			// checkpointer writes it (sequenceNumberAtShardEnd). Written
			// even when that position is the checkpoint already, where the
			// KCL writes nothing and so never finishes the shard.
			at = leasecore.SequenceNumber{SequenceNumber: leasecore.SHARD_END}
		}
	}
	if leasecore.Compare(at, p.cur) == 0 && !at.IsShardEnd() {
		return "", false
	}
	if err := cp.Checkpoint(ctx, at); err != nil {
		p.r.Log.Warn("the MultiLang child's checkpoint failed", "sequenceNumber", at.SequenceNumber, "err", err)
		if errors.Is(err, leasecore.ErrLeaseLost) {
			return "ShutdownException", false
		}
		return "KinesisClientLibDependencyException", false
	}
	p.cur = at
	return "", true
}

// largest is the largest position a checkpoint may name: the newest
// handed to the child, or before any the lease's checkpoint.
func (p *mlProcessor) largest() leasecore.SequenceNumber {
	if p.last != nil {
		return *p.last
	}
	return p.cur
}

// invalid says why a checkpoint the child named is refused, or "". As the
// KCL's checkpointer, any position from the lease's checkpoint to the
// newest delivered is accepted, whether or not a record has it. At the
// shard end the KCL accepts any sequence number above the checkpoint (its
// upper bound is then SHARD_END); kcltool still refuses one past the
// shard's last record, which no reading could start after.
func (p *mlProcessor) invalid(at leasecore.SequenceNumber, atShardEnd bool) string {
	switch {
	case at.IsShardEnd() && atShardEnd:
		return ""
	case !leasecore.ValidCheckpoint(at.SequenceNumber) || leasecore.IsSentinel(at.SequenceNumber):
		return "not a sequence number"
	case at.SubSequenceNumber < 0:
		return "a negative sub-sequence number"
	case leasecore.Compare(at, p.cur) < 0:
		return "before the lease's checkpoint " + p.cur.SequenceNumber
	case leasecore.Compare(at, p.largest()) > 0:
		return "past the last record delivered to the child, " + p.largest().SequenceNumber
	}
	return ""
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
