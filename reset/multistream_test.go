package reset

import (
	"testing"

	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// In a multi-stream table the leases of the named stream are reset, keyed
// "account:stream:epoch:shardId", and a recreated parent gets such a key
// and the streamName and shardId attributes, as KCL's multi-stream
// serializer writes them. Another stream's leases are not touched.
func TestResetInAMultiStreamTable(t *testing.T) {
	w := newWorld(t, 1)
	id := "000000000000:" + w.stream + ":1700000000"
	other := "000000000000:other-stream:1700000000"
	s0 := shardID(0)
	w.put(s0, 2)
	at := mark()
	w.put(s0, 2)
	w.split(s0)
	w.put(shardID(1), 1)
	stream := reshard.Stream{Name: w.stream, ID: id}
	for _, sh := range []string{shardID(1), shardID(2)} {
		g := w.graph()
		l, _ := reshard.NewLease(g, stream, sh, leasecore.LATEST)
		if ok, err := leasecore.CreateLease(w.ctx, w.ddb, w.table, l); err != nil || !ok {
			t.Fatal(err)
		}
	}
	otherLease := leasecore.Lease{LeaseKey: other + ":" + s0, StreamName: other, ShardID: s0, Checkpoint: seq(leasecore.LATEST)}
	if _, err := leasecore.CreateLease(w.ctx, w.ddb, w.table, otherLease); err != nil {
		t.Fatal(err)
	}
	p := w.plan(ResetOptions{Target: Target{At: at}})
	checkPlan(t, p, map[string]want{
		id + ":" + s0:         {ActionCreate, w.puts[s0][1]},
		id + ":" + shardID(1): {ActionUpdate, leasecore.TRIM_HORIZON},
		id + ":" + shardID(2): {ActionUpdate, leasecore.TRIM_HORIZON},
	})
	w.execute(p, ExecOptions{})
	ls := w.leases()
	if l := ls[id+":"+s0]; l.StreamName != id || l.ShardID != s0 || l.Checkpoint.SequenceNumber != w.puts[s0][1] {
		t.Errorf("recreated parent %+v", l)
	}
	if l := ls[other+":"+s0]; l.Checkpoint.SequenceNumber != leasecore.LATEST || l.LeaseCounter != 0 {
		t.Errorf("the other stream's lease was touched: %+v", l)
	}
	// The stream may also be named by its full identifier; an unknown one
	// is bad input.
	if p := w.plan(ResetOptions{Stream: id, Target: Target{To: leasecore.LATEST}}); len(p.Changes) != 3 || changeOf(t, p, id+":"+s0).After.SequenceNumber != leasecore.SHARD_END {
		t.Errorf("by identifier: %d rows", len(p.Changes))
	}
	if _, err := PlanReset(w.ctx, w.ddb, w.kin, ResetOptions{Table: w.table, Stream: "nope", Target: Target{To: leasecore.LATEST}}); !IsInputError(err) {
		t.Errorf("unknown stream: %v", err)
	}
}

func (w *world) graph() *reshard.Graph {
	w.t.Helper()
	shards, err := reshard.ListShards(w.ctx, w.kin, reshard.Stream{Name: w.stream}, reshard.ListOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	g, err := reshard.NewGraph(shards)
	if err != nil {
		w.t.Fatal(err)
	}
	return g
}
