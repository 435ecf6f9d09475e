// Package top is the data behind `kcltool top`: one Snapshot per refresh
// of a KCL application's lease table and stream, with what only a series of
// refreshes can tell (records per second, a lag history, the time since a
// checkpoint last moved) and what the refresh cost. It knows nothing of
// terminals: cmd/top draws it.
package top

import (
	"time"

	"github.com/kcltool/kcltool/inspect"
	"github.com/kcltool/kcltool/inspect/doctor"
)

// Snapshot is what one refresh read.
type Snapshot struct {
	At            time.Time
	Table, Stream string
	// Refresh counts the refreshes, from 1.
	Refresh  int
	Interval time.Duration
	Shards   []Shard
	Workers  []Worker
	// KCL3 is the leader and the worker metrics of a KCL 3.x table; nil on
	// a KCL 2.x table.
	KCL3 *KCL3
	// Leases counts the leases a worker can hold (not at SHARD_END);
	// Unassigned those of them nobody holds.
	Leases, Unassigned int
	// Malformed counts lease items that did not decode.
	Malformed int
	// LagSkipped says why the stream was not read ("" when it was).
	LagSkipped string
	// Findings are every doctor finding on the last window of this view's
	// reads, worst first; each shard's Findings are those that name it.
	Findings []Finding
	// Doctor says how much of its window doctor has judged, or why it
	// could not judge this refresh.
	Doctor DoctorState
	Cost   Cost
}

// DoctorState is how far doctor got with this view's reads.
type DoctorState struct {
	// Window is the time between the first and the last read judged.
	// Partial: that is still shorter than doctor's window, so the findings
	// that compare reads (churn, dead workers, stuck shards) may come yet.
	Window  time.Duration
	Partial bool
	// Err is why doctor failed this refresh ("" when it did not): the view
	// shows the rest without findings.
	Err string
}

// Shard is one lease, joined with its shard in the stream when read.
type Shard struct {
	// Key is the shard id (the lease key in a multi-stream table).
	Key    string
	Stream string
	// State is the lag state (inspect.LagState) when the stream was read,
	// else the lease state (inspect.State).
	State string
	// Owner is the worker processing the shard (the checkpoint owner
	// during a KCL 3.x handoff).
	Owner   string
	Parents []string
	// RecordsPerSec is the records between the previous checkpoint and this
	// one over the time between the reads; nil until the checkpoint has
	// been seen twice. RecordsCapped: more than one read counts, so the
	// rate is at least this.
	RecordsPerSec *float64
	RecordsCapped bool
	// Behind is MillisBehindLatest of the checkpoint; nil when not measured.
	Behind *time.Duration
	// History is Behind over the last refreshes, oldest first, in seconds
	// (-1 where a refresh did not measure it).
	History []float64
	// SinceCheckpoint is the time since the checkpoint last moved, as seen
	// by this view. SinceAtLeast: it has not moved since the view started,
	// so the real age is at least this.
	SinceCheckpoint time.Duration
	SinceAtLeast    bool
	// ThroughputKBps is what a KCL 3.x worker wrote at renewal; nil when absent.
	ThroughputKBps *float64
	Findings       []Finding
	// id is the shard's identity across refreshes: its lease key, or
	// stream/shard for a shard without a lease.
	id string
}

// Finding is a doctor finding, as `kcltool doctor` reports it over the
// same window of reads (docs/doctor.md has its causes and fixes).
type Finding struct {
	ID       string
	Severity doctor.Severity
	Summary  string
	// Shards and Workers are those it names (lease keys in a multi-stream
	// table); a finding that names no shard is about the fleet or a worker.
	Shards, Workers []string
}

// Worker is one worker's share of the table.
type Worker struct {
	ID string
	// Leases is how many leases it holds; Share its fraction of Leases.
	Leases int
	Share  float64
	// RecordsPerSec sums its shards' rates; nil when none is known yet.
	RecordsPerSec  *float64
	ThroughputKBps *float64
	Leader         bool
	// Metrics is its KCL 3.x worker-metrics item; nil when absent.
	Metrics *inspect.WorkerMetrics
}

// KCL3 is what the view shows of the KCL 3.x coordination.
type KCL3 struct {
	Leader string
	// Layout is where the 3.x items live (coordination.Layout).
	Layout string
}
