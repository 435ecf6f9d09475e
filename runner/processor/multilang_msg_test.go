package processor

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/jsonscan"
	"github.com/kcltool/kcltool/kinesisrec"
	"github.com/kcltool/kcltool/leasecore"
)

// The messages to the child, byte for byte as the KCL's MultiLangDaemon
// writes them (Jackson over the classes of its messages package: the
// "action" type property first, fields in declaration order, nulls
// written, byte[] as padded base64; a record's action last).
func TestMultiLangMessagesGolden(t *testing.T) {
	at := time.UnixMilli(1700000000123)
	sub := func(n int64) *int64 { return &n }
	str := func(s string) *string { return &s }
	cases := []struct {
		name string
		msg  any
		want string
	}{
		{"initialize at a sequence number", newMLInitialize("shardId-000000000001", leasecore.SequenceNumber{SequenceNumber: "49590338271490256608559692538361571095921575989136588898", SubSequenceNumber: 3}),
			`{"action":"initialize","shardId":"shardId-000000000001","sequenceNumber":"49590338271490256608559692538361571095921575989136588898","subSequenceNumber":3}`},
		{"initialize at a sentinel", newMLInitialize("shardId-000000000000", leasecore.SequenceNumber{SequenceNumber: leasecore.TRIM_HORIZON}),
			`{"action":"initialize","shardId":"shardId-000000000000","sequenceNumber":"TRIM_HORIZON","subSequenceNumber":0}`},
		{"initialize without a checkpoint", newMLInitialize("shardId-000000000000", leasecore.SequenceNumber{}),
			`{"action":"initialize","shardId":"shardId-000000000000","sequenceNumber":null,"subSequenceNumber":null}`},
		{"processRecords", newMLProcessRecords([]kinesisrec.Record{
			{Data: []byte("hello"), PartitionKey: "k1", SequenceNumber: "4959", ApproximateArrivalTimestamp: at},
			{Data: []byte{0xff, 0xfe}, PartitionKey: "k2", SequenceNumber: "4960", SubSequenceNumber: 2, ApproximateArrivalTimestamp: at},
		}, 1500),
			`{"action":"processRecords","records":[` +
				`{"data":"aGVsbG8=","partitionKey":"k1","sequenceNumber":"4959","approximateArrivalTimestamp":1700000000123,"subSequenceNumber":0,"action":"record"},` +
				`{"data":"//4=","partitionKey":"k2","sequenceNumber":"4960","approximateArrivalTimestamp":1700000000123,"subSequenceNumber":2,"action":"record"}` +
				`],"millisBehindLatest":1500}`},
		{"processRecords, a record without an arrival time", newMLProcessRecords([]kinesisrec.Record{
			{Data: []byte("hi"), PartitionKey: "k1", SequenceNumber: "4961"},
		}, 0),
			`{"action":"processRecords","records":[` +
				`{"data":"aGk=","partitionKey":"k1","sequenceNumber":"4961","approximateArrivalTimestamp":null,"subSequenceNumber":0,"action":"record"}` +
				`],"millisBehindLatest":0}`},
		{"processRecords, empty", newMLProcessRecords(nil, 0), `{"action":"processRecords","records":[],"millisBehindLatest":0}`},
		{"leaseLost", mlBareMsg{Action: mlLeaseLost}, `{"action":"leaseLost"}`},
		{"shardEnded", mlBareMsg{Action: mlShardEnded}, `{"action":"shardEnded"}`},
		{"shutdownRequested", mlBareMsg{Action: mlShutdownRequested}, `{"action":"shutdownRequested"}`},
		{"checkpoint reply, success", mlCheckpointReply(mlCheckpointReq{seq: str("4959")}, ""),
			`{"action":"checkpoint","sequenceNumber":"4959","subSequenceNumber":null,"error":null}`},
		{"checkpoint reply, error", mlCheckpointReply(mlCheckpointReq{seq: str("4959"), sub: sub(1)}, "IllegalArgumentException"),
			`{"action":"checkpoint","sequenceNumber":"4959","subSequenceNumber":1,"error":"IllegalArgumentException"}`},
		{"checkpoint reply, no sequence number", mlCheckpointReply(mlCheckpointReq{}, "ShutdownException"),
			`{"action":"checkpoint","sequenceNumber":null,"subSequenceNumber":null,"error":"ShutdownException"}`},
	}
	for _, c := range cases {
		got, err := encodeML(c.msg)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want+"\n" {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

// The child's lines as the client libraries write them (aws-kcl for
// Node.js, kclpy), and what is skipped or refused.
func TestMultiLangDecode(t *testing.T) {
	cases := []struct {
		line         string
		action, for_ string
		seq          string // "-" for none
		sub          int64  // -1 for none
		err          error  // errNotJSON, or any for another error
	}{
		{line: `{"action":"status","responseFor":"processRecords"}`, action: "status", for_: "processRecords", seq: "-", sub: -1},
		{line: "\n" + `{"action":"status","responseFor":"initialize"}` + "\n", action: "status", for_: "initialize", seq: "-", sub: -1},
		{line: `{"action":"checkpoint","sequenceNumber":null}`, action: "checkpoint", seq: "-", sub: -1},
		{line: `{"action":"checkpoint"}`, action: "checkpoint", seq: "-", sub: -1},
		{line: `{"action":"checkpoint","sequenceNumber":"4959"}`, action: "checkpoint", seq: "4959", sub: -1},
		{line: `{"action":"checkpoint","sequenceNumber":"4959","subSequenceNumber":2}`, action: "checkpoint", seq: "4959", sub: 2},
		{line: `{"action":"checkpoint","sequenceNumber":4959,"subSequenceNumber":"2"}`, action: "checkpoint", seq: "4959", sub: 2},
		{line: `{"action":"dance"}`, action: "dance", seq: "-", sub: -1},
		{line: `   `, action: "", seq: "-", sub: -1},
		{line: `hello from print()`, err: errNotJSON},
		{line: `{"action": broken`, err: errNotJSON},
		{line: `{"responseFor":"initialize"}`, err: errNotJSON},
		{line: `{"action":"checkpoint","sequenceNumber":["x"]}`, err: errors.New("any")},
		{line: `{"action":"checkpoint","sequenceNumber":"1","subSequenceNumber":"x"}`, err: errors.New("any")},
	}
	for _, c := range cases {
		m, req, err := decodeML([]byte(c.line))
		switch {
		case c.err == errNotJSON:
			if !errors.Is(err, errNotJSON) {
				t.Errorf("%q: err %v, want skipped as not a message", c.line, err)
			}
			continue
		case c.err != nil:
			if err == nil || errors.Is(err, errNotJSON) {
				t.Errorf("%q: err %v, want a protocol error", c.line, err)
			}
			continue
		case err != nil:
			t.Errorf("%q: %v", c.line, err)
			continue
		}
		seq, sub := "-", int64(-1)
		if req.seq != nil {
			seq = *req.seq
		}
		if req.sub != nil {
			sub = *req.sub
		}
		if m.Action != c.action || m.ResponseFor != c.for_ || seq != c.seq || sub != c.sub {
			t.Errorf("%q: got action %q responseFor %q seq %s sub %d", c.line, m.Action, m.ResponseFor, seq, sub)
		}
	}
}

// The child's checkpoint requests are validated as the KCL's checkpointer
// does, and only valid ones are written.
func TestMultiLangCheckpointValidation(t *testing.T) {
	pos := func(seq string, sub int64) leasecore.SequenceNumber {
		return leasecore.SequenceNumber{SequenceNumber: seq, SubSequenceNumber: sub}
	}
	str := func(s string) *string { return &s }
	n := func(v int64) *int64 { return &v }
	cases := []struct {
		name       string
		req        mlCheckpointReq
		shardEnd   bool
		lost       bool
		want       string
		written    *leasecore.SequenceNumber
		writeFails error
		// noCheckpointer: the exchange gives none (the MLD's null).
		noCheckpointer bool
		// cur replaces the lease's checkpoint 100; none: no record was
		// delivered yet.
		cur  *leasecore.SequenceNumber
		none bool
	}{
		{name: "null: the last record delivered", req: mlCheckpointReq{}, written: &leasecore.SequenceNumber{SequenceNumber: "300", SubSequenceNumber: 1}},
		{name: "null at the shard end: SHARD_END", req: mlCheckpointReq{}, shardEnd: true, written: &leasecore.SequenceNumber{SequenceNumber: leasecore.SHARD_END}},
		{name: "sequence only: sub-sequence 0", req: mlCheckpointReq{seq: str("200")}, written: &leasecore.SequenceNumber{SequenceNumber: "200"}},
		{name: "sequence and sub-sequence", req: mlCheckpointReq{seq: str("300"), sub: n(1)}, written: &leasecore.SequenceNumber{SequenceNumber: "300", SubSequenceNumber: 1}},
		{name: "the current checkpoint again: nothing written", req: mlCheckpointReq{seq: str("100")}},
		// The KCL accepts any position from the checkpoint to the newest
		// delivered, whether a record has it or not.
		{name: "between two records delivered", req: mlCheckpointReq{seq: str("250")}, written: &leasecore.SequenceNumber{SequenceNumber: "250"}},
		{name: "between the checkpoint and the first record", req: mlCheckpointReq{seq: str("100"), sub: n(4)}, written: &leasecore.SequenceNumber{SequenceNumber: "100", SubSequenceNumber: 4}},
		{name: "after the last delivered", req: mlCheckpointReq{seq: str("400")}, want: "IllegalArgumentException"},
		{name: "sub-sequence past the last delivered", req: mlCheckpointReq{seq: str("300"), sub: n(7)}, want: "IllegalArgumentException"},
		{name: "negative sub-sequence", req: mlCheckpointReq{seq: str("250"), sub: n(-1)}, want: "IllegalArgumentException"},
		{name: "before the checkpoint", req: mlCheckpointReq{seq: str("50")}, want: "IllegalArgumentException"},
		{name: "before the checkpoint by its sub-sequence", req: mlCheckpointReq{seq: str("100"), sub: n(0)}, cur: &leasecore.SequenceNumber{SequenceNumber: "100", SubSequenceNumber: 2}, want: "IllegalArgumentException"},
		// At the shard end the last position delivered, named, is
		// SHARD_END (the KCL checkpointer's sequenceNumberAtShardEnd);
		// any other is the sequence number it names.
		{name: "the last record named at the shard end: SHARD_END", req: mlCheckpointReq{seq: str("300"), sub: n(1)}, shardEnd: true, written: &leasecore.SequenceNumber{SequenceNumber: leasecore.SHARD_END}},
		{name: "an earlier record named at the shard end", req: mlCheckpointReq{seq: str("300")}, shardEnd: true, written: &leasecore.SequenceNumber{SequenceNumber: "300"}},
		{name: "past the last record at the shard end", req: mlCheckpointReq{seq: str("400")}, shardEnd: true, want: "IllegalArgumentException"},
		{name: "SHARD_END at the shard end", req: mlCheckpointReq{seq: str("SHARD_END")}, shardEnd: true, written: &leasecore.SequenceNumber{SequenceNumber: leasecore.SHARD_END}},
		{name: "nothing delivered, the checkpoint named at the shard end: SHARD_END", req: mlCheckpointReq{seq: str("100")}, shardEnd: true, none: true, written: &leasecore.SequenceNumber{SequenceNumber: leasecore.SHARD_END}},
		{name: "nothing delivered: nothing past the checkpoint", req: mlCheckpointReq{seq: str("150")}, none: true, want: "IllegalArgumentException"},
		{name: "nothing delivered, null: nothing written", req: mlCheckpointReq{}, none: true},
		{name: "not a number", req: mlCheckpointReq{seq: str("abc")}, want: "IllegalArgumentException"},
		{name: "a sentinel", req: mlCheckpointReq{seq: str("TRIM_HORIZON")}, want: "IllegalArgumentException"},
		{name: "SHARD_END before the shard end", req: mlCheckpointReq{seq: str("SHARD_END")}, want: "IllegalArgumentException"},
		{name: "no checkpointer (initialize, leaseLost)", req: mlCheckpointReq{}, noCheckpointer: true, want: "InvalidStateException"},
		{name: "after leaseLost", req: mlCheckpointReq{}, lost: true, want: "ShutdownException"},
		{name: "lease lost while writing", req: mlCheckpointReq{}, want: "ShutdownException", writeFails: leasecore.ErrLeaseLost},
		{name: "lease table failing", req: mlCheckpointReq{}, want: "KinesisClientLibDependencyException", writeFails: errors.New("throttled")},
	}
	for _, c := range cases {
		// The records 200, 300 and 300/1 were delivered after the
		// checkpoint 100.
		p := &mlProcessor{r: MultiLang{Log: slog.New(slog.DiscardHandler)}, cur: pos("100", 0), lost: c.lost}
		if c.cur != nil {
			p.cur = *c.cur
		}
		if !c.none {
			last := pos("300", 1)
			p.last = &last
		}
		var wrote *leasecore.SequenceNumber
		cp := CheckpointFunc(func(_ context.Context, at leasecore.SequenceNumber) error {
			if c.writeFails != nil {
				return c.writeFails
			}
			wrote = &at
			return nil
		})
		var given Checkpointer = cp
		if c.noCheckpointer {
			given = nil
		}
		class, ok := p.checkpoint(context.Background(), c.req, given, c.shardEnd)
		if class != c.want || ok != (c.written != nil) {
			t.Errorf("%s: reply error %q written %v, want %q %v", c.name, class, ok, c.want, c.written != nil)
		}
		if fmt.Sprint(wrote) != fmt.Sprint(c.written) {
			t.Errorf("%s: wrote %v, want %v", c.name, wrote, c.written)
		}
	}
}

// processRecords is written by hand (appendTo): it must read back as what
// encoding/json writes for the KCL's fields, whatever the partition keys
// hold, with the data from its base64 wire text or encoded here.
func TestMultiLangProcessRecordsEncoder(t *testing.T) {
	type record struct { // JsonFriendlyRecord's fields, in Jackson's order
		Data                        string `json:"data"`
		PartitionKey                string `json:"partitionKey"`
		SequenceNumber              string `json:"sequenceNumber"`
		ApproximateArrivalTimestamp *int64 `json:"approximateArrivalTimestamp"`
		SubSequenceNumber           int64  `json:"subSequenceNumber"`
		Action                      string `json:"action"`
	}
	type message struct {
		Action             string   `json:"action"`
		Records            []record `json:"records"`
		MillisBehindLatest int64    `json:"millisBehindLatest"`
	}
	at := time.UnixMilli(1700000000123)
	keys := []string{"plain", `q"uote`, `back\slash`, "tab\tnl\ncr\r", "\x00\x1f", "<html>&", "żółw 🐢", "bad\xffutf8", "\u2028", ""}
	var recs []kinesisrec.Record
	for i, k := range keys {
		r := kinesisrec.Record{Data: []byte(k + "data"), PartitionKey: k, SequenceNumber: fmt.Sprint(4959000 + i), SubSequenceNumber: int64(i % 3)}
		if i%2 == 0 {
			r.ApproximateArrivalTimestamp = at
			r.SetWire64(base64.StdEncoding.EncodeToString(r.Data))
		}
		recs = append(recs, r)
	}
	for _, rs := range [][]kinesisrec.Record{recs, nil} {
		want := message{Action: "processRecords", Records: []record{}, MillisBehindLatest: 42}
		for _, r := range rs {
			var ms *int64 // null for none
			if !r.ApproximateArrivalTimestamp.IsZero() {
				v := r.ApproximateArrivalTimestamp.UnixMilli()
				ms = &v
			}
			want.Records = append(want.Records, record{base64.StdEncoding.EncodeToString(r.Data), strings.ToValidUTF8(r.PartitionKey, "\ufffd"), r.SequenceNumber, ms, r.SubSequenceNumber, "record"})
		}
		line, err := encodeML(newMLProcessRecords(rs, 42))
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(line) || line[len(line)-1] != '\n' || bytes.Count(line, []byte("\n")) != 1 {
			t.Fatalf("not one JSON line: %q", line)
		}
		var got message
		if err := json.Unmarshal(line, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got  %+v\nwant %+v", got, want)
		}
		// The keys in Jackson's order: encoding/json's bytes once the
		// escapes that differ (<, >, &, U+2028; U+FFFD for invalid UTF-8)
		// are undone.
		ref, _ := json.Marshal(want)
		unescape := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&", `\u2028`, "\u2028")
		if unescape.Replace(string(ref))+"\n" != strings.ReplaceAll(string(line), `\ufffd`, "\ufffd") {
			t.Errorf("bytes differ from encoding/json's:\n got %s\nwant %s", line, ref)
		}
	}
}

// A processRecords line written into the previous, longer line's buffer
// (as a child's processor reuses it) is exactly the line written afresh.
func TestMultiLangProcessRecordsLineReusesBuffer(t *testing.T) {
	page := func(n int, data string) []kinesisrec.Record {
		var rs []kinesisrec.Record
		for i := range n {
			rs = append(rs, kinesisrec.Record{Data: []byte(data), PartitionKey: fmt.Sprint("k", i), SequenceNumber: fmt.Sprint(4959000 + i)})
		}
		return rs
	}
	long := newMLProcessRecords(page(50, strings.Repeat("x", 300)), 7)
	short := newMLProcessRecords(page(3, "y"), 0)
	buf := long.appendLine(nil)
	again := short.appendLine(buf)
	if &again[0] != &buf[0] {
		t.Errorf("the short line did not reuse the long line's buffer")
	}
	if want, _ := encodeML(short); !bytes.Equal(again, want) {
		t.Fatalf("reused buffer gives\n%s\nwant\n%s", again, want)
	}
	if grown, want := long.appendLine(make([]byte, 0, 10)), long.appendLine(nil); !bytes.Equal(grown, want) {
		t.Fatalf("a buffer too small gives\n%s\nwant\n%s", grown, want)
	}
}

// mlLineBefore is processRecords as appendTo wrote it before it was made
// cheaper (one strconv.AppendInt per number, appendRecordHead's strings):
// the new encoder must write exactly its bytes.
func mlLineBefore(b []byte, m mlProcessRecordsMsg) []byte {
	b = append(b[:0], `{"action":"processRecords","records":[`...)
	for i := range m.Records {
		r := &m.Records[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = appendRecordHead(b, r)
		b = append(b, `,"approximateArrivalTimestamp":`...)
		// No arrival time is null, as the KCL writes it (it was 0 before;
		// changed on purpose with the encoder).
		if r.ApproximateArrivalTimestamp.IsZero() {
			b = append(b, "null"...)
		} else {
			b = strconv.AppendInt(b, r.ApproximateArrivalTimestamp.UnixMilli(), 10)
		}
		b = append(b, `,"subSequenceNumber":`...)
		b = strconv.AppendInt(b, r.SubSequenceNumber, 10)
		b = append(b, `,"action":"record"}`...)
	}
	b = append(b, `],"millisBehindLatest":`...)
	b = strconv.AppendInt(b, m.MillisBehindLatest, 10)
	return append(b, '}', '\n')
}

// The processRecords line is byte for byte what the encoder before wrote,
// on pages that vary every field the protocol carries: keys that need
// escapes wherever they fall in a word, unicode and invalid UTF-8, empty
// and encoded data, KPL sub-sequence numbers, arrival times with and
// without fractions, of none, before 1970 and across seconds, and pages
// of one to 5,000 records; each line also reads back as valid JSON.
func TestMultiLangProcessRecordsLineAsBefore(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 7))
	specials := []string{`"`, `\`, "\n", "\t", "\r", "\x00", "\x1f", "\x7f", "\x80", "\xff", "é", "🐢", "\u2028", "<", "&", " ", "~"}
	str := func(max int) string {
		n := rng.IntN(max + 1)
		b := make([]byte, 0, n)
		for len(b) < n {
			if rng.IntN(12) == 0 {
				b = append(b, specials[rng.IntN(len(specials))]...)
			} else {
				b = append(b, byte('0'+rng.IntN(75)))
			}
		}
		return string(b)
	}
	base := time.Date(2026, 12, 2, 7, 0, 59, 0, time.UTC)
	arrival := func(i int) time.Time {
		switch rng.IntN(10) {
		case 0:
			return time.Time{}
		case 1:
			return base.Add(time.Duration(i) * time.Second) // no fraction
		case 2:
			return time.UnixMilli(rng.Int64N(3000) - 1000) // around 1970
		case 3:
			return time.Date(1969, 7, 20, 20, 17, 40, rng.IntN(1e9), time.UTC)
		case 4:
			return time.UnixMilli(999_999_999_000 + rng.Int64N(2000)) // a digit more
		default: // mostly the same few seconds, as a page's records are
			return base.Add(time.Duration(rng.Int64N(int64(3 * time.Second))))
		}
	}
	record := func(i int) kinesisrec.Record {
		r := kinesisrec.Record{PartitionKey: str(40), SequenceNumber: fmt.Sprintf("4959%052d", rng.Int64()), ApproximateArrivalTimestamp: arrival(i)}
		switch rng.IntN(8) {
		case 0:
			r.SequenceNumber = str(60) // not a sequence number: still escaped right
		case 1:
			r.SubSequenceNumber = rng.Int64N(20) // KPL sub-records
		case 2:
			r.SubSequenceNumber = rng.Int64N(1 << 40)
		}
		switch rng.IntN(4) {
		case 0: // empty data
		case 1:
			r.Data = []byte(str(300))
		default:
			d := []byte(str(300))
			if len(d) == 0 || !r.SetEncoded(base64.StdEncoding.EncodeToString(d), len(d)) {
				r.Data = d
			}
		}
		return r
	}
	for _, n := range []int{0, 1, 2, 9, 10, 11, 100, 1000, 5000} {
		for round := range 3 {
			recs := make([]kinesisrec.Record, n)
			for i := range recs {
				recs[i] = record(i)
			}
			m := newMLProcessRecords(recs, rng.Int64N(1e9))
			want := mlLineBefore(nil, m)
			got := m.appendLine(nil)
			if !bytes.Equal(got, want) {
				i := 0
				for i < min(len(got), len(want)) && got[i] == want[i] {
					i++
				}
				t.Fatalf("%d records, round %d: differs at byte %d:\n got …%q\nwant …%q", n, round, i, got[max(0, i-80):min(len(got), i+80)], want[max(0, i-80):min(len(want), i+80)])
			}
			if !json.Valid(got) {
				t.Fatalf("%d records, round %d: not valid JSON", n, round)
			}
		}
	}
}

// jsonscan.Plain, which the line's encoder relies on to copy a string
// without appendJSONString, agrees with the byte-by-byte rule for every byte at
// every place of a word and of the tail after the words.
func TestJSONPlainString(t *testing.T) {
	plain := func(c byte) bool { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' }
	for n := 1; n <= 19; n++ {
		for p := range n {
			for c := range 256 {
				b := bytes.Repeat([]byte{'7'}, n)
				b[p] = byte(c)
				if got := jsonscan.Plain(string(b)); got != plain(byte(c)) {
					t.Fatalf("%q: plain %v, want %v", b, got, !got)
				}
			}
		}
	}
	for _, s := range []string{"", "shardId-000000000000", "49590338271490256608559692538361571095921575989136588898", " !#$%&'()*+,-./0123456789:;<=>?@[]^_`{|}~\x7f"} {
		if !jsonscan.Plain(s) {
			t.Errorf("%q: not plain", s)
		}
	}
}
