package inspect

import (
	"context"
	"sort"

	"github.com/kcltool/kcltool/coordination"
)

// KCL3 is what `leases owners` shows of a KCL 3.x application beyond its
// leases: the leader lock and the worker-metrics items, read where the
// layout keeps them (coordination.Detect): KCL 3.0–3.4's side tables, the
// lease table of 3.5, or both merged during the table migration's PENDING.
type KCL3 struct {
	State   coordination.State
	Lock    coordination.Lock
	Metrics []coordination.WorkerMetrics
}

// ReadKCL3 reads the application's leader lock and worker metrics; nil for
// a KCL 2.x table (no 3.x item anywhere). nonLeases is how many non-lease
// items the lease table's read held: a table with some is read as 3.5's
// layout even when Detect found no Migration3.0 or index.
func ReadKCL3(ctx context.Context, api coordination.ReadAPI, t coordination.Tables, nonLeases int) (*KCL3, error) {
	_, k, err := ReadKCL3State(ctx, api, t, nonLeases)
	return k, err
}

// ReadKCL3State is ReadKCL3 that also hands back what Detect read, for a
// KCL 2.x table too: the lease assignment mode a `kcltool run` worker would
// follow on the table now (the runner decides with the same Detect). The
// state is nil only when Detect failed; a failed lock or metrics read
// after it keeps the state.
func ReadKCL3State(ctx context.Context, api coordination.ReadAPI, t coordination.Tables, nonLeases int) (*coordination.State, *KCL3, error) {
	st, err := coordination.Detect(ctx, api, t)
	if err != nil {
		return nil, nil, err
	}
	k, err := readKCL3(ctx, api, t, st, nonLeases)
	return &st, k, err
}

func readKCL3(ctx context.Context, api coordination.ReadAPI, t coordination.Tables, st coordination.State, nonLeases int) (*KCL3, error) {
	var err error
	read, present := st.ForReading(nonLeases)
	if !present {
		return nil, nil
	}
	k := &KCL3{State: st}
	if k.Lock, err = coordination.ReadLock(ctx, api, t, read); err != nil {
		return nil, err
	}
	if k.Metrics, err = coordination.ListWorkerMetrics(ctx, api, t, read); err != nil {
		return nil, err
	}
	return k, nil
}

// WithKCL3 replaces what OwnersOf read of the 3.x entities in the lease
// table with what ReadKCL3 read in both layouts: the leader, and every
// worker-metrics item (kcltool workers' as Java workers': they write the
// same items). A worker with metrics and no lease is listed, idle.
func (o *Owners) WithKCL3(k *KCL3) *Owners {
	if k == nil {
		return o
	}
	o.Leader, o.LeaderTable, o.Metrics = "", "", nil
	if k.Lock.Found {
		o.Leader, o.LeaderTable = k.Lock.Owner, k.Lock.Table
	}
	known := map[string]bool{}
	for _, w := range o.Workers {
		known[w.Worker] = true
	}
	for _, m := range k.Metrics {
		o.Metrics = append(o.Metrics, WorkerMetrics{Worker: m.WorkerID, LastUpdate: m.LastUpdate, CPU: m.Samples["C"], Table: m.Table})
		if !known[m.WorkerID] {
			known[m.WorkerID] = true
			w := Owner{Worker: m.WorkerID}
			if o.sampled {
				var zero int64
				w.Renewals = &zero
			}
			o.Workers = append(o.Workers, w)
		}
	}
	sort.Slice(o.Workers, func(i, j int) bool { return o.Workers[i].Worker < o.Workers[j].Worker })
	o.balance()
	return o
}

// WithMode records the table's lease assignment mode (ReadKCL3State); nil
// when it could not be read.
func (o *Owners) WithMode(st *coordination.State) *Owners {
	o.Mode = st
	return o
}
