package leasecore

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kcltool/kcltool/internal/awserr"
)

// CoordinatorAPI is the DynamoDB client the coordinator needs: the taker's
// scan, the conditional updates, and reads of single leases.
type CoordinatorAPI interface {
	ScanAPI
	UpdateItemAPI
	GetItemAPI
}

// Stats are the coordinator's counters since it was created, for logs,
// metrics and tests. They mirror KCL's RenewAllLeases and TakeLeases metrics.
type Stats struct {
	Held          int   // leases held now
	Renewals      int64 // successful renewals
	RenewFailures int64 // renewal rounds that gave up (the lease stays held until its failover time)
	Checkpoints   int64 // successful checkpoint writes
	Taken         int64 // leases taken because they were expired, unowned or this worker's own
	Stolen        int64 // leases stolen from the most loaded worker
	Released      int64 // leases released on graceful stop
	Lost          int64 // leases lost: condition failed or not renewed within the failover time
	TakerRuns     int64 // taker runs (each one table scan)
	Throttled     int64 // DynamoDB calls answered with a throttling error
	Retries       int64 // calls retried after throttling or a transient error
	// KCL 3.x (AssignByLeader).
	Discovered   int64 // leases the leader gave this worker, found by the discoverer
	IndexQueries int64 // discoverer queries of the LeaseOwnerToLeaseKeyIndex (all pages of one count once)
	Handoffs     int64 // handoffs away from this worker the leader asked for (LeaseHandoff events)
	HandedOff    int64 // handoffs this worker completed (LeaseHandedOff events)
	// Requests counts DynamoDB requests by operation (Scan pages count
	// one each). The coordinator turns the SDK's own retries off, so every
	// request is counted here, retried or not.
	Requests map[string]int64
	// Units are the capacity units consumed, by lease operation (OpRenew,
	// OpScan, ...): the coordinator's own calls, and those of whoever
	// else counts into the same Options.Capacity.
	Units map[string]Units
}

// counters is the live, lock-free form of Stats.
type counters struct {
	renewals, renewFailures, checkpoints, taken, stolen, released, lost atomic.Int64
	takerRuns, throttled, retries                                       atomic.Int64
	scan, getItem, updateItem, query                                    atomic.Int64
	discovered, indexQueries, handoffs, handedOff                       atomic.Int64
}

// meteredAPI counts every request and throttle, and turns the SDK's retryer
// off per call: the coordinator retries itself, within deadlines the SDK
// cannot know (a renewal must not be retried past the failover time; the
// SDK's standard retryer backs off up to 20s and draws on a shared retry
// quota that sustained throttling would exhaust).
//
// It also gives every request its own deadline (Config.ItemTimeout,
// Config.ScanTimeout): a request that is never answered would otherwise
// block its loop for good, and a taker or renewer that blocks keeps leases
// from moving or lets them expire.
type meteredAPI struct {
	api               CoordinatorAPI
	c                 *counters
	item, scanTimeout time.Duration
	units             *Capacity
}

func noSDKRetries(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }

// note counts a throttled call, and beats the loop that made the call: a
// call that returned, failed or not, is progress (health.go).
func (m meteredAPI) note(ctx context.Context, err error) {
	LoopOf(ctx).Beat()
	if awserr.Throttled(err) {
		m.c.throttled.Add(1)
	}
}

func (m meteredAPI) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	m.c.scan.Add(1)
	ctx, cancel := withTimeout(ctx, m.scanTimeout)
	defer cancel()
	out, err := m.api.Scan(ctx, in, append(opts, noSDKRetries)...)
	m.note(ctx, err)
	m.units.RecordScan(ctx, in, out, err)
	return out, err
}

func (m meteredAPI) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	m.c.getItem.Add(1)
	ctx, cancel := withTimeout(ctx, m.item)
	defer cancel()
	out, err := m.api.GetItem(ctx, in, append(opts, noSDKRetries)...)
	m.note(ctx, err)
	m.units.RecordGetItem(ctx, in, out, err)
	return out, err
}

func (m meteredAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	m.c.updateItem.Add(1)
	ctx, cancel := withTimeout(ctx, m.item)
	defer cancel()
	out, err := m.api.UpdateItem(ctx, in, append(opts, noSDKRetries)...)
	m.note(ctx, err)
	m.units.RecordUpdateItem(ctx, in, out, err)
	return out, err
}

// errNoQuery: the client given to the coordinator cannot Query, so the
// KCL 3.x discoverer cannot find the leases the leader gave this worker.
var errNoQuery = errors.New("the DynamoDB client given to the lease coordinator has no Query, which KCL 3.x lease discovery needs")

// Query is the discoverer's index query; the client must implement
// QueryAPI (CoordinatorAPI does not require it, so that 2.x-only clients
// keep working).
func (m meteredAPI) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	q, ok := m.api.(QueryAPI)
	if !ok {
		return nil, errNoQuery
	}
	m.c.query.Add(1)
	ctx, cancel := withTimeout(ctx, m.item)
	defer cancel()
	out, err := q.Query(ctx, in, append(opts, noSDKRetries)...)
	m.note(ctx, err)
	m.units.RecordQuery(ctx, in, out, err)
	return out, err
}

func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

func (c *counters) snapshot() Stats {
	return Stats{
		Renewals: c.renewals.Load(), RenewFailures: c.renewFailures.Load(), Checkpoints: c.checkpoints.Load(),
		Taken: c.taken.Load(), Stolen: c.stolen.Load(), Released: c.released.Load(), Lost: c.lost.Load(),
		TakerRuns: c.takerRuns.Load(), Throttled: c.throttled.Load(), Retries: c.retries.Load(),
		Discovered: c.discovered.Load(), IndexQueries: c.indexQueries.Load(), Handoffs: c.handoffs.Load(), HandedOff: c.handedOff.Load(),
		Requests: map[string]int64{"Scan": c.scan.Load(), "GetItem": c.getItem.Load(), "UpdateItem": c.updateItem.Load(), "Query": c.query.Load()},
	}
}
