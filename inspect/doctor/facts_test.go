package doctor

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/fanout"
	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// Hand-built facts for the checks' unit tests: no server, no clock, only
// the values a gather phase would have produced.

var factsT0 = time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)

const factsFailover = 10 * time.Second

// leaseAt gives a lease as it looks in read i of a window (nil: absent).
type leaseAt func(i int) *leasecore.Lease

// handBuilt makes the facts of n reads a failover time apart, the last one
// "now", with the stream, CloudWatch and KCL 3.x left empty.
func handBuilt(n int, leases ...leaseAt) *facts {
	var samples []sample
	for i := range n {
		var ls []leasecore.Lease
		for _, at := range leases {
			if l := at(i); l != nil {
				ls = append(ls, *l)
			}
		}
		samples = append(samples, sample{at: factsT0.Add(time.Duration(i) * factsFailover), leases: ls, byKey: reshard.ByKey(ls)})
	}
	opt := Options{App: "app", FailoverTime: factsFailover, Window: time.Duration(n-1) * factsFailover}.withDefaults()
	fc := &facts{opt: opt, view: newFleetView(samples, opt.FailoverTime), last: samples[n-1], now: samples[n-1].at}
	var before map[string]leasecore.Lease
	if n > 1 {
		before = samples[n-2].byKey
	}
	fc.rows = inspect.LeaseRows(fc.last.leases, before)
	fc.derive()
	return fc
}

// renewed: owner renews the lease every read; the checkpoint stays at cp.
func renewed(key, owner, cp string) leaseAt {
	return func(i int) *leasecore.Lease {
		return &leasecore.Lease{LeaseKey: key, LeaseOwner: owner, LeaseCounter: int64(10 + i), Checkpoint: leasecore.SequenceNumber{SequenceNumber: cp}}
	}
}

// progressing: owner renews the lease and moves its checkpoint every read.
func progressing(key, owner string) leaseAt {
	return func(i int) *leasecore.Lease {
		return &leasecore.Lease{LeaseKey: key, LeaseOwner: owner, LeaseCounter: int64(10 + i), Checkpoint: leasecore.SequenceNumber{SequenceNumber: fmt.Sprint(100 + i)}}
	}
}

// still: nobody renews the lease (its owner, if any, is dead).
func still(key, owner string) leaseAt {
	return func(int) *leasecore.Lease {
		return &leasecore.Lease{LeaseKey: key, LeaseOwner: owner, LeaseCounter: 5, Checkpoint: leasecore.SequenceNumber{SequenceNumber: "100"}}
	}
}

// moved: the lease passes from one live owner to another at read at.
func moved(key, from, to string, at int) leaseAt {
	return func(i int) *leasecore.Lease {
		l := progressing(key, from)(i)
		if i >= at {
			l.LeaseOwner = to
		}
		return l
	}
}

// with changes a lease in every read.
func with(at leaseAt, change func(*leasecore.Lease)) leaseAt {
	return func(i int) *leasecore.Lease {
		l := at(i)
		if l != nil {
			change(l)
		}
		return l
	}
}

func behind(d time.Duration) *int64 { ms := d.Milliseconds(); return &ms }

// lagRow is the stream's row for a lease of fc's last read.
func lagRow(fc *facts, key string, state inspect.LagState, open bool) inspect.LagRow {
	l := fc.last.byKey[key]
	return inspect.LagRow{Stream: "s", ShardID: key, Lease: &l, State: state, Shard: &reshard.Node{ShardID: key, Open: open}}
}

// withLag gives fc the stream's rows, and derives again what rests on them.
func withLag(fc *facts, rows ...inspect.LagRow) *facts {
	fc.lag = &inspect.Lag{Table: fc.opt.Table, Rows: rows}
	fc.skipped = nil
	fc.derive()
	return fc
}

// series is one CloudWatch series' datapoints.
type series struct {
	use, subject string
	values       []float64
}

func metricsOf(ss ...series) *metricSet {
	m := &metricSet{}
	for _, s := range ss {
		m.specs = append(m.specs, metricSpec{use: s.use, subject: s.subject})
		m.values = append(m.values, s.values)
	}
	return m
}

func provisionedTable(rcu, wcu int64) *ddbtypes.TableDescription {
	return &ddbtypes.TableDescription{ProvisionedThroughput: &ddbtypes.ProvisionedThroughputDescription{
		ReadCapacityUnits: aws.Int64(rcu), WriteCapacityUnits: aws.Int64(wcu)}}
}

