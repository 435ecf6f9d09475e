package kinesisrec

import (
	"bytes"
	"testing"

	"github.com/kcltool/kcltool/leasecore"
)

// FuzzDeaggregate feeds arbitrary protobuf bodies, framed with a correct
// checksum so that the parser (not just the MD5 check) sees them, and also
// arbitrary raw records. De-aggregation must never panic, and whatever it
// returns must be either the record passed through or sub-records of it.
func FuzzDeaggregate(f *testing.F) {
	f.Add(aggregateProto([]userRecord{{PartitionKey: "a", Data: []byte("x")}}), false)
	f.Add(aggregateProto([]userRecord{
		{PartitionKey: "a", Data: []byte("one")},
		{PartitionKey: "b", ExplicitHashKey: "42", Data: []byte("two")},
		{PartitionKey: "c", ExplicitHashKey: "-1", Data: nil},
	}), false)
	f.Add(aggregateProto([]userRecord{{PartitionKey: "a", ExplicitHashKey: "x", Data: []byte("x")}}), false)
	f.Add([]byte{0x0a, 0x01, 'a', 0x1a, 0x04, 0x08, 0x05, 0x1a, 0x00}, false)     // index outside the table
	f.Add([]byte{0x1a, 0x06, 0x08, 0x00, 0x22, 0x02, 0x12, 0x00}, false)          // tag without key
	f.Add([]byte{0x83, 0x01, 0x08, 0x01, 0x84, 0x01}, false)                      // group
	f.Add(append(bytes.Clone(kplMagic), "short"...), true)                        // raw
	f.Add(aggregate(userRecord{PartitionKey: "a", Data: []byte("x")})[:20], true) // raw, truncated
	f.Fuzz(func(t *testing.T, b []byte, raw bool) {
		data := b
		if !raw {
			data = frame(b)
		}
		in := []Record{kinesisRecord("9", data), kinesisRecord("10", []byte("plain"))}
		for _, hr := range []leasecore.HashRange{{}, mustRange(t, "0", lowerHalfEnd)} {
			out, rep := Deaggregate(in, hr)
			if len(out) == 0 || out[len(out)-1].SequenceNumber != "10" {
				t.Fatalf("the plain record after the blob was lost: %+v", out)
			}
			subs := out[:len(out)-1]
			if rep.Aggregates == 0 {
				if len(subs) != 1 || !bytes.Equal(subs[0].Data, data) || subs[0].SubSequenceNumber != 0 {
					t.Fatalf("not an aggregate, yet not passed through unchanged: %+v", subs)
				}
				continue
			}
			for i, s := range subs {
				if s.SequenceNumber != "9" || s.SubSequenceNumber != int64(i) || s.ShardID != in[0].ShardID || !s.ApproximateArrivalTimestamp.Equal(arrival) {
					t.Fatalf("sub-record %d: %+v", i, s)
				}
			}
			if rep.OutOfRange > 0 && len(subs) != 0 {
				t.Fatalf("an aggregate outside the range left %d sub-records", len(subs))
			}
		}
	})
}
