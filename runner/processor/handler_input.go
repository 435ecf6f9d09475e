package processor

import (
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/kcltool/kcltool/internal/jsonscan"
	"github.com/kcltool/kcltool/kinesisrec"
)

// Format is how a batch is written to the handler's stdin.
type Format int

const (
	// FormatJSON writes JSON Lines, one object per record (the default).
	FormatJSON Format = iota
	// FormatRaw writes each record's bare data followed by a newline, for
	// text payloads; data that holds newlines cannot be told apart.
	FormatRaw
)

// ParseFormat reads the --format flag: "json" or "raw".
func ParseFormat(s string) (Format, error) {
	switch s {
	case "json", "jsonl", "":
		return FormatJSON, nil
	case "raw":
		return FormatRaw, nil
	}
	return 0, fmt.Errorf("format %q: want json or raw", s)
}

func (f Format) String() string {
	if f == FormatRaw {
		return "raw"
	}
	return "json"
}

// arrivalLayout is RFC 3339 in UTC with fixed milliseconds, the precision
// Kinesis gives, so that the field has one width and sorts as text.
const arrivalLayout = "2006-01-02T15:04:05.000Z07:00"

// WriteBatch writes records to w in format f. The encoder is hand-written
// because it runs for every record the consumer sees: reflection-based
// encoding/json would cost more CPU than the rest of the pipeline.
// recordJSON (failure_file.go) is the same shape through encoding/json, and
// a test checks that both agree.
func WriteBatch(w io.Writer, f Format, records []kinesisrec.Record) error {
	bp := writeBufs.Get().(*[]byte)
	buf := (*bp)[:0]
	defer func() {
		// A batch of megabyte records grows the buffer to a record's size;
		// such a buffer is not kept for the next batch.
		if cap(buf) <= 2*writeChunk {
			*bp = buf[:0]
			writeBufs.Put(bp)
		}
	}()
	var enc recordEncoder
	for i := range records {
		if f == FormatRaw {
			buf = append(buf, records[i].Payload()...)
			buf = append(buf, '\n')
		} else {
			buf = enc.appendRecordJSON(buf, &records[i])
		}
		if len(buf) >= writeChunk || i == len(records)-1 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	return nil
}

// writeChunk is how much of a batch goes to the pipe in one write, and
// pipeBuffer the size asked for the pipe (growPipe): a chunk fits whole,
// so each write wakes the handler once.
const (
	writeChunk = 256 << 10
	pipeBuffer = 1 << 20
)

// writeBufs holds the batch encoding buffers between batches: one batch
// after another would otherwise leave a garbage buffer each.
var writeBufs = sync.Pool{New: func() any { b := make([]byte, 0, writeChunk+4<<10); return &b }}

// arrivalCache remembers the formatted second of the last arrival time:
// the records of a batch mostly arrived within the same few seconds.
type arrivalCache struct {
	sec    int64
	prefix []byte // "2006-01-02T15:04:05." of sec
}

func (c *arrivalCache) append(b []byte, t time.Time) []byte {
	sec := t.Unix()
	if c.prefix == nil || sec != c.sec {
		c.sec = sec
		c.prefix = appendArrival(c.prefix[:0], t.Truncate(time.Second))
		c.prefix = c.prefix[:len(c.prefix)-len("000Z")]
	}
	b = append(b, c.prefix...)
	ms := t.Nanosecond() / int(time.Millisecond)
	return append(b, byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

// recordEncoder keeps what the records of one batch share, encoded once:
// the shard id and the second of the arrival time.
type recordEncoder struct {
	arrival arrivalCache
	shardID string
	shard   []byte // shardID as a JSON string
}

// appendRecordJSON appends one JSON Lines object for r.
func appendRecordJSON(b []byte, r *kinesisrec.Record) []byte {
	var enc recordEncoder
	return enc.appendRecordJSON(b, r)
}

// appendRecordHead opens a record's JSON object with the keys both handler
// contracts share, in this order: data (base64), partitionKey and
// sequenceNumber.
func appendRecordHead(b []byte, r *kinesisrec.Record) []byte {
	b = append(b, `{"data":"`...)
	if w := r.Wire64(); w != "" {
		b = append(b, w...) // base64 already, and checked by decoding it
	} else {
		b = base64.StdEncoding.AppendEncode(b, r.Payload())
	}
	b = append(b, `","partitionKey":`...)
	b = appendJSONString(b, r.PartitionKey)
	b = append(b, `,"sequenceNumber":`...)
	return appendJSONString(b, r.SequenceNumber)
}

// appendRecordJSON appends one JSON Lines object for r.
func (enc *recordEncoder) appendRecordJSON(b []byte, r *kinesisrec.Record) []byte {
	b = appendRecordHead(b, r)
	b = append(b, `,"subSequenceNumber":`...)
	b = strconv.AppendInt(b, r.SubSequenceNumber, 10)
	if !r.ApproximateArrivalTimestamp.IsZero() {
		b = append(b, `,"approximateArrivalTimestamp":"`...)
		b = enc.arrival.append(b, r.ApproximateArrivalTimestamp)
		b = append(b, '"')
	}
	b = append(b, `,"shardId":`...)
	if enc.shard == nil || r.ShardID != enc.shardID {
		enc.shardID, enc.shard = r.ShardID, appendJSONString(enc.shard[:0], r.ShardID)
	}
	b = append(b, enc.shard...)
	if r.ExplicitHashKey != "" {
		b = append(b, `,"explicitHashKey":`...)
		b = appendJSONString(b, r.ExplicitHashKey)
	}
	return append(b, "}\n"...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD,
// as encoding/json does, so the output is always valid JSON.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	// Sequence numbers, shard ids and most partition keys are plain: one
	// check eight bytes a step, then one copy.
	if jsonscan.Plain(s) {
		b = append(b, s...)
		return append(b, '"')
	}
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// batchEnv is the environment a handler gets on top of the parent's.
func batchEnv(b Batch) []string {
	first, last := "", ""
	if n := len(b.Records); n > 0 {
		first, last = b.Records[0].SequenceNumber, b.Records[n-1].SequenceNumber
	}
	return []string{
		"KCLTOOL_APP=" + b.App,
		"KCLTOOL_STREAM=" + b.Stream,
		"KCLTOOL_SHARD_ID=" + b.ShardID,
		"KCLTOOL_WORKER_ID=" + b.WorkerID,
		"KCLTOOL_BATCH_SIZE=" + strconv.Itoa(len(b.Records)),
		"KCLTOOL_FIRST_SEQUENCE=" + first,
		"KCLTOOL_LAST_SEQUENCE=" + last,
		"KCLTOOL_MILLIS_BEHIND_LATEST=" + strconv.FormatInt(b.MillisBehindLatest, 10),
		"KCLTOOL_ATTEMPT=" + strconv.Itoa(max(b.Attempt, 1)),
	}
}

// appendArrival appends t as arrivalLayout does, without AppendFormat's
// layout interpretation: it runs for every record handed to a handler.
// Years outside 0-9999 take the general path.
func appendArrival(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, arrivalLayout)
	}
	hour, minute, sec := t.Clock()
	ms := t.Nanosecond() / int(time.Millisecond)
	d := func(b []byte, v, width int) []byte {
		for w := width - 1; w >= 0; w-- {
			div := 1
			for range w {
				div *= 10
			}
			b = append(b, byte('0'+v/div%10))
		}
		return b
	}
	b = d(b, year, 4)
	b = append(b, '-')
	b = d(b, int(month), 2)
	b = append(b, '-')
	b = d(b, day, 2)
	b = append(b, 'T')
	b = d(b, hour, 2)
	b = append(b, ':')
	b = d(b, minute, 2)
	b = append(b, ':')
	b = d(b, sec, 2)
	b = append(b, '.')
	b = d(b, ms, 3)
	return append(b, 'Z')
}

// formatArrival formats an arrival time for the failure file, as on stdin.
func formatArrival(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(arrivalLayout)
}
