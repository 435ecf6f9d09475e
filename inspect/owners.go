package inspect

import (
	"sort"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kcltool/kcltool/coordination"
	"github.com/kcltool/kcltool/leasecore"
)

// Owner is one worker's share of a lease table.
type Owner struct {
	Worker string
	// Shards are the shard ids (lease keys in multi-stream tables) it holds.
	Shards []string
	// Expired counts its leases that did not renew during --sample.
	Expired int
	// Renewals is its counter movement during --sample (nil without it).
	Renewals *int64
	// ThroughputKBps is the sum of its leases' throughputKBps, what a KCL
	// 3.x worker (kcltool's included) writes at each renewal and the
	// leader balances by; nil when none of its leases has one.
	ThroughputKBps *float64
}

// Owners is the result of OwnersOf: who holds what, against the fair share.
type Owners struct {
	Workers []Owner
	// Leases counts the leases a worker can hold: all but SHARD_END ones.
	Leases     int
	Unassigned []string
	// FairShare is ceil(leases / workers), KCL's taker target.
	FairShare int
	// Imbalanced is set when two workers differ by more than one lease.
	Imbalanced bool
	// Leader is the KCL 3.x leader lock holder, empty for 2.x tables;
	// LeaderTable is where its lock was read (set by WithKCL3).
	Leader, LeaderTable string
	// Metrics are the KCL 3.x worker-metrics items.
	Metrics []WorkerMetrics
	// Mode is the table's coordination state as Detect read it: the lease
	// assignment a `kcltool run` worker would follow now, and why (set by
	// WithMode; nil when not read).
	Mode *coordination.State
	// sampled: the listing was sampled, so every worker has Renewals.
	sampled bool
}

// WorkerMetrics is a KCL 3.x WorkerMetricStats item (docs/kcl-compat.md, KCL
// 3.x items).
type WorkerMetrics struct {
	Worker string
	// LastUpdate is the item's lut (epoch seconds); zero when absent.
	LastUpdate time.Time
	// CPU is the stored CPU utilisation series (sts.C); -1 marks a failed read.
	CPU []float64
	// Table is where the item was read: the lease table or
	// <app>-WorkerMetricStats ("" when read from the lease table's scan).
	Table string
}

// OwnersOf groups a listing by owner. The leader's workers count as workers
// even when they hold nothing, so an idle worker shows up as imbalance.
func OwnersOf(l *Listing) *Owners {
	res := &Owners{sampled: l.OwnerRenewals != nil}
	by := map[string]*Owner{}
	for _, r := range l.Leases {
		if r.State == StateShardEnd {
			continue // finished; KCL keeps it until cleanup but it needs no worker
		}
		res.Leases++
		owner := r.LeaseOwner
		if r.CheckpointOwner != "" {
			owner = r.CheckpointOwner // 3.x: the worker still processing
		}
		if owner == "" {
			res.Unassigned = append(res.Unassigned, r.ShardIDOrKey())
			continue
		}
		o := by[owner]
		if o == nil {
			o = &Owner{Worker: owner}
			by[owner] = o
		}
		o.Shards = append(o.Shards, r.ShardIDOrKey())
		if t := r.ThroughputKBps; t != nil {
			sum := *t
			if o.ThroughputKBps != nil {
				sum += *o.ThroughputKBps
			}
			o.ThroughputKBps = &sum
		}
		if r.State == StateExpired {
			o.Expired++
		}
	}
	for _, n := range l.NonLeases {
		switch n.EntityType {
		case "LEADER":
			res.Leader = attrS(n.Item, "ownerName")
		case "WORKER_METRIC_STATS":
			m := WorkerMetricsOf(n)
			res.Metrics = append(res.Metrics, m)
			if by[m.Worker] == nil {
				by[m.Worker] = &Owner{Worker: m.Worker}
			}
		}
	}
	for w, o := range by {
		if l.OwnerRenewals != nil {
			n := l.OwnerRenewals[w]
			o.Renewals = &n
		}
		res.Workers = append(res.Workers, *o)
	}
	sort.Slice(res.Workers, func(i, j int) bool { return res.Workers[i].Worker < res.Workers[j].Worker })
	res.balance()
	return res
}

// balance works out the fair share and whether the workers are imbalanced.
func (res *Owners) balance() {
	res.FairShare, res.Imbalanced = 0, false
	if n := len(res.Workers); n > 0 {
		res.FairShare = (res.Leases + n - 1) / n
		lo, hi := res.Leases, 0
		for _, o := range res.Workers {
			lo, hi = min(lo, len(o.Shards)), max(hi, len(o.Shards))
		}
		res.Imbalanced = hi-lo > 1
	}
}

// WorkerMetricsOf reads a KCL 3.x worker-metrics item: its last update and
// CPU samples.
func WorkerMetricsOf(n leasecore.NonLeaseItem) WorkerMetrics {
	m := WorkerMetrics{Worker: n.Key}
	if v, ok := n.Item["lut"].(*types.AttributeValueMemberN); ok {
		if secs, err := strconv.ParseFloat(v.Value, 64); err == nil {
			m.LastUpdate = time.Unix(int64(secs), 0).UTC()
		}
	}
	if sts, ok := n.Item["sts"].(*types.AttributeValueMemberM); ok {
		if cpu, ok := sts.Value["C"].(*types.AttributeValueMemberL); ok {
			for _, e := range cpu.Value {
				if num, ok := e.(*types.AttributeValueMemberN); ok {
					if f, err := strconv.ParseFloat(num.Value, 64); err == nil {
						m.CPU = append(m.CPU, f)
					}
				}
			}
		}
	}
	return m
}

func attrS(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}
