package processor

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/kcltool/kcltool/internal/jsonscan"
	"github.com/kcltool/kcltool/kinesisrec"
	"github.com/kcltool/kcltool/leasecore"
)

// The MultiLang protocol's messages, as the KCL's MultiLangDaemon writes
// and reads them (amazon-kinesis-client-multilang, package messages): one
// JSON object per line, typed by "action". The structs keep the KCL's field
// order and, like its Jackson ObjectMapper, write nulls rather than leave a
// key out: clients such as kclpy read every key unconditionally.

// MultiLang actions.
const (
	mlInitialize        = "initialize"
	mlProcessRecords    = "processRecords"
	mlLeaseLost         = "leaseLost"
	mlShardEnded        = "shardEnded"
	mlShutdownRequested = "shutdownRequested"
	mlCheckpoint        = "checkpoint"
	mlStatus            = "status"
	mlRecord            = "record"
)

type mlInitializeMsg struct {
	Action            string  `json:"action"`
	ShardID           string  `json:"shardId"`
	SequenceNumber    *string `json:"sequenceNumber"`
	SubSequenceNumber *int64  `json:"subSequenceNumber"`
}

// mlProcessRecordsMsg is processRecords, written by appendTo rather than
// encoding/json: it is one line of every record of a page, and the data
// goes out as the base64 text it arrived in. Its record objects are
// JsonFriendlyRecord: not a Message, so their action comes last (a getter
// after the fields, in Jackson's order).
type mlProcessRecordsMsg struct {
	Records            []kinesisrec.Record
	MillisBehindLatest int64
}

// mlBareMsg is leaseLost, shardEnded and shutdownRequested: no fields.
type mlBareMsg struct {
	Action string `json:"action"`
}

// mlCheckpointMsg is both the child's request and the reply to it; the
// reply echoes the request's numbers and names the KCL exception's simple
// class name in Error, or null.
type mlCheckpointMsg struct {
	Action            string  `json:"action"`
	SequenceNumber    *string `json:"sequenceNumber"`
	SubSequenceNumber *int64  `json:"subSequenceNumber"`
	Error             *string `json:"error"`
}

// mlInMsg is any message a child writes: status or checkpoint.
type mlInMsg struct {
	Action            string          `json:"action"`
	ResponseFor       string          `json:"responseFor"`
	SequenceNumber    json.RawMessage `json:"sequenceNumber"`
	SubSequenceNumber json.RawMessage `json:"subSequenceNumber"`
}

func newMLInitialize(shardID string, cp leasecore.SequenceNumber) mlInitializeMsg {
	m := mlInitializeMsg{Action: mlInitialize, ShardID: shardID}
	if cp.SequenceNumber != "" {
		seq, sub := cp.SequenceNumber, cp.SubSequenceNumber
		m.SequenceNumber, m.SubSequenceNumber = &seq, &sub
	}
	return m
}

func newMLProcessRecords(records []kinesisrec.Record, millisBehind int64) mlProcessRecordsMsg {
	return mlProcessRecordsMsg{Records: records, MillisBehindLatest: millisBehind}
}

// appendTo appends the message as its line, without the newline: what
// encoding/json writes for the same fields, except that <, > and & stay as
// they are (as Jackson writes them). It is most of kcltool's own work per
// record in this mode (BenchmarkMultiLangLine), so what the records of a
// page share is written once: the arrival time's seconds, and the keys
// between the fields as one constant each.
func (m mlProcessRecordsMsg) appendTo(b []byte) []byte {
	b = append(b, `{"action":"processRecords","records":[`...)
	var arrival mlArrival
	for i := range m.Records {
		r := &m.Records[i]
		if i == 0 {
			b = append(b, `{"data":"`...)
		} // else the last record's end wrote it
		if w := r.Wire64(); w != "" {
			b = append(b, w...) // base64 already, and checked by decoding it
		} else {
			b = base64.StdEncoding.AppendEncode(b, r.Payload())
		}
		if jsonscan.Plain(r.PartitionKey) {
			b = append(b, `","partitionKey":"`...)
			b = append(b, r.PartitionKey...)
		} else {
			b = append(b, `","partitionKey":`...)
			b = appendJSONString(b, r.PartitionKey)
			b = b[:len(b)-1] // its closing quote; the next key writes one
		}
		if jsonscan.Plain(r.SequenceNumber) {
			b = append(b, `","sequenceNumber":"`...)
			b = append(b, r.SequenceNumber...)
			b = append(b, `","approximateArrivalTimestamp":`...)
		} else {
			b = append(b, `","sequenceNumber":`...)
			b = appendJSONString(b, r.SequenceNumber)
			b = append(b, `,"approximateArrivalTimestamp":`...)
		}
		b = arrival.append(b, r.ApproximateArrivalTimestamp)
		// The record's end and the next one's start, one constant: the
		// sub-sequence number of all but a KPL aggregate's tenth and
		// later sub-records is its one digit, written into it.
		const end, next = `,"subSequenceNumber":0,"action":"record"}`, `,{"data":"`
		digit := len(b) + len(`,"subSequenceNumber":`)
		if sub := r.SubSequenceNumber; uint64(sub) < 10 {
			if i < len(m.Records)-1 {
				b = append(b, end+next...)
			} else {
				b = append(b, end...)
			}
			b[digit] = byte('0' + sub)
		} else {
			b = append(b, `,"subSequenceNumber":`...)
			b = strconv.AppendInt(b, sub, 10)
			b = append(b, `,"action":"record"}`...)
			if i < len(m.Records)-1 {
				b = append(b, next...)
			}
		}
	}
	b = append(b, `],"millisBehindLatest":`...)
	b = strconv.AppendInt(b, m.MillisBehindLatest, 10)
	return append(b, '}')
}

