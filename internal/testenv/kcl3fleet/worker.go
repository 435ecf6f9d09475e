package kcl3fleet

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/leasecore"
)

// WorkerConfig configures an OtherWorker; zero fields take the KCL's
// defaults.
type WorkerConfig struct {
	ID string
	// MetricsPeriod is workerMetricsReporterFreqInMillis (30 s).
	MetricsPeriod time.Duration
	// DiscoveryInterval is leaseAssignmentIntervalMillis / 2 - epsilon
	// (DynamoDBLeaseCoordinator, v3.5.1 lines 170-171; 9,975 ms by default).
	DiscoveryInterval time.Duration
	// RenewInterval is failoverTimeMillis / 3 - epsilon
	// (CommonCalculations.getRenewerTakerIntervalMillis; 3,308 ms by
	// default).
	RenewInterval time.Duration
	// HandoffDelay is how long the shard consumer takes to finish its batch
	// and checkpoint after the worker learns of a handoff, before the
	// assignLease write that completes it. HandoffTimeout is
	// gracefulLeaseHandoffTimeoutMillis (30 s): with NeverFinishBatch the
	// consumer never finishes and the worker writes the transfer at the
	// timeout (LeaseGracefulShutdownHandler.monitorGracefulShutdownLeases,
	// lifecycle/LeaseGracefulShutdownHandler.java lines 144-175).
	HandoffDelay     time.Duration
	HandoffTimeout   time.Duration
	NeverFinishBatch bool
	// Metrics is what the worker reports; empty is a worker off EC2, ECS
	// and EKS.
	Metrics Metrics
}

// Interval is a time a worker processed a lease: from when it started
// (a discovered lease with no checkpointOwner) to when it stopped (it saw
// a handoff away, lost the lease or was killed); To is zero while it goes
// on.
type Interval struct {
	Worker, Key string
	From, To    time.Time
}

// OtherWorker is a Java-like KCL 3.x follower for mixed fleets, written
// with plain SDK calls from the KCL's source (see the package doc for
// what it leaves out).
type OtherWorker struct {
	f     *Fleet
	cfg   WorkerConfig
	clock clock.Clock

	mu           sync.Mutex
	held         map[string]*heldLease
	intervals    []Interval
	dead         bool
	noMetrics    bool
	metricWrites int
	discoveries  int // index queries
	errs         []error
}

type heldLease struct {
	counter           int64
	shutdownRequested bool
	nextOwner         string
	handoffSeen       time.Time
	interval          int // index in intervals, -1 when not processing
}

// NewWorker builds a follower on the fleet.
func (f *Fleet) NewWorker(cfg WorkerConfig) *OtherWorker {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&cfg.MetricsPeriod, 30*time.Second)
	def(&cfg.DiscoveryInterval, 9975*time.Millisecond)
	def(&cfg.RenewInterval, 3308*time.Millisecond)
	def(&cfg.HandoffTimeout, 30*time.Second)
	return &OtherWorker{f: f, cfg: cfg, clock: f.Clock, held: map[string]*heldLease{}}
}

// ID is the worker id.
func (w *OtherWorker) ID() string { return w.cfg.ID }

// Run reports metrics, discovers and renews leases on their schedules
// until ctx ends or Kill is called. Errors of single rounds are kept
// (Errors) and the loops go on, as the KCL's do.
func (w *OtherWorker) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	loop := func(period time.Duration, step func(context.Context) error) {
		defer wg.Done()
		for {
			if w.isDead() {
				return
			}
			if err := step(ctx); err != nil && ctx.Err() == nil {
				w.mu.Lock()
				w.errs = append(w.errs, err)
				w.mu.Unlock()
			}
			if clock.Sleep(ctx, w.clock, period) != nil {
				return
			}
		}
	}
	wg.Add(3)
	go loop(w.cfg.MetricsPeriod, w.ReportMetrics)
	go loop(w.cfg.DiscoveryInterval, w.Discover)
	go loop(w.cfg.RenewInterval, w.Renew)
	wg.Wait()
	return ctx.Err()
}

// Errors returns the errors of the rounds so far.
func (w *OtherWorker) Errors() []error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]error(nil), w.errs...)
}

func (w *OtherWorker) isDead() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dead
}

// Kill stops the worker at once, as kill -9 would: its leases stay as
// they are in the table, and its processing ends now.
func (w *OtherWorker) Kill() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dead = true
	now := w.clock.Now()
	for _, h := range w.held {
		w.stopProcessingLocked(h, now)
	}
	w.held = map[string]*heldLease{}
}

// StopMetrics stops the metrics reports (the worker goes on renewing): the
// leader stops counting it active after 2 x MetricsPeriod.
func (w *OtherWorker) StopMetrics() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.noMetrics = true
}

// MetricWrites and IndexQueries count the worker's metrics writes and
// discovery queries.
func (w *OtherWorker) MetricWrites() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.metricWrites
}

