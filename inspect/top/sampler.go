package top

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/inspect/doctor"
	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// TableAPI is what top calls on DynamoDB: the lease table's reads and the
// KCL 3.x coordination readers' GetItem.
type TableAPI interface {
	inspect.TableAPI
	GetItem(ctx context.Context, params *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// APIs are the clients top reads through. It never writes.
type APIs struct {
	DynamoDB TableAPI
	// Kinesis is nil to read the lease table alone (no lag, no rates).
	Kinesis doctor.StreamAPI
	// CloudWatch is nil when it is not to be read (Options.CloudWatchSkipped
	// says why); doctor's CloudWatch checks are then skipped.
	CloudWatch doctor.MetricsAPI
}

// Options say what to watch.
type Options struct {
	// App names the KCL 3.0–3.4 side tables; Table is the lease table (the
	// application's name when empty).
	App, Table string
	// Stream is the stream of a single-stream table; without it lag is
	// not read. Multi-stream tables name their streams.
	Stream string
	// Interval is the time between refreshes (DefaultInterval when 0): it
	// only scales the per-minute cost, the caller schedules the refreshes.
	Interval time.Duration
	// FailoverTime is the application's failover time: a held lease whose
	// counter did not move between two reads this far apart is expired.
	FailoverTime time.Duration
	// MaxBehind: a shard further behind is a shard-lag finding.
	MaxBehind time.Duration
	// Window is doctor's window over this view's reads (doctor's default,
	// 60 s, when 0; never shorter than FailoverTime): the findings that
	// compare reads (churn, dead workers, stuck shards) look that far back.
	Window time.Duration
	// CloudWatchSkipped says why CloudWatch is not read when its client is nil.
	CloudWatchSkipped string
	// History is how many refreshes the lag history keeps (30 when 0).
	History int
	Retry   reshard.Retry
	// Clock times everything; the real clock when nil.
	Clock clock.Clock
}

func (o Options) withDefaults() Options {
	if o.Table == "" {
		o.Table = o.App
	}
	if o.App == "" {
		o.App = o.Table
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.FailoverTime <= 0 {
		o.FailoverTime = leasecore.DefaultFailoverTime
	}
	if o.MaxBehind <= 0 {
		o.MaxBehind = time.Minute
	}
	if o.Window <= 0 {
		o.Window = doctor.DefaultWindow
	}
	o.Window = max(o.Window, o.FailoverTime)
	if o.History <= 0 {
		o.History = 30
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock()
	}
	return o
}

// Sampler reads one Snapshot per Refresh and remembers what the rates, the
// history and the checkpoint ages need from the previous ones.
type Sampler struct {
	opt   Options
	apis  APIs
	count *counter
	table meteredTable
	kin   inspect.StreamAPI // metered; nil without Kinesis

	// doc runs every doctor check over this view's reads (doctor.Follower):
	// it reads only what the scan and the lag join do not hold.
	doc       *doctor.Follower
	segments  int
	refreshes int
	// kinPerRead and cwPerRead are the Kinesis and CloudWatch requests of
	// doctor's reads made at most once a minute, the last time it made them.
	kinPerRead, cwPerRead int

	prevAt  time.Time
	prev    map[string]leasecore.Lease
	moved   map[string]time.Time // when each checkpoint was last seen to change (or first seen)
	changed map[string]bool      // the checkpoint was seen to change at least once
	started time.Time
	hist    map[string][]float64
}

// NewSampler returns a Sampler; it reads nothing until Refresh.
func NewSampler(apis APIs, opt Options) *Sampler {
	opt = opt.withDefaults()
	c := &counter{}
	s := &Sampler{opt: opt, apis: apis, count: c, table: meteredTable{api: apis.DynamoDB, c: c},
		moved: map[string]time.Time{}, changed: map[string]bool{}, hist: map[string][]float64{}}
	if apis.Kinesis != nil {
		s.kin = meteredStream{api: apis.Kinesis, c: c}
	}
	return s
}

// Refresh reads the lease table once (one full Scan), the stream (one
// ListShards per stream, one probe per open shard, one counting read per
// shard whose checkpoint moved), has doctor judge the last window of those
// reads, and returns the snapshot.
func (s *Sampler) Refresh(ctx context.Context) (*Snapshot, error) {
	if err := s.setup(ctx); err != nil {
		return nil, err
	}
	s.refreshes++
	at := s.opt.Clock.Now()
	if s.started.IsZero() {
		s.started = at
	}
	// KeepItems: doctor's malformed-items finding carries the raw item.
	scan, err := leasecore.ScanTable(ctx, s.table, s.opt.Table, leasecore.ScanOptions{Segments: s.segments, KeepItems: true})
	if err != nil {
		return nil, fmt.Errorf("scan lease table %q: %w", s.opt.Table, err)
	}
	snap := &Snapshot{At: at, Table: s.opt.Table, Stream: s.opt.Stream, Refresh: s.refreshes, Interval: s.opt.Interval, Malformed: len(scan.Malformed)}
	snap.Cost.Scans, snap.Cost.Pages, snap.Cost.ReadUnits = 1, scan.Pages, scan.ReadUnits

	// The expiry rule holds only over reads a failover time apart.
	var before map[string]leasecore.Lease
	if s.prev != nil && at.Sub(s.prevAt) >= s.opt.FailoverTime {
		before = s.prev
	}
	rows := inspect.LeaseRows(scan.Leases, before)
	lag, skipped := s.readLag(ctx, scan)
	snap.LagSkipped = skipped
	rep, err := s.doc.Observe(ctx, at, scan, lag)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var coord *inspect.KCL3
	if err != nil {
		// The view goes on without doctor's findings, and says why.
		snap.Doctor.Err = err.Error()
		rep = nil
	} else {
		coord = rep.Coordination
		snap.Doctor.Window, snap.Doctor.Partial = rep.Window, rep.Partial
		s.addDoctorCost(&snap.Cost, rep.Cost)
	}
	owners := inspect.OwnersOf(&inspect.Listing{Table: s.opt.Table, Leases: rows, NonLeases: scan.NonLeases})
	owners.WithKCL3(coord)

	snap.Shards = s.shards(rows, lag, at)
	s.rates(ctx, snap.Shards, scan.Leases, at)
	if rep != nil {
		snap.Findings = attach(snap.Shards, rep.Findings)
	}
	snap.Leases, snap.Unassigned = owners.Leases, len(owners.Unassigned)
	snap.Workers = workersOf(owners, snap.Shards)
	if owners.Leader != "" || len(owners.Metrics) > 0 || coord != nil {
		k := &KCL3{Leader: owners.Leader}
		if coord != nil {
			k.Layout = coord.State.Layout.String()
		}
		snap.KCL3 = k
	}

	s.prev, s.prevAt = reshard.ByKey(scan.Leases), at
	tableCalls, kinCalls := s.count.take()
	snap.Cost.TableCalls += tableCalls
	snap.Cost.KinesisCalls += kinCalls
	snap.Cost.perMinute(s.opt.Interval, s.kinPerRead, s.cwPerRead)
	return snap, nil
}

// setup makes the doctor that follows this view (it describes the table,
// which gives the scan's segments).
func (s *Sampler) setup(ctx context.Context) error {
	if s.doc != nil {
		return nil
	}
	apis := doctor.APIs{DynamoDB: s.apis.DynamoDB, Kinesis: s.apis.Kinesis, CloudWatch: s.apis.CloudWatch}
	d, err := doctor.New(ctx, apis, doctor.Options{
		App: s.opt.App, Table: s.opt.Table, Stream: s.opt.Stream, Window: s.opt.Window, FailoverTime: s.opt.FailoverTime,
		MaxBehind: s.opt.MaxBehind, CloudWatchSkipped: s.opt.CloudWatchSkipped, Retry: s.opt.Retry, Clock: s.opt.Clock,
	})
	if err != nil {
		return err
	}
	s.doc, s.segments = d.Follow(), d.Segments()
	return nil
}

// readLag joins the scan with the stream; it says why when it could not.
func (s *Sampler) readLag(ctx context.Context, scan leasecore.ScanResult) (*inspect.Lag, string) {
	if s.kin == nil {
		return nil, "no Kinesis client"
	}
	lag, err := inspect.DiffLeases(ctx, s.kin, s.opt.Table, scan, inspect.LagOptions{
		Stream: s.opt.Stream, Retry: s.opt.Retry, Clock: s.opt.Clock, KeepProbeErrors: true, ProbeTimeout: 10 * time.Second,
	})
	switch {
	case errors.Is(err, inspect.ErrStreamRequired):
		return nil, "a single-stream table needs --stream for lag"
	case err != nil:
		return nil, err.Error()
	}
	return lag, ""
}

// rowKey identifies a shard across refreshes.
func rowKey(stream, shard string, l *leasecore.Lease) string {
	if l != nil {
		return l.LeaseKey
	}
	return stream + "/" + shard
}

// shards builds the rows: from the lag join when the stream was read
// (which adds shards without a lease), else from the leases alone.
func (s *Sampler) shards(rows []inspect.LeaseRow, lag *inspect.Lag, at time.Time) []Shard {
	state := map[string]inspect.LeaseRow{}
	for _, r := range rows {
		state[r.LeaseKey] = r
	}
	var out []Shard
	add := func(key string, sh Shard, l *leasecore.Lease) {
		if l != nil {
			sh.Owner = l.LeaseOwner
			if l.CheckpointOwner != "" {
				sh.Owner = l.CheckpointOwner
			}
			sh.Parents = l.ParentShardIDs
			sh.ThroughputKBps = l.ThroughputKBps
			s.age(key, l, at, &sh)
		}
		sh.id = key
		s.remember(key, &sh)
		out = append(out, sh)
	}
	if lag == nil {
		for _, r := range rows {
			add(r.LeaseKey, Shard{Key: r.ShardIDOrKey(), Stream: r.StreamName, State: string(r.State)}, r.Lease)
		}
		return out
	}
	for _, r := range lag.Rows {
		sh := Shard{Key: r.ShardID, Stream: r.Stream, State: string(r.State)}
		if r.State == "" {
			sh.State = "unmeasured"
		}
		if r.Lease != nil {
			// A lease state that says more than the lag does wins: an
			// unassigned or expired lease is at the tip only by accident.
			if lr, ok := state[r.Lease.LeaseKey]; ok && (lr.State == inspect.StateUnassigned || lr.State == inspect.StateExpired || lr.State == inspect.StateHandoff) && r.State != inspect.LagDrained {
				sh.State = string(lr.State)
			}
		}
		if r.MillisBehindLatest != nil {
			d := time.Duration(*r.MillisBehindLatest) * time.Millisecond
			sh.Behind = &d
		}
		add(rowKey(r.Stream, r.ShardID, r.Lease), sh, r.Lease)
	}
	return out
}

// age tracks when the lease's checkpoint last moved.
func (s *Sampler) age(key string, l *leasecore.Lease, at time.Time, sh *Shard) {
	if prev, ok := s.prev[key]; ok && prev.Checkpoint != l.Checkpoint {
		s.moved[key], s.changed[key] = at, true
	}
	if _, ok := s.moved[key]; !ok {
		s.moved[key] = at
		if s.prev != nil {
			// A lease that appeared since the last refresh is new now.
			s.changed[key] = true
		}
	}
	sh.SinceCheckpoint = at.Sub(s.moved[key])
	sh.SinceAtLeast = !s.changed[key]
	if sh.SinceAtLeast {
		sh.SinceCheckpoint = at.Sub(s.started)
	}
}

// remember appends the shard's lag to its history and copies it out.
func (s *Sampler) remember(key string, sh *Shard) {
	v := -1.0
	if sh.Behind != nil {
		v = sh.Behind.Seconds()
	}
	h := append(s.hist[key], v)
	if len(h) > s.opt.History {
		h = h[len(h)-s.opt.History:]
	}
	s.hist[key] = h
	sh.History = append([]float64(nil), h...)
}

// workersOf joins the owners with the shards' rates and the 3.x metrics.
func workersOf(o *inspect.Owners, shards []Shard) []Worker {
	rate := map[string]float64{}
	known := map[string]bool{}
	for _, sh := range shards {
		if sh.Owner != "" && sh.RecordsPerSec != nil {
			rate[sh.Owner] += *sh.RecordsPerSec
			known[sh.Owner] = true
		}
	}
	metrics := map[string]*inspect.WorkerMetrics{}
	for i := range o.Metrics {
		metrics[o.Metrics[i].Worker] = &o.Metrics[i]
	}
	var out []Worker
	for _, w := range o.Workers {
		wk := Worker{ID: w.Worker, Leases: len(w.Shards), ThroughputKBps: w.ThroughputKBps, Leader: w.Worker == o.Leader && o.Leader != "", Metrics: metrics[w.Worker]}
		if o.Leases > 0 {
			wk.Share = float64(wk.Leases) / float64(o.Leases)
		}
		if known[w.Worker] {
			r := rate[w.Worker]
			wk.RecordsPerSec = &r
		}
		out = append(out, wk)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
