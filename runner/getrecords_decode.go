package runner

import (
	"bytes"
	"encoding/base64"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/internal/jsonscan"
)

// Decoding GetRecords answers is most of a consumer's CPU: the SDK's
// schema-driven JSON decoder allocates for every field of every record and
// converts each arrival time through a big.Float. fastGetRecords decodes
// the answer itself, in one pass with a handful of allocations per page,
// into the SDK's own output type. Anything it does not expect (the
// ChildShards at the end of a shard, an error answer, malformed JSON) goes
// to the SDK's decoder instead, on the same bytes, so the result is the
// SDK's either way; a test compares the two on kinesis-local's answers.

// fastGetRecords is a per-call option for GetRecords. When wire is not
// nil it also keeps there each record's data as the base64 text it arrived
// in, one string per record (empty where there was none), or nil when the
// SDK decoded the answer: the handler input is base64 too, and passing the
// text on saves encoding it again.
func fastGetRecords(wire *[]string) func(*kinesis.Options) {
	return func(o *kinesis.Options) {
		if o.Protocol == nil {
			return
		}
		decode := func(body []byte, out *kinesis.GetRecordsOutput) error {
			err := decodeGetRecords(body, out, wire)
			if err != nil && wire != nil {
				*wire = nil
			}
			return err
		}
		o.Protocol = jsonscan.Protocol[kinesis.GetRecordsOutput, *kinesis.GetRecordsOutput]{
			ClientProtocol: o.Protocol, Decode: decode, Fallbacks: &sdkDecoded}
	}
}

// sdkDecoded counts the answers left to the SDK's decoder, for tests.
var sdkDecoded atomic.Int64

// decodeGetRecords fills o from a GetRecords answer, and *wire when wire
// is not nil (see fastGetRecords), or fails and leaves it to the SDK.
func decodeGetRecords(body []byte, o *kinesis.GetRecordsOutput, wire *[]string) error {
	// Partition keys and sequence numbers without escapes are substrings
	// of the body, no allocation each; body was read for this answer alone,
	// and the SDK's decoder, on the fallback path, only reads it.
	s := jsonscan.New(body)
	if err := s.Object(func(key []byte) error {
		switch string(key) {
		case "Records":
			return records(s, o, wire)
		case "MillisBehindLatest":
			n, err := s.Int()
			o.MillisBehindLatest = &n
			return err
		case "NextShardIterator":
			if s.Null() {
				return nil
			}
			it, err := s.String()
			o.NextShardIterator = &it
			return err
		case "ChildShards":
			if s.Null() {
				return nil
			}
			// Only at the end of a shard: rare, and the SDK knows the shape.
			return jsonscan.ErrUnhandled
		}
		return s.Skip()
	}); err != nil {
		return err
	}
	if !s.End() {
		return jsonscan.ErrUnhandled
	}
	return nil
}

// dataChunk is the size of a new data buffer when a record's need bytes do
// not fit: room for need bytes for each of the left records (this one
// included), as far as this record and the rest of the body (rest bytes)
// can hold them, which was the old size. A buffer is left only for a record
// that does not fit it, so what buffers leave unused is less than what the
// records that begin the next ones hold.
func dataChunk(need, left, rest int) int {
	return min(need*max(left, 1), need+base64.StdEncoding.DecodedLen(rest))
}

func records(s *jsonscan.Scanner, o *kinesis.GetRecordsOutput, wire *[]string) error {
	if s.Null() {
		return nil
	}
	// Backing arrays for the pointers the SDK's Record type holds, and one
	// buffer for all the data, sized for the whole body.
	// Every record is an object, so there are at most as many records as
	// '{' left in the body; counting one byte is many times faster than
	// counting a key.
	rest := s.Rest()
	n := bytes.Count(rest, []byte{'{'})
	recs := make([]types.Record, 0, n)
	strs := make([]string, 0, 2*n)
	times := make([]time.Time, 0, n)
	// The data buffer is sized at the first record as if every record were
	// that size, and another one is begun when one does not fit: sized for
	// the whole rest of the body, it was twice what a page of small
	// records holds, a large allocation per page for nothing.
	var data []byte
	var texts []string
	if wire != nil {
		texts = make([]string, 0, n)
	}
	err := s.Array(func() error {
		var r types.Record
		var text string
		err := s.Object(func(key []byte) error {
			switch string(key) {
			case "Data":
				raw, t, err := s.Base64String()
				text = t
				if err != nil {
					return jsonscan.ErrUnhandled
				}
				need := base64.StdEncoding.DecodedLen(len(raw))
				if cap(data)-len(data) < need {
					data = make([]byte, 0, dataChunk(need, n-len(recs), len(s.Rest())))
				}
				at := len(data)
				m, err := base64.StdEncoding.Decode(data[at:cap(data)], raw)
				if err != nil {
					return jsonscan.ErrUnhandled
				}
				data = data[:at+m]
				r.Data = data[at : at+m : at+m]
			case "PartitionKey", "SequenceNumber":
				if s.Null() {
					return nil
				}
				v, err := s.String()
				if err != nil {
					return err
				}
				if len(strs) == cap(strs) {
					return jsonscan.ErrUnhandled
				}
				strs = append(strs, v)
				if key[0] == 'P' {
					r.PartitionKey = &strs[len(strs)-1]
				} else {
					r.SequenceNumber = &strs[len(strs)-1]
				}
			case "ApproximateArrivalTimestamp":
				if s.Null() {
					return nil
				}
				f, err := s.Float()
				if err != nil || len(times) == cap(times) {
					return jsonscan.ErrUnhandled
				}
				// As the SDK's smithytime.ParseEpochSeconds: milliseconds,
				// truncated; float64 multiplication rounds exactly as its
				// 53-bit big.Float does.
				times = append(times, time.Unix(0, int64(f*1000)*1e6).UTC())
				r.ApproximateArrivalTimestamp = &times[len(times)-1]
			case "EncryptionType":
				if s.Null() {
					return nil
				}
				v, err := s.String()
				r.EncryptionType = types.EncryptionType(v)
				return err
			default:
				return s.Skip()
			}
			return nil
		})
		recs = append(recs, r)
		if wire != nil {
			texts = append(texts, text)
		}
		return err
	})
	o.Records = recs
	if wire != nil {
		*wire = texts
	}
	return err
}