func (w *OtherWorker) IndexQueries() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.discoveries
}

// ReportMetrics writes the worker's metrics item now
// (WorkerMetricStatsReporter.run; see Fleet.PutWorkerMetrics).
func (w *OtherWorker) ReportMetrics(ctx context.Context) error {
	w.mu.Lock()
	skip := w.dead || w.noMetrics
	w.mu.Unlock()
	if skip {
		return nil
	}
	if err := w.f.PutWorkerMetrics(ctx, w.cfg.ID, w.cfg.Metrics, w.clock.Now()); err != nil {
		return err
	}
	w.mu.Lock()
	w.metricWrites++
	w.mu.Unlock()
	return nil
}

// Discover is DynamoDBLeaseDiscoverer.discoverNewLeases
// (leases/dynamodb/DynamoDBLeaseDiscoverer.java lines 60-105): query the
// LeaseOwnerToLeaseKeyIndex for leaseOwner = this worker
// (DynamoDBLeaseRefresher.listLeaseKeysForWorker, lines 496-545: key
// condition "leaseOwner = :leaseOwner"), then GetItem each key not held
// yet; skip a lease whose item names another owner (the index lags) or
// still has a checkpointOwner (the old owner has not finished handing it
// over). A new lease starts being processed at once.
func (w *OtherWorker) Discover(ctx context.Context) error {
	if w.isDead() {
		return nil
	}
	var keys []string
	p := dynamodb.NewQueryPaginator(w.f.DDB, &dynamodb.QueryInput{
		TableName:                 aws.String(w.f.Tables.Lease),
		IndexName:                 aws.String("LeaseOwnerToLeaseKeyIndex"),
		KeyConditionExpression:    aws.String("leaseOwner = :leaseOwner"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":leaseOwner": s(w.cfg.ID)},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("%s: query index: %w", w.cfg.ID, err)
		}
		for _, item := range page.Items {
			if v, ok := item[leasecore.AttrLeaseKey].(*ddbtypes.AttributeValueMemberS); ok {
				keys = append(keys, v.Value)
			}
		}
	}
	w.mu.Lock()
	w.discoveries++
	var fresh []string
	for _, k := range keys {
		if _, ok := w.held[k]; !ok {
			fresh = append(fresh, k)
		}
	}
	w.mu.Unlock()
	sort.Strings(fresh)
	for _, k := range fresh {
		l, err := w.f.Lease(ctx, k)
		if errors.Is(err, errNoLease) {
			continue
		}
		if err != nil {
			return err
		}
		if l.LeaseOwner != w.cfg.ID || l.CheckpointOwner != "" {
			continue
		}
		w.mu.Lock()
		if _, ok := w.held[k]; !ok && !w.dead {
			h := &heldLease{counter: l.LeaseCounter, interval: -1}
			w.held[k] = h
			w.startProcessingLocked(k, h, w.clock.Now())
		}
		w.mu.Unlock()
	}
	return nil
}

func (w *OtherWorker) startProcessingLocked(key string, h *heldLease, now time.Time) {
	h.interval = len(w.intervals)
	w.intervals = append(w.intervals, Interval{Worker: w.cfg.ID, Key: key, From: now})
}

func (w *OtherWorker) stopProcessingLocked(h *heldLease, now time.Time) {
	if h.interval >= 0 {
		w.intervals[h.interval].To = now
		h.interval = -1
	}
}

