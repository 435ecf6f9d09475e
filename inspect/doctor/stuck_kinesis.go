package doctor

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/internal/awserr"
)

// Kinesis error classes a failed probe is named by, with the evidence
// value that counts them.
const (
	kinThrottled       = "throttled"
	kinTimeout         = "timeout"
	kinNotFound        = "not found"
	kinAccessDenied    = "access denied"
	kinInvalidPosition = "invalid position"
	kinOther           = "error"
)

var kinClassValue = map[string]string{
	kinThrottled: "kinesisThrottled", kinTimeout: "kinesisTimeouts", kinNotFound: "kinesisNotFound",
	kinAccessDenied: "kinesisAccessDenied", kinInvalidPosition: "kinesisInvalidPosition", kinOther: "kinesisOtherErrors",
}

// kinesisClass names what a failed Kinesis call ran into.
func kinesisClass(err error) string {
	switch {
	case awserr.Throttled(err):
		return kinThrottled
	case awserr.Timeout(err) || errors.Is(err, context.DeadlineExceeded):
		return kinTimeout
	case awserr.NotFound(err):
		return kinNotFound
	case awserr.AccessDenied(err):
		return kinAccessDenied
	case awserr.BadSequence(err):
		return kinInvalidPosition
	}
	return kinOther
}

// probeFailures sorts the rows whose probe failed: stuck (the lease held
// still by a live owner, as in checkStuck) or unmeasured (the checkpoint
// moves, or nobody holds the lease; orphan leases are reported apart).
// Like checkStuck, it needs the stream and two reads.
func (fc *facts) probeFailures() (stuck, unmeasured []*inspect.LagRow) {
	if fc.lag == nil || len(fc.view.samples) < 2 {
		return nil, nil
	}
	for i := range fc.lag.Rows {
		r := &fc.lag.Rows[i]
		if r.Lease == nil || r.ProbeErr == nil || r.Shard == nil {
			continue
		}
		if fc.heldStill(r) {
			stuck = append(stuck, r)
		} else if r.State != inspect.LagOrphanLease {
			unmeasured = append(unmeasured, r)
		}
	}
	return stuck, unmeasured
}

// unmeasuredSkip is the checks-skipped entry for the rows doctor could
// not read: their lag is unknown, not zero.
func unmeasuredSkip(rows []*inspect.LagRow) string {
	var parts []string
	for _, r := range rows {
		parts = append(parts, fmt.Sprintf("%s (%s: %v)", r.ShardID, kinesisClass(r.ProbeErr), r.ProbeErr))
	}
	return "lag of " + plural(len(rows), "shard") + ": doctor's reads of them failed: " + strings.Join(parts, "; ")
}

// checkKinesisStuck finds the stuck pattern (lease renewed by a live owner
// that keeps it, checkpoint still) on shards whose probe failed: doctor's
// own GetShardIterator at the checkpoint and GetRecords, under a short
// deadline, the calls the worker needs. Without the worker's CloudWatch
// metrics this is how doctor tells Kinesis from the handler: the worker
// keeps renewing while it retries its reads, so no other worker takes the
// shard, and the handler never gets a record. A shard whose probe fails
// while its checkpoint moves is not stuck: its lag is reported unmeasured.
func checkKinesisStuck(fc *facts) (out []Finding) {
	stuck, _ := fc.probeFailures()
	if len(stuck) == 0 {
		return
	}
	window := fc.view.window()
	sev := SeverityWarn
	values := map[string]float64{"stuckShards": float64(len(stuck)), "windowMillis": float64(window.Milliseconds())}
	var lines, shards, workers []string
	classes := map[string]bool{}
	for _, r := range stuck {
		class := kinesisClass(r.ProbeErr)
		classes[class] = true
		values[kinClassValue[class]]++
		if !awserr.RetryableRead(r.ProbeErr) && class != kinTimeout {
			// A definite refusal does not heal by waiting.
			sev = SeverityCritical
		}
		h := fc.view.history(r.Lease.LeaseKey)
		owner := actualOwner(*r.Lease)
		shards, workers = append(shards, r.Lease.LeaseKey), append(workers, owner)
		lines = append(lines, fmt.Sprintf("%s: checkpoint %s unchanged over %d reads (%s) while %s renewed it %d times; doctor's read at the checkpoint failed (%s): %v",
			r.ShardID, shortSeq(r.Lease.Checkpoint), len(h.obs), roundDur(window), owner, h.renewals, class, r.ProbeErr))
	}
	names := make([]string, 0, len(classes))
	for c := range classes {
		names = append(names, c)
	}
	sort.Strings(names)
	out = append(out, Finding{
		ID: FindStuckShard, Severity: sev,
		Summary: fmt.Sprintf("%s stuck: Kinesis calls failing or timing out (%s); leases renewed, checkpoints not moving for %s: %s",
			plural(len(shards), "shard"), strings.Join(names, ", "), roundDur(window), listShort(shards)),
		Evidence: Evidence{Lines: lines, Shards: shards, Workers: uniqueSorted(workers), Values: values},
		Cause: "Kinesis does not serve these shards' reads: doctor's own GetShardIterator at the checkpoint and GetRecords (under a " + roundDur(fc.opt.ProbeTimeout) +
			" deadline) failed as shown, and the worker's reads fail the same way; it keeps renewing the lease while it retries them, so no other worker takes the shard over, and the handler never gets the records. The handler is not what holds it up. " +
			"throttled: other consumers of the shard use up its 5 reads a second (or KMS throttles); timeout: the network path to Kinesis; access denied: the role lacks kinesis:GetShardIterator/GetRecords (or kms:Decrypt); not found: the shard or its data expired; invalid position: the checkpoint is older than the trim horizon, or from a stream deleted and created again",
		Fix: "look in the worker's log for \"reads of the shard are failing\" and the error it names; by class: throttled — fewer consumers per shard (enhanced fan-out) or more shards; timeout — check the VPC endpoint, proxy, NAT and DNS to Kinesis; access denied — grant kinesis:GetShardIterator, kinesis:GetRecords (and kms:Decrypt for an encrypted stream) to the worker's role; " +
			"invalid position — an open shard is retried for ever (as the KCL does): stop the workers and kcltool checkpoint reset --shard ID --to trim-horizon --execute; kcltool run gives up on a call after --kinesis-timeout and retries it",
	})
	return
}

// probeClient makes the probe's reads with one SDK retry: a probe asks
// whether Kinesis serves the shard now, and the SDK's backoff between more
// attempts would run a persistent throttle into the deadline, where it would
// read as a timeout.
type probeClient struct{ StreamAPI }

func oneRetry(o *kinesis.Options) { o.RetryMaxAttempts = 2 }

func (c probeClient) GetShardIterator(ctx context.Context, in *kinesis.GetShardIteratorInput, opts ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error) {
	return c.StreamAPI.GetShardIterator(ctx, in, append(opts, oneRetry)...)
}

func (c probeClient) GetRecords(ctx context.Context, in *kinesis.GetRecordsInput, opts ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error) {
	return c.StreamAPI.GetRecords(ctx, in, append(opts, oneRetry)...)
}