// everything is facts on which every check has something to say: it is
// the shuffle test's input, so that any order dependency between two
// checks shows. Some facts contradict others (CloudWatch both read and
// skipped); no check minds.
func everything() *facts {
	fc := handBuilt(3,
		renewed("s-stuck", "w1", "100"),
		renewed("s-orph", "w1", "200"),
		progressing("s-lag", "w2"),
		progressing("s-gone", "w2"),
		still("s-dead", "w-dead"),
		still("s-free", ""),
		with(progressing("s-hand", "w3"), func(l *leasecore.Lease) { l.CheckpointOwner = "w2" }),
		with(progressing("s-exp", "w2"), func(l *leasecore.Lease) {
			l.Extra = map[string]ddbtypes.AttributeValue{reshard.AttrExpired: &ddbtypes.AttributeValueMemberS{Value: "2026-01-02T00:00:00Z ResourceNotFoundException"}}
		}),
		with(progressing("s-child", "w2"), func(l *leasecore.Lease) { l.ParentShardIDs = []string{"s-stuck"} }),
		moved("s-moved", "w1", "w2", 1),
		progressing("s-unread", "w2"),
	)
	stuck := lagRow(fc, "s-stuck", inspect.LagBehind, true)
	stuck.MillisBehindLatest = behind(2 * time.Minute)
	orph := lagRow(fc, "s-orph", inspect.LagOrphanLease, true)
	orph.ProbeErr = errors.New("GetShardIterator: access denied")
	lag := lagRow(fc, "s-lag", inspect.LagBehind, true)
	lag.MillisBehindLatest = behind(5 * time.Minute)
	gone := lagRow(fc, "s-gone", inspect.LagOrphanLease, false)
	gone.Shard = nil
	missing := inspect.LagRow{Stream: "s", ShardID: "s-new", State: inspect.LagMissingLease, Shard: &reshard.Node{ShardID: "s-new", Open: true}}
	unread := lagRow(fc, "s-unread", inspect.LagBehind, true)
	unread.ProbeErr = errors.New("GetRecords: throttled")
	withLag(fc, stuck, orph, lag, gone, missing, unread)

	fc.last.malformed = []error{errors.New("lease s-bad: leaseCounter is not a number")}
	fc.kcl3 = kcl3State{present: true, leader: "w1", metrics: []coordination.WorkerMetrics{{WorkerID: "w1", LastUpdate: fc.now}}}
	fc.desc = provisionedTable(100, 1)
	fc.metrics = metricsOf(
		series{mDDBThrottled, "UpdateItem", []float64{3}},
		series{mIteratorAge, "s", []float64{float64((3 * time.Minute).Milliseconds())}},
		series{mKCLLost, "", []float64{2}},
		series{mKCLShardLag, "s-lag", []float64{float64((4 * time.Minute).Milliseconds())}},
		series{mSubRateExceeded, "s/app", []float64{2}},
	)
	fc.consumers = []*fanout.ConsumerListing{{StreamName: "s", Consumers: []fanout.StreamConsumer{
		{Name: "app", Status: kintypes.ConsumerStatusCreating, CreatedAt: fc.now.Add(-time.Hour)}}}}
	why := "--no-cloudwatch"
	fc.cwSkipped = &why
	fc.skipped = append(fc.skipped, "enhanced fan-out consumer checks on s2: listing its consumers failed")
	return fc
}

// TestFactsDerive: the facts several checks rest on are derived once, in
// the gather phase: a failed probe of a lease held still makes it
// kinesis-stuck, one of a lease that moves makes its lag unmeasured (a
// checks-skipped entry), and with a single read neither is known.
func TestFactsDerive(t *testing.T) {
	build := func(reads int) *facts {
		fc := handBuilt(reads, renewed("held", "w1", "100"), progressing("moving", "w1"))
		h, m := lagRow(fc, "held", inspect.LagBehind, true), lagRow(fc, "moving", inspect.LagBehind, true)
		h.ProbeErr, m.ProbeErr = errors.New("GetRecords: boom"), errors.New("GetShardIterator: bang")
		return withLag(fc, h, m)
	}
	fc := build(3)
	if !fc.kinesisStuck["held"] || fc.kinesisStuck["moving"] || len(fc.kinesisStuck) != 1 {
		t.Errorf("kinesisStuck = %v, want held only", fc.kinesisStuck)
	}
	want := []string{"lag of 1 shard: doctor's reads of them failed: moving (error: GetShardIterator: bang)"}
	if !reflect.DeepEqual(fc.skipped, want) {
		t.Errorf("skipped = %q, want %q", fc.skipped, want)
	}
	if one := build(1); len(one.kinesisStuck) != 0 || len(one.skipped) != 0 {
		t.Errorf("one read: kinesisStuck %v, skipped %q; want neither", one.kinesisStuck, one.skipped)
	}
}
