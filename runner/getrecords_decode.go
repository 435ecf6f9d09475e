package runner

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Decoding GetRecords answers is most of a consumer's CPU: the SDK's
// schema-driven JSON decoder allocates for every field of every record and
// converts each arrival time through a big.Float. getRecordsProtocol decodes
// the answer itself, in one pass with a handful of allocations per page,
// into the SDK's own output type. Anything it does not expect (the
// ChildShards at the end of a shard, an error answer, malformed JSON) goes
// to the SDK's decoder instead, on the same bytes, so the result is the
// SDK's either way; a test compares the two on kinesis-local's answers.

// fastGetRecords is a per-call option for GetRecords.
func fastGetRecords(o *kinesis.Options) {
	if o.Protocol != nil {
		o.Protocol = getRecordsProtocol{o.Protocol}
	}
}

type getRecordsProtocol struct{ smithyhttp.ClientProtocol }

// sdkDecoded counts the answers left to the SDK's decoder, for tests.
var sdkDecoded atomic.Int64

// errNotFast sends an answer to the SDK's decoder.
var errNotFast = errors.New("not for the fast path")

func (p getRecordsProtocol) DeserializeResponse(ctx context.Context, schema *smithy.OperationSchema, reg *smithy.TypeRegistry,
	resp *smithyhttp.Response, out smithy.Deserializable) error {
	o, ok := out.(*kinesis.GetRecordsOutput)
	if !ok || resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return p.ClientProtocol.DeserializeResponse(ctx, schema, reg, resp, out)
	}
	buf := bytes.NewBuffer(make([]byte, 0, max(resp.ContentLength, 0)+bytes.MinRead))
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return &smithy.DeserializationError{Err: err}
	}
	body := buf.Bytes()
	if err := decodeGetRecords(body, o); err == nil {
		return nil
	}
	sdkDecoded.Add(1)
	*o = kinesis.GetRecordsOutput{}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return p.ClientProtocol.DeserializeResponse(ctx, schema, reg, resp, out)
}

// decodeGetRecords fills o from a GetRecords answer, or fails with
// errNotFast (or a syntax error) and leaves the rest to the SDK.
func decodeGetRecords(body []byte, o *kinesis.GetRecordsOutput) error {
	s := &scanner{b: body}
	// One string for the whole body: partition keys and sequence numbers
	// without escapes are substrings of it, no allocation each. It shares
	// body's bytes instead of copying them: body was read for this answer
	// alone and nothing writes to it afterwards (the SDK's decoder, on the
	// fallback path, only reads it).
	s.text = unsafe.String(unsafe.SliceData(body), len(body))
	if err := s.object(func(key []byte) error {
		switch string(key) {
		case "Records":
			return s.records(o)
		case "MillisBehindLatest":
			n, err := s.int()
			o.MillisBehindLatest = &n
			return err
		case "NextShardIterator":
			if s.null() {
				return nil
			}
			it, err := s.string()
			o.NextShardIterator = &it
			return err
		case "ChildShards":
			if s.null() {
				return nil
			}
			// Only at the end of a shard: rare, and the SDK knows the shape.
			return errNotFast
		}
		return s.skip()
	}); err != nil {
		return err
	}
	s.ws()
	if s.i != len(s.b) {
		return errNotFast
	}
	return nil
}

func (s *scanner) records(o *kinesis.GetRecordsOutput) error {
	if s.null() {
		return nil
	}
	// Backing arrays for the pointers the SDK's Record type holds, and one
	// buffer for all the data, sized for the whole body.
	// Every record is an object, so there are at most as many records as
	// '{' left in the body; counting one byte is many times faster than
	// counting a key.
	n := bytes.Count(s.b[s.i:], []byte{'{'})
	recs := make([]types.Record, 0, n)
	strs := make([]string, 0, 2*n)
	times := make([]time.Time, 0, n)
	data := make([]byte, 0, base64.StdEncoding.DecodedLen(len(s.b)-s.i))
	err := s.array(func() error {
		var r types.Record
		err := s.object(func(key []byte) error {
			switch string(key) {
			case "Data":
				raw, err := s.base64String()
				if err != nil {
					return errNotFast
				}
				at := len(data)
				if cap(data)-at < base64.StdEncoding.DecodedLen(len(raw)) {
					return errNotFast
				}
				m, err := base64.StdEncoding.Decode(data[at:cap(data)], raw)
				if err != nil {
					return errNotFast
				}
				data = data[:at+m]
				r.Data = data[at : at+m : at+m]
			case "PartitionKey", "SequenceNumber":
				if s.null() {
					return nil
				}
				v, err := s.string()
				if err != nil {
					return err
				}
				if len(strs) == cap(strs) {
					return errNotFast
				}
				strs = append(strs, v)
				if key[0] == 'P' {
					r.PartitionKey = &strs[len(strs)-1]
				} else {
					r.SequenceNumber = &strs[len(strs)-1]
				}
			case "ApproximateArrivalTimestamp":
				if s.null() {
					return nil
				}
				f, err := s.float()
				if err != nil || len(times) == cap(times) {
					return errNotFast
				}
				// As the SDK's smithytime.ParseEpochSeconds: milliseconds,
				// truncated; float64 multiplication rounds exactly as its
				// 53-bit big.Float does.
				times = append(times, time.Unix(0, int64(f*1000)*1e6).UTC())
				r.ApproximateArrivalTimestamp = &times[len(times)-1]
			case "EncryptionType":
				if s.null() {
					return nil
				}
				v, err := s.string()
				r.EncryptionType = types.EncryptionType(v)
				return err
			default:
				return s.skip()
			}
			return nil
		})
		recs = append(recs, r)
		return err
	})
	o.Records = recs
	return err
}

