package retrieval

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

// pageDecoder reads the records of one page.
// The scanner is passed apart: in the struct, it would leak with the data
// buffer (escape analysis does not tell fields apart) and cost an
// allocation per page.
type pageDecoder struct {
	encoded bool // fastPage.encoded
	// data holds the decoded data of records that are not kept encoded;
	// n is the bound on the page's records that sized recs.
	data []byte
	n    int
}

func records(s *jsonscan.Scanner, fast *fastPage) error {
	if s.Null() {
		return nil
	}
	// One array for the records, and buffers for all their data.
	// Every record is an object, so there are at most as many records as
	// '{' left in the body; counting one byte is many times faster than
	// counting a key.
	d := pageDecoder{encoded: fast.encoded, n: bytes.Count(s.Rest(), []byte{'{'})}
	recs := make([]kinesisrec.Record, 0, d.n)
	// The data buffer is sized at the first record as if every record were
	// that size, and another one is begun when one does not fit: sized for
	// the whole rest of the body, it was twice what a page of small
	// records holds, a large allocation per page for nothing. Not nil, so
	// that empty data is empty, not absent, as the SDK decodes it.
	d.data = []byte{}
	err := s.ArrayStart()
	for first := true; err == nil; first = false {
		var more bool
		if more, err = s.NextElem(first); !more || err != nil {
			break
		}
		// Each record is written where it stays: a Record is 144 bytes,
		// and building it aside to append it copies it through the
		// garbage collector's write barriers.
		recs = append(recs, kinesisrec.Record{ShardID: fast.shardID})
		err = d.record(s, &recs[len(recs)-1], len(recs))
	}
	fast.records = recs
	return err
}

// recordKeys are the keys of a record, in the order of their key* indexes.
var recordKeys = jsonscan.NewKeys("Data", "PartitionKey", "SequenceNumber", "ApproximateArrivalTimestamp", "EncryptionType")

const (
	keyData = iota
	keyPartitionKey
	keySequenceNumber
	keyArrival
	keyEncryptionType
)

// record reads the k-th record of the page into r.
func (d *pageDecoder) record(s *jsonscan.Scanner, r *kinesisrec.Record, k int) error {
	if err := s.ObjectStart(); err != nil {
		return err
	}
	for first := true; ; first = false {
		key, more, err := s.NextKeyOf(first, recordKeys)
		if err != nil || !more {
			return err
		}
		switch key {
		case keyData:
			err = d.recordData(s, r, k)
		case keyPartitionKey:
			// null is what an absent key is: empty (kinesisrec.FromKinesis).
			if !s.Null() {
				r.PartitionKey, err = s.String()
			}
		case keySequenceNumber:
			if !s.Null() {
				r.SequenceNumber, err = s.String()
			}
		case keyArrival:
			if !s.Null() {
				r.ApproximateArrivalTimestamp, err = arrivalTime(s)
			}
		case keyEncryptionType:
			// Records carry no encryption type; the SDK's decoder would
			// take only a string.
			if !s.Null() {
				_, _, err = s.RawString()
			}
		default:
			err = s.Skip()
		}
		if err != nil {
			return err
		}
	}
}

// recordData reads the k-th record's data: kept as its base64 text when
// the page is decoded so (fastPage.encoded), decoded otherwise. Text that
// is not plain padded base64 is left to the SDK: no such JSON string is
// both base64 and without escapes.
func (d *pageDecoder) recordData(s *jsonscan.Scanner, r *kinesisrec.Record, k int) error {
	if d.encoded {
		// One pass checks the text and finds its end.
		raw, text, n, err := s.Base64()
		if err != nil {
			return err
		}
		if r.SetEncoded(text, n) {
			return nil
		}
		return d.decodeData(r, k, raw, text, len(s.Rest()))
	}
	// Decoded anyway: the decoder checks the text, and decodeData its
	// length, so that the string's end is all there is to find first.
	raw, text, err := s.Unchecked()
	if err != nil {
		return err
	}
	return d.decodeData(r, k, raw, text, len(s.Rest()))
}

// decodeData decodes raw, the k-th record's data, into the page's data
// buffer. base64's decoder takes what a JSON string may not hold as it is,
// line breaks, which it skips: then it decodes fewer bytes than text of
// that length without them holds, so a length that differs is left to
// the SDK, with every other text the decoder refuses, and text that is
// not the data's own encoding (jsonscan.Canonical64), which the handler
// would be given as it is.
func (d *pageDecoder) decodeData(r *kinesisrec.Record, k int, raw []byte, text string, rest int) error {
	need := base64.StdEncoding.DecodedLen(len(raw))
	if cap(d.data)-len(d.data) < need {
		d.data = make([]byte, 0, dataChunk(need, d.n-k+1, rest))
	}
	at := len(d.data)
	m, err := base64.StdEncoding.Decode(d.data[at:cap(d.data)], raw)
	if err != nil || len(raw)%4 != 0 || m != need-padding(raw) || !jsonscan.Canonical64(raw) {
		return jsonscan.ErrUnhandled
	}
	d.data = d.data[:at+m]
	r.Data = d.data[at : at+m : at+m]
	r.SetWire64(text)
	return nil
}

// padding is the number of '=' that end raw, at most two.
func padding(raw []byte) int {
	n := 0
	for n < 2 && n < len(raw) && raw[len(raw)-1-n] == '=' {
		n++
	}
	return n
}

// arrivalTime reads an arrival time as the SDK's smithytime.ParseEpochSeconds
// does: milliseconds, truncated; float64 multiplication rounds exactly as its
// 53-bit big.Float does. Beyond what int64 milliseconds hold, where the two
// would part, it is left to the SDK.
func arrivalTime(s *jsonscan.Scanner) (time.Time, error) {
	f, err := s.Float()
	ms := f * 1000
	if err != nil || !(ms > -(1<<63) && ms < 1<<63) {
		return time.Time{}, jsonscan.ErrUnhandled
	}
	return time.Unix(0, int64(ms)*1e6).UTC(), nil
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
