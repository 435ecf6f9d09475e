package runner

import (
	"bytes"
	"encoding/base64"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/internal/jsonscan"
	"github.com/kcltool/kcltool/kinesisrec"
)

// Decoding GetRecords answers is most of a consumer's CPU: the SDK's
// schema-driven JSON decoder allocates for every field of every record and
// converts each arrival time through a big.Float. fastGetRecords decodes
// the answer itself, in one pass with a handful of allocations per page,
// straight into the fetcher's records (fastPage); the SDK's output then
// carries the rest of the answer and no records. Anything it does not
// expect (the ChildShards at the end of a shard, an error answer, malformed
// JSON) goes to the SDK's decoder instead, on the same bytes, and the
// fetcher converts the SDK's records (kinesisrec.FromKinesis), so the
// result is the same either way; a test compares the two on kinesis-local's
// answers.

// fastPage is what the fast decoder hands the fetcher: the answer's
// records as Records of shardID, each with its data's base64 text as it
// arrived (Wire64: the handler input is base64 too, and passing the text on
// saves encoding it again). ok is false when the SDK decoded the answer;
// its records are then in the SDK's output.
type fastPage struct {
	shardID string
	// encoded keeps each record's data as its base64 text only
	// (kinesisrec.Record.SetEncoded), for a handler that takes base64 (the
	// MultiLang protocol): decoding it only to encode it again is work and
	// fresh memory for nothing. Data that may be a KPL aggregate, and text
	// that is not plain base64, are decoded as before.
	encoded bool
	records []kinesisrec.Record
	ok      bool
}

// fastGetRecords is a per-call option for GetRecords that decodes a
// successful answer into fast.
func fastGetRecords(fast *fastPage) func(*kinesis.Options) {
	return func(o *kinesis.Options) {
		if o.Protocol == nil {
			return
		}
		decode := func(body []byte, out *kinesis.GetRecordsOutput) error {
			return decodeGetRecords(body, out, fast)
		}
		o.Protocol = jsonscan.Protocol[kinesis.GetRecordsOutput, *kinesis.GetRecordsOutput]{
			ClientProtocol: o.Protocol, Decode: decode, Fallbacks: &sdkDecoded}
	}
}

// sdkDecoded counts the answers left to the SDK's decoder, for tests.
var sdkDecoded atomic.Int64

// decodeGetRecords fills o from a GetRecords answer, but for its records,
// which go to fast (see fastGetRecords), or fails and leaves it to the SDK.
func decodeGetRecords(body []byte, o *kinesis.GetRecordsOutput, fast *fastPage) error {
	fast.records, fast.ok = nil, false
	// Partition keys and sequence numbers without escapes are substrings
	// of the body, no allocation each; body was read for this answer alone,
	// and the SDK's decoder, on the fallback path, only reads it.
	s := jsonscan.New(body)
	if err := s.Object(func(key []byte) error {
		switch string(key) {
		case "Records":
			return records(s, fast)
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
		fast.records = nil
		return err
	}
	if !s.End() {
		fast.records = nil
		return jsonscan.ErrUnhandled
	}
	fast.ok = true
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

func records(s *jsonscan.Scanner, fast *fastPage) error {
	if s.Null() {
		return nil
	}
	// One array for the records, and buffers for all their data.
	// Every record is an object, so there are at most as many records as
	// '{' left in the body; counting one byte is many times faster than
	// counting a key.
	n := bytes.Count(s.Rest(), []byte{'{'})
	recs := make([]kinesisrec.Record, 0, n)
	// The data buffer is sized at the first record as if every record were
	// that size, and another one is begun when one does not fit: sized for
	// the whole rest of the body, it was twice what a page of small
	// records holds, a large allocation per page for nothing. Not nil, so
	// that empty data is empty, not absent, as the SDK decodes it.
	data := []byte{}
	err := s.Array(func() error {
		r := kinesisrec.Record{ShardID: fast.shardID}
		err := s.Object(func(key []byte) error {
			switch string(key) {
			case "Data":
				raw, text, err := s.Base64String()
				if err != nil {
					return jsonscan.ErrUnhandled
				}
				if fast.encoded {
					if n, ok := base64Len(raw); ok && r.SetEncoded(text, n) {
						return nil
					}
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
				r.SetWire64(text)
			case "PartitionKey", "SequenceNumber":
				// null is what an absent key is: empty (kinesisrec.FromKinesis).
				if s.Null() {
					return nil
				}
				v, err := s.String()
				if err != nil {
					return err
				}
				if key[0] == 'P' {
					r.PartitionKey = v
				} else {
					r.SequenceNumber = v
				}
			case "ApproximateArrivalTimestamp":
				if s.Null() {
					return nil
				}
				f, err := s.Float()
				if err != nil {
					return jsonscan.ErrUnhandled
				}
				// As the SDK's smithytime.ParseEpochSeconds: milliseconds,
				// truncated; float64 multiplication rounds exactly as its
				// 53-bit big.Float does.
				r.ApproximateArrivalTimestamp = time.Unix(0, int64(f*1000)*1e6).UTC()
			case "EncryptionType":
				// Records carry no encryption type; the SDK's decoder would
				// take only a string.
				if s.Null() {
					return nil
				}
				_, err := s.String()
				return err
			default:
				return s.Skip()
			}
			return nil
		})
		recs = append(recs, r)
		return err
	})
	fast.records = recs
	return err
}

// base64Len is the length of the data b encodes, when b is plain padded
// base64 (the standard alphabet, no line breaks or escapes), which is how
// Kinesis sends every record's data; ok is false otherwise, and the text
// goes to base64's decoder, which says what is wrong with it. Checking is
// cheaper than decoding, and writes nothing.
func base64Len(b []byte) (int, bool) {
	if len(b)%4 != 0 {
		return 0, false
	}
	pad := 0
	if len(b) > 0 && b[len(b)-1] == '=' {
		pad = 1
		if b[len(b)-2] == '=' {
			pad = 2
		}
	}
	t := b[:len(b)-pad]
	// Eight bytes a step: one test of the table's bits per step.
	ok := byte(1)
	for len(t) >= 8 {
		a := &base64Alphabet
		ok &= a[t[0]] & a[t[1]] & a[t[2]] & a[t[3]] & a[t[4]] & a[t[5]] & a[t[6]] & a[t[7]]
		t = t[8:]
	}
	for _, c := range t {
		ok &= base64Alphabet[c]
	}
	return len(b)/4*3 - pad, ok == 1
}

// base64Alphabet is 1 for the standard base64 alphabet's bytes, 0 for others.
var base64Alphabet = func() (t [256]byte) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") {
		t[c] = 1
	}
	return t
}()
