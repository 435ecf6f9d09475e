package runner

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

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

// mlRecordMsg is JsonFriendlyRecord: not a Message, so its action comes
// last (a getter after the fields, in Jackson's order).
type mlRecordMsg struct {
	Data                        string `json:"data"`
	PartitionKey                string `json:"partitionKey"`
	SequenceNumber              string `json:"sequenceNumber"`
	ApproximateArrivalTimestamp int64  `json:"approximateArrivalTimestamp"`
	SubSequenceNumber           int64  `json:"subSequenceNumber"`
	Action                      string `json:"action"`
}

type mlProcessRecordsMsg struct {
	Action             string        `json:"action"`
	Records            []mlRecordMsg `json:"records"`
	MillisBehindLatest int64         `json:"millisBehindLatest"`
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
	out := make([]mlRecordMsg, len(records))
	for i, r := range records {
		data := r.Wire64()
		if data == "" {
			data = base64.StdEncoding.EncodeToString(r.Data)
		}
		var at int64
		if !r.ApproximateArrivalTimestamp.IsZero() {
			at = r.ApproximateArrivalTimestamp.UnixMilli()
		}
		out[i] = mlRecordMsg{
			Action: mlRecord, Data: data, PartitionKey: r.PartitionKey, SequenceNumber: r.SequenceNumber,
			ApproximateArrivalTimestamp: at, SubSequenceNumber: r.SubSequenceNumber,
		}
	}
	return mlProcessRecordsMsg{Action: mlProcessRecords, Records: out, MillisBehindLatest: millisBehind}
}

// mlCheckpointReply answers a checkpoint request; errClass "" is success.
func mlCheckpointReply(req mlCheckpointReq, errClass string) mlCheckpointMsg {
	m := mlCheckpointMsg{Action: mlCheckpoint, SequenceNumber: req.seq, SubSequenceNumber: req.sub}
	if errClass != "" {
		m.Error = &errClass
	}
	return m
}

// encodeML is one message as the line the child reads.
func encodeML(m any) ([]byte, error) {
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
