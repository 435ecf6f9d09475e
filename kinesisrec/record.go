package kinesisrec

import (
	"encoding/base64"
	"strings"
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
	// encodedLen is the length of the data of a record whose data was kept
	// as wire64 only (SetEncoded): Data is nil then, until Payload decodes it.
	encodedLen int
}

// SetEncoded keeps the record's data as s, the base64 text GetRecords sent
// for n bytes, without decoding it: Data stays nil, Wire64 is s, DataLen is
// n and Payload decodes it. For a consumer whose handler takes the data as
// base64 (the MultiLang protocol): decoding every record's data only to
// encode it again is most of the work of such a page. The caller has
// checked that s is valid base64 of n bytes, n > 0. Data that may be a KPL
// aggregate (its text begins as the aggregates' magic bytes do) is not
// kept encoded, so that Deaggregate sees it: SetEncoded then does nothing
// and returns false, and the caller sets Data.
func (r *Record) SetEncoded(s string, n int) bool {
	if n <= 0 || strings.HasPrefix(s, kplMagic64) {
		return false
	}
	r.Data, r.wire64, r.encodedLen = nil, s, n
	return true
}

// kplMagic64 is how the base64 text of every KPL aggregate begins: the
// first three of kplMagic's bytes.
const kplMagic64 = "84ma"

// DataLen is the length of the record's data, decoded or not.
func (r *Record) DataLen() int {
	if r.Data == nil {
		return r.encodedLen
	}
	return len(r.Data)
}

// Payload is the record's data: Data, or decoded from Wire64 when the
// record keeps it encoded (SetEncoded).
func (r *Record) Payload() []byte {
	if r.Data != nil || r.encodedLen == 0 {
		return r.Data
	}
	b, err := base64.StdEncoding.DecodeString(r.wire64)
	if err != nil {
		return nil // SetEncoded's caller checked it
	}
	return b
}

// Wire64 is Data as the base64 text GetRecords sent, when the consumer's
// fast decoder kept it, or "": the handler input is base64 too, and passing
// the text on saves encoding it again.
func (r *Record) Wire64() string { return r.wire64 }

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
