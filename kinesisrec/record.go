package kinesisrec

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/leasecore"
)

// Record is one user record as a handler sees it: a Kinesis record, or one
// sub-record of a KPL aggregate (then several records share SequenceNumber
// and differ by SubSequenceNumber, exactly as KCL's KinesisClientRecord).
type Record struct {
	Data                        []byte
	PartitionKey                string
	SequenceNumber              string
	SubSequenceNumber           int64
	ApproximateArrivalTimestamp time.Time // zero when Kinesis did not say
	ExplicitHashKey             string    // decimal; empty when absent (only KPL sub-records carry one)
	ShardID                     string

	// wire64 is Data as the base64 text GetRecords sent, when the fast
	// decoder read it; empty otherwise. Whoever changes Data clears it.
	wire64 string
}

// Wire64 is Data as the base64 text GetRecords sent, when the consumer's
// fast decoder kept it, or "": the handler input is base64 too, and passing
// the text on saves encoding it again.
func (r Record) Wire64() string { return r.wire64 }

// SetWire64 records s as Data's base64 text, as GetRecords sent it; "" forgets it.
func (r *Record) SetWire64(s string) { r.wire64 = s }

// Position is the record's place in its shard, in the form a checkpoint takes.
func (r Record) Position() leasecore.SequenceNumber {
	return leasecore.SequenceNumber{SequenceNumber: r.SequenceNumber, SubSequenceNumber: r.SubSequenceNumber}
}

// FromKinesis converts GetRecords output into Records of shardID. Data is
// shared with the input, not copied: a GetRecords page is never reused.
func FromKinesis(shardID string, in []types.Record) []Record {
	out := make([]Record, len(in))
	for i, r := range in {
		out[i] = Record{Data: r.Data, ShardID: shardID}
		if r.SequenceNumber != nil {
			out[i].SequenceNumber = *r.SequenceNumber
		}
		// PartitionKey is nil for streams with AUTO record distribution when
		// the producer gave none; an empty key is what such a record has.
		if r.PartitionKey != nil {
			out[i].PartitionKey = *r.PartitionKey
		}
		if r.ApproximateArrivalTimestamp != nil {
			out[i].ApproximateArrivalTimestamp = *r.ApproximateArrivalTimestamp
		}
	}
	return out
}

// AfterCheckpoint drops every record whose (sequence, sub-sequence) is at or
// below checkpoint, as KCL's ProcessTask.filterAndGetMaxExtendedSequenceNumber
// does. It is needed because a numeric checkpoint restarts the shard with
// AT_SEQUENCE_NUMBER (docs/kcl-compat.md, Where a reader starts): the
// checkpointed record itself comes back, and so do the sub-records of its
// aggregate up to the checkpointed sub-sequence number. Sentinel checkpoints keep every record (they sort
// below all sequence numbers) except SHARD_END, which keeps none.
//
// It returns records itself when nothing is dropped, otherwise a new slice.
func AfterCheckpoint(records []Record, checkpoint leasecore.SequenceNumber) []Record {
	first := -1
	for i := range records {
		if leasecore.Compare(records[i].Position(), checkpoint) <= 0 {
			first = i
			break
		}
	}
	if first < 0 {
		return records
	}
	// Each record is checked on its own, like KCL, rather than cutting at the
	// first one past the checkpoint: it costs little and assumes nothing.
	out := make([]Record, 0, len(records)-1)
	out = append(out, records[:first]...)
	for _, r := range records[first+1:] {
		if leasecore.Compare(r.Position(), checkpoint) > 0 {
			out = append(out, r)
		}
	}
	return out
}