// scanner is the small part of a JSON parser the decoder needs. Every
// method skips leading white space.
type scanner struct {
	b    []byte
	text string // b as a string
	i    int
}

var errSyntax = errors.New("GetRecords answer: JSON syntax")

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) null() bool {
	if s.peek() == 'n' && bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// object calls member for each key, positioned at its value.
func (s *scanner) object(member func(key []byte) error) error {
	if s.peek() != '{' {
		return errSyntax
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		key, esc, err := s.rawString()
		if err != nil || esc {
			return errNotFast
		}
		if s.peek() != ':' {
			return errSyntax
		}
		s.i++
		if err := member(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return errSyntax
		}
	}
}

func (s *scanner) array(elem func() error) error {
	if s.peek() != '[' {
		return errSyntax
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return errSyntax
		}
	}
}

// base64String returns the bytes between the quotes of a string that may
// only hold base64: the record data, most of every answer's bytes. It stops
// at the first quote without looking at what comes before; an escape or a
// control character among the bytes is no base64, so the decoder rejects
// the value and the answer goes to the SDK.
func (s *scanner) base64String() ([]byte, error) {
	if s.peek() != '"' {
		return nil, errSyntax
	}
	start := s.i + 1
	end := bytes.IndexByte(s.b[start:], '"')
	if end < 0 {
		return nil, errSyntax
	}
	s.i = start + end + 1
	return s.b[start : start+end], nil
}

// rawString returns a string's bytes between the quotes, and whether it
// holds escapes.
func (s *scanner) rawString() (raw []byte, escaped bool, err error) {
	if s.peek() != '"' {
		return nil, false, errSyntax
	}
	start := s.i + 1
	// Most strings hold neither escapes nor control characters: find the
	// closing quote with IndexByte and check the bytes before it once.
	if end := bytes.IndexByte(s.b[start:], '"'); end >= 0 && plain(s.b[start:start+end]) {
		s.i = start + end + 1
		return s.b[start : start+end], false, nil
	}
	for j := start; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			return s.b[start:j], escaped, nil
		case c == '\\':
			escaped = true
			j++
		case c < 0x20:
			return nil, false, errSyntax
		}
	}
	return nil, false, errSyntax
}

// plain reports whether b holds neither a backslash nor a control
// character, so that it is a JSON string's content as it is.
func plain(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '\\' {
			return false
		}
	}
	return true
}

// string returns a string value: a substring of the body, or decoded by
// encoding/json when it holds escapes.
func (s *scanner) string() (string, error) {
	raw, esc, err := s.rawString()
	if err != nil {
		return "", err
	}
	from := s.i - 1 - len(raw)
	if !esc {
		return s.text[from : s.i-1], nil
	}
	var v string
	if err := json.Unmarshal(s.b[from-1:s.i], &v); err != nil {
		return "", errSyntax
	}
	return v, nil
}

func (s *scanner) number() []byte {
	s.ws()
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			s.i++
			continue
		}
		break
	}
	return s.b[start:s.i]
}

func (s *scanner) int() (int64, error) {
	n, err := strconv.ParseInt(string(s.number()), 10, 64)
	if err != nil {
		return 0, errNotFast
	}
	return n, nil
}

func (s *scanner) float() (float64, error) {
	f, err := strconv.ParseFloat(string(s.number()), 64)
	if err != nil {
		return 0, errNotFast
	}
	return f, nil
}

// skip passes over any value.
func (s *scanner) skip() error {
	switch s.peek() {
	case '{':
		return s.object(func([]byte) error { return s.skip() })
	case '[':
		return s.array(s.skip)
	case '"':
		_, _, err := s.rawString()
		return err
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	}
	if len(s.number()) == 0 {
		return errSyntax
	}
	return nil
}

func (s *scanner) literal(word string) error {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return errSyntax
	}
	s.i += len(word)
	return nil
}