// Renew renews every held lease once (DynamoDBLeaseRenewer.renewLease,
// leases/dynamodb/DynamoDBLeaseRenewer.java lines 207-280, with
// DynamoDBLeaseRefresher.renewLease, lines 833-916) and completes the
// handoffs whose batch is done.
func (w *OtherWorker) Renew(ctx context.Context) error {
	w.mu.Lock()
	if w.dead {
		w.mu.Unlock()
		return nil
	}
	keys := make([]string, 0, len(w.held))
	for k := range w.held {
		keys = append(keys, k)
	}
	w.mu.Unlock()
	sort.Strings(keys)
	var firstErr error
	for _, k := range keys {
		if err := w.renewOne(ctx, k); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

func (w *OtherWorker) renewOne(ctx context.Context, key string) error {
	w.mu.Lock()
	h, ok := w.held[key]
	if !ok || w.dead {
		w.mu.Unlock()
		return nil
	}
	counter, shutdown := h.counter, h.shutdownRequested
	w.mu.Unlock()

	if shutdown {
		if done, err := w.maybeCompleteHandoff(ctx, key); done || err != nil {
			return err
		}
	}
	err := renewLease(ctx, w.f.DDB, w.f.Tables.Lease, key, counter, shutdown)
	if err == nil {
		w.mu.Lock()
		h.counter = counter + 1
		w.mu.Unlock()
		return nil
	}
	if !errors.Is(err, ErrConditionFailed) {
		return err
	}
	item, rerr := w.f.Lease(ctx, key)
	if rerr != nil && !errors.Is(rerr, errNoLease) {
		return rerr
	}
	// renewLease's graceful path (lines 876-889, handleGracefulShutdown,
	// lines 1424-1450): the item shows a handoff of this worker's lease,
	// so adopt checkpointOwner and leaseOwner and renew again without the
	// checkpointOwner condition.
	if rerr == nil && !shutdown && item.CheckpointOwner != "" && item.CheckpointOwner == w.cfg.ID && item.CheckpointOwner != item.LeaseOwner {
		if err := renewLease(ctx, w.f.DDB, w.f.Tables.Lease, key, counter, true); err == nil {
			w.mu.Lock()
			h.counter = counter + 1
			h.shutdownRequested = true
			h.nextOwner = item.LeaseOwner
			h.handoffSeen = w.clock.Now()
			// Stop reading the shard: no new batch once the handoff is
			// known (LeaseGracefulShutdownHandler.initiateShutdown).
			w.stopProcessingLocked(h, h.handoffSeen)
			w.mu.Unlock()
			// The shard consumer's shutdown task writes the transfer once the
			// batch is done (ShutdownTask -> attemptLeaseTransfer), not at a
			// renewal; the handler's timeout writes it otherwise.
			wait := w.cfg.HandoffDelay
			if w.cfg.NeverFinishBatch {
				wait = w.cfg.HandoffTimeout
			}
			go func() {
				if clock.Sleep(ctx, w.clock, wait) == nil && !w.isDead() {
					_, _ = w.maybeCompleteHandoff(ctx, key)
				}
			}()
			return nil
		} else if !errors.Is(err, ErrConditionFailed) {
			return err
		}
	}
	// Spurious-failure check (lines 895-911): the lease is still ours if
	// the item shows this worker and counter N+1; otherwise it is lost.
	if rerr == nil && actualOwner(item) == w.cfg.ID && item.LeaseCounter == counter+1 && item.CheckpointOwner == "" {
		w.mu.Lock()
		h.counter = counter + 1
		w.mu.Unlock()
		return nil
	}
	w.mu.Lock()
	w.stopProcessingLocked(h, w.clock.Now())
	delete(w.held, key)
	w.mu.Unlock()
	return nil
}

// maybeCompleteHandoff writes the transfer once the batch is done (after
// HandoffDelay) or the handoff timeout has passed: attemptLeaseTransfer
// (LeaseGracefulShutdownHandler lines 217-230), the KCL's assignLease
// with the lease as this worker knows it (leaseOwner = next owner,
// checkpointOwner = this worker) to the next owner. The lease is dropped
// either way, as dropLease does after the shutdown.
func (w *OtherWorker) maybeCompleteHandoff(ctx context.Context, key string) (bool, error) {
	w.mu.Lock()
	h := w.held[key]
	if h == nil {
		w.mu.Unlock()
		return true, nil
	}
	since := w.clock.Now().Sub(h.handoffSeen)
	ready := (!w.cfg.NeverFinishBatch && since >= w.cfg.HandoffDelay) || since >= w.cfg.HandoffTimeout
	next := h.nextOwner
	w.mu.Unlock()
	if !ready {
		return false, nil
	}
	seen := leasecore.Lease{LeaseKey: key, LeaseOwner: next, CheckpointOwner: w.cfg.ID}
	_, err := assignLease(ctx, w.f.DDB, w.f.Tables.Lease, seen, next)
	if err != nil && !errors.Is(err, ErrConditionFailed) {
		return false, err
	}
	w.mu.Lock()
	delete(w.held, key)
	w.mu.Unlock()
	return true, nil
}

// Held lists the leases the worker holds (processing or handing over).
func (w *OtherWorker) Held() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.held))
	for k := range w.held {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Processing lists the leases the worker processes now.
func (w *OtherWorker) Processing() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for k, h := range w.held {
		if h.interval >= 0 {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Intervals returns the worker's processing intervals, in start order.
func (w *OtherWorker) Intervals() []Interval {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Interval(nil), w.intervals...)
}

// Overlaps returns every pair of intervals of the same lease, from
// different workers, that overlap in time (an open interval runs to now).
// Tests collect intervals from all workers (kcltool's too) and expect none.
func Overlaps(now time.Time, all ...[]Interval) [][2]Interval {
	byKey := map[string][]Interval{}
	for _, list := range all {
		for _, iv := range list {
			byKey[iv.Key] = append(byKey[iv.Key], iv)
		}
	}
	end := func(iv Interval) time.Time {
		if iv.To.IsZero() {
			return now
		}
		return iv.To
	}
	var out [][2]Interval
	for _, list := range byKey {
		for i := range list {
			for j := i + 1; j < len(list); j++ {
				a, b := list[i], list[j]
				if a.Worker != b.Worker && a.From.Before(end(b)) && b.From.Before(end(a)) {
					out = append(out, [2]Interval{a, b})
				}
			}
		}
	}
	return out
}