// size is about how long appendTo's line is, to allocate it once.
func (m mlProcessRecordsMsg) size() int {
	n := 64
	for i := range m.Records {
		r := &m.Records[i]
		n += 160 + len(r.PartitionKey) + len(r.SequenceNumber) + base64.StdEncoding.EncodedLen(r.DataLen())
	}
	return n
}

// mlArrival writes arrival times as epoch milliseconds (null for none, as
// the KCL's JsonFriendlyRecord writes its null Long), keeping the digits of
// the last second written: a page's records mostly arrived within a few
// seconds, and formatting 13 digits per record was a fifth of the line's
// cost.
type mlArrival struct {
	sec    int64 // the second digits holds, or 0 for none yet
	digits [20]byte
	n      int
}

func (a *mlArrival) append(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	ms := t.UnixMilli()
	if ms < 1000 {
		// Before 1970 or in its first second: no seconds to share.
		return strconv.AppendInt(b, ms, 10)
	}
	sec, frac := ms/1000, ms%1000
	if sec != a.sec {
		a.sec, a.n = sec, len(strconv.AppendInt(a.digits[:0], sec, 10))
	}
	b = append(b, a.digits[:a.n]...)
	return append(b, byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
}

// mlCheckpointReply answers a checkpoint request; errClass "" is success.
func mlCheckpointReply(req mlCheckpointReq, errClass string) mlCheckpointMsg {
	m := mlCheckpointMsg{Action: mlCheckpoint, SequenceNumber: req.seq, SubSequenceNumber: req.sub}
	if errClass != "" {
		m.Error = &errClass
	}
	return m
}

// AppendProcessRecordsLine appends the processRecords line a MultiLang
// child reads for these records, newline included, to buf (reusing its
// room): the encoder the runner's fetcher's kept base64 text is meant for.
func AppendProcessRecordsLine(buf []byte, records []kinesisrec.Record, millisBehind int64) []byte {
	return newMLProcessRecords(records, millisBehind).appendLine(buf)
}

// appendLine is appendTo with the newline, into buf when it has room.
func (m mlProcessRecordsMsg) appendLine(buf []byte) []byte {
	if n := m.size(); cap(buf) < n {
		buf = make([]byte, 0, n)
	}
	return append(m.appendTo(buf[:0]), '\n')
}

// encodeML is one message as the line the child reads.
func encodeML(m any) ([]byte, error) {
	if pr, ok := m.(mlProcessRecordsMsg); ok {
		return pr.appendLine(nil), nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// mlCheckpointReq is a child's checkpoint request: nil numbers are absent
// (JSON null or missing).
type mlCheckpointReq struct {
	seq *string
	sub *int64
}

// errNotJSON marks a stdout line that is not a message (not JSON, or no
// action); the MLD logs and skips those (a processor's print statements).
var errNotJSON = errors.New("not a JSON message")

// decodeML reads one line of the child's stdout. A blank line decodes to
// action "".
func decodeML(line []byte) (mlInMsg, mlCheckpointReq, error) {
	var m mlInMsg
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return m, mlCheckpointReq{}, nil
	}
	if line[0] != '{' || json.Unmarshal(line, &m) != nil || m.Action == "" {
		// The MLD's reader skips what it cannot read as a message.
		return mlInMsg{}, mlCheckpointReq{}, errNotJSON
	}
	if m.Action != mlCheckpoint {
		return m, mlCheckpointReq{}, nil
	}
	var req mlCheckpointReq
	if s, err := mlNumberish(m.SequenceNumber); err != nil {
		return m, req, fmt.Errorf("checkpoint sequenceNumber: %w", err)
	} else if s != nil {
		req.seq = s
	}
	if s, err := mlNumberish(m.SubSequenceNumber); err != nil {
		return m, req, fmt.Errorf("checkpoint subSequenceNumber: %w", err)
	} else if s != nil {
		n, err := strconv.ParseInt(*s, 10, 64)
		if err != nil {
			return m, req, fmt.Errorf("checkpoint subSequenceNumber %q: not a number", *s)
		}
		req.sub = &n
	}
	return m, req, nil
}

// mlNumberish reads a JSON string or number (Jackson accepts both for a
// String or Long field); null or absent is nil.
func mlNumberish(raw json.RawMessage) (*string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return &s, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("%s is neither a string nor a number", raw)
	}
	s = n.String()
	return &s, nil
}
