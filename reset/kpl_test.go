package reset

import (
	"crypto/md5"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// kplAggregate frames n user records as one KPL aggregated record (magic,
// AggregatedRecord protobuf, MD5), the way the KPL writes it.
func kplAggregate(n int) []byte {
	var msg []byte
	msg = protowire.AppendTag(msg, 1, protowire.BytesType) // partition_key_table
	msg = protowire.AppendString(msg, "k")
	for i := range n {
		var rec []byte
		rec = protowire.AppendTag(rec, 1, protowire.VarintType) // partition_key_index
		rec = protowire.AppendVarint(rec, 0)
		rec = protowire.AppendTag(rec, 3, protowire.BytesType) // data
		rec = protowire.AppendBytes(rec, []byte{byte('a' + i)})
		msg = protowire.AppendTag(msg, 3, protowire.BytesType) // records
		msg = protowire.AppendBytes(msg, rec)
	}
	sum := md5.Sum(msg)
	out := append([]byte{0xF3, 0x89, 0x9A, 0xC2}, msg...)
	return append(out, sum[:]...)
}

// All sub-records of an aggregate arrive with it, so a time after it puts
// the checkpoint at its last sub-record: KCL drops sub-records at or below
// the checkpoint's sub-sequence number, and none of them may come back.
func TestResetAtTimeCheckpointsTheLastSubRecordOfAnAggregate(t *testing.T) {
	w := newWorld(t, 1)
	shard := shardID(0)
	w.put(shard, 1)
	agg := w.putData(shard, 1, func(int) []byte { return kplAggregate(4) })[0]
	at := mark()
	w.put(shard, 1)
	w.lease(shard, "", last(w.puts[shard]))
	c := changeOf(t, w.plan(ResetOptions{Target: Target{At: at}}), shard)
	if c.After == nil || c.After.SequenceNumber != agg || c.After.SubSequenceNumber != 3 {
		t.Fatalf("checkpoint %v, want %s/3 (%s)", c.After, agg, c.Reason)
	}
}
