package retrieval

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/schemas"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/internal/testenv/kpltest"
)

// getRecordsSchema is the operation schema the SDK's middleware passes its
// protocol for GetRecords.
var getRecordsSchema = smithy.NewOperationSchema(schemas.GetRecords, schemas.GetRecordsInput, schemas.GetRecordsOutput)

// sdkDecode decodes a GetRecords answer as the SDK's client does, through
// its own protocol and no server; a panic of the SDK's decoder (it has
// one, for an arrival time of "NaN") is an error here.
func sdkDecode(body []byte) (out *kinesis.GetRecordsOutput, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("SDK decoder panicked: %v", r)
		}
	}()
	p := kinesis.NewFromConfig(emulator.Config()).Options().Protocol
	resp := &smithyhttp.Response{Response: &http.Response{StatusCode: 200, ContentLength: int64(len(body)),
		Header: http.Header{"Content-Type": {"application/x-amz-json-1.1"}}, Body: io.NopCloser(bytes.NewReader(body))}}
	out = &kinesis.GetRecordsOutput{}
	err = p.DeserializeResponse(context.Background(), getRecordsSchema, kinesis.TypeRegistry, resp, out)
	return out, err
}

// decodeMatchesSDK decodes body with the fast decoder, both ways the
// fetcher asks for (data decoded, and kept as its base64 text), and
// requires every answer it takes to be one the SDK takes, with the same
// records and fields. Answers it leaves to the SDK need no comparison:
// the SDK decodes them (jsonscan.Protocol). It reports whether the fast
// decoder took the answer.
func decodeMatchesSDK(t *testing.T, body []byte) bool {
	t.Helper()
	var sdk *kinesis.GetRecordsOutput
	var sdkErr error
	taken := false
	for _, encoded := range []bool{false, true} {
		page := fastPage{shardID: "shardId-000000000007", encoded: encoded}
		var out kinesis.GetRecordsOutput
		// A copy: the fast decoder's strings share the body.
		if decodeGetRecords(bytes.Clone(body), &out, &page) != nil {
			if page.ok || page.records != nil {
				t.Fatalf("%q: refused, but ok %v and %d records", body, page.ok, len(page.records))
			}
			continue
		}
		taken = true
		if sdk == nil && sdkErr == nil {
			sdk, sdkErr = sdkDecode(body)
		}
		if sdkErr != nil {
			t.Fatalf("%q (encoded %v): the fast decoder took it, the SDK's decoder failed: %v", body, encoded, sdkErr)
		}
		sameRecords(t, page.shardID, sdk, &out, &page)
		if !reflect.DeepEqual(sdk.NextShardIterator, out.NextShardIterator) || !reflect.DeepEqual(sdk.MillisBehindLatest, out.MillisBehindLatest) ||
			len(sdk.ChildShards) != 0 {
			t.Fatalf("%q (encoded %v): answers differ:\nSDK  %+v\nfast %+v", body, encoded, sdk, &out)
		}
	}
	return taken
}

// pageGen writes GetRecords answers in every shape JSON allows and some it
// does not: white space, field orders, missing, null, duplicated and
// unknown fields, escapes of every kind (\u sequences, surrogate pairs,
// lone surrogates), raw UTF-8 and invalid UTF-8, numbers in every form,
// KPL aggregates, empty data, text that is not base64, truncated and
// damaged bodies.
type pageGen struct {
	r *rand.Rand
	// dirty pages hold what the SDK refuses, now and then; clean ones
	// only valid answers (in every shape).
	dirty bool
}

// odd says whether to write something the SDK refuses this time.
func (g *pageGen) odd() bool { return g.dirty && g.r.IntN(3) == 0 }

func (g *pageGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g *pageGen) ws() string {
	if g.r.IntN(4) != 0 {
		return ""
	}
	return g.pick(" ", "\n", "\t", "\r\n  ", "  ")
}

// str is a JSON string of v, each character written as it is or escaped.
func (g *pageGen) str(v string) string {
	var b strings.Builder
	b.WriteByte('"')
	esc := g.r.IntN(3) == 0
	for _, c := range v {
		switch {
		case c == '"' || c == '\\':
			b.WriteString(g.pick(`\`+string(c), fmt.Sprintf(`\u%04x`, c)))
		case c < 0x20:
			if short, ok := shortEscapes[c]; ok && g.r.IntN(2) == 0 {
				b.WriteString(short)
			} else {
				fmt.Fprintf(&b, `\u%04X`, c)
			}
		case esc && g.r.IntN(3) == 0 && c < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, c)
		case esc && g.r.IntN(3) == 0 && c >= 0x10000:
			c -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04X`, 0xd800+(c>>10), 0xdc00+(c&0x3ff))
		case esc && c == '/' && g.r.IntN(2) == 0:
			b.WriteString(`\/`)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

var shortEscapes = map[rune]string{'\n': `\n`, '\t': `\t`, '\r': `\r`, '\b': `\b`, '\f': `\f`}

func (g *pageGen) text() string {
	parts := []string{"k", "shard-key", "é", "☃", "日本", "😀", "a\"b", `back\slash`, "/", "\x01", "\n", "tab\t", "\u2028", "0", " "}
	var b strings.Builder
	for range g.r.IntN(4) {
		b.WriteString(parts[g.r.IntN(len(parts))])
	}
	return b.String()
}

// stringValue is a string value as JSON holds it, now and then one JSON
// cannot hold as it is or a string with a lone surrogate or invalid UTF-8.
func (g *pageGen) stringValue() string {
	switch g.r.IntN(12) {
	case 0:
		return `"lone \ud800 surrogate"`
	case 1:
		return "\"raw \xff\xfe bytes\""
	case 2:
		return g.pick(`null`, `""`)
	}
	if g.odd() {
		return g.pick("\"raw \x01 control\"", `5`, `"\x"`, `"\u12"`, `"\ud83d\u`)
	}
	return g.str(g.text())
}

func (g *pageGen) number() string {
	switch g.r.IntN(10) {
	case 0:
		return g.pick("0", "-0", "0.0", "-0.0", "0e0", "1E+0", "1e-0")
	case 1:
		return g.pick("1e-400", "1e300", "-1e300", "9223372036854775.807", "9223372036854775807", "1.7976931348623157e308", "4.9e-324", "-1e-7")
	case 2:
		if g.odd() {
			return g.pick("01", ".5", "+1", "1.", "1e", "--1", "0x10", `"1"`, `"NaN"`, `"Infinity"`, "NaN", "true", "1e400", "-1e400")
		}
	case 3:
		return strconv.FormatFloat(g.r.NormFloat64()*1e10, "eEfg"[g.r.IntN(4)], -1, 64)
	case 4:
		return fmt.Sprintf("%d.%dE%d", 1+g.r.IntN(9), g.r.Int64N(1e15), g.r.IntN(30)-10)
	case 5:
		return strconv.FormatInt(g.r.Int64()>>g.r.IntN(64)-g.r.Int64N(1e6), 10)
	case 6:
		return fmt.Sprintf("%d.%0*d", 1700000000+g.r.IntN(1e8), 1+g.r.IntN(18), g.r.Int64N(1e18))
	}
	return fmt.Sprintf("%d.%03d", 1700000000+g.r.IntN(1e8), g.r.IntN(1000))
}

func (g *pageGen) data() string {
	var d []byte
	switch g.r.IntN(6) {
	case 0:
	case 1:
		d = kpltest.Aggregate(kpltest.Record{PartitionKey: g.text(), Data: []byte(g.text())}, kpltest.Record{PartitionKey: "b", ExplicitHashKey: "7", Data: []byte("b1")})
	default:
		d = make([]byte, g.r.IntN(300))
		for i := range d {
			d[i] = byte(g.r.Uint32())
		}
	}
	enc := base64.StdEncoding.EncodeToString(d)
	if g.r.IntN(50) == 0 {
		return `"` + strings.ReplaceAll(enc, "/", `\/`) + `"` // valid JSON, and base64 once read
	}
	if !g.odd() {
		return `"` + enc + `"`
	}
	switch g.r.IntN(5) {
	case 0:
		return `"` + strings.TrimRight(enc, "=") + `"` // no padding
	case 1:
		if len(enc) > 4 {
			return `"` + enc[:4] + g.pick("\n", "\r\n", "\r", "\t", " ", `\n`, `\/`, `\u0041`, "-", "_", "!", "=", "==", "\x80") + enc[4:] + `"`
		}
	case 2:
		return `"` + base64.URLEncoding.EncodeToString(d) + `"`
	case 3:
		return g.pick(`"="`, `"===="`, `"QQ=A"`, `"QQ==QUJD"`, `5`, `"AB=="`, `"QUJD`, `["QUJD"]`)
	}
	return `"` + enc + `"`
}

func (g *pageGen) object(fields [][2]string) string {
	g.r.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
	var b strings.Builder
	b.WriteString("{" + g.ws())
	n := 0
	for _, f := range fields {
		if f[1] == "" {
			continue // absent
		}
		if n > 0 {
			b.WriteString(g.ws() + "," + g.ws())
		}
		n++
		key := `"` + f[0] + `"`
		if g.r.IntN(100) == 0 {
			key = g.str(f[0]) // escaped, now and then: left to the SDK
		}
		b.WriteString(key + g.ws() + ":" + g.ws() + f[1])
	}
	b.WriteString(g.ws() + "}")
	return b.String()
}

// maybe is v, or absent, or null, now and then.
func (g *pageGen) maybe(v string) string {
	switch g.r.IntN(12) {
	case 0:
		return ""
	case 1:
		return "null"
	}
	return v
}

func (g *pageGen) extra() [2]string {
	return [2]string{g.pick("Extra", "sequenceNumber", "Data2", "É"), g.pick(`{"a":[1,true,null,{"b":"c\"d"}],"e":-1.5e2}`, `[]`, `"x"`, `0`, `null`, `[{}, [], ""]`)}
}

func (g *pageGen) record() string {
	fields := [][2]string{
		{"Data", g.maybe(g.data())},
		{"PartitionKey", g.maybe(g.stringValue())},
		{"SequenceNumber", g.maybe(g.str(strconv.FormatUint(g.r.Uint64(), 10) + strings.Repeat("0", g.r.IntN(40))))},
		{"ApproximateArrivalTimestamp", g.maybe(g.number())},
		{"EncryptionType", g.maybe(g.pick(`"NONE"`, `"KMS"`, `"N\u004fNE"`))},
	}
	if g.r.IntN(8) == 0 {
		fields = append(fields, g.extra())
	}
	if g.r.IntN(12) == 0 {
		fields = append(fields, fields[g.r.IntN(len(fields))]) // a duplicated key
	}
	return g.object(fields)
}

func (g *pageGen) page() []byte {
	g.dirty = g.r.IntN(2) == 0
	var recs strings.Builder
	recs.WriteString("[" + g.ws())
	for i := range g.r.IntN(12) {
		if i > 0 {
			recs.WriteString(g.ws() + "," + g.ws())
		}
		recs.WriteString(g.record())
	}
	recs.WriteString(g.ws() + "]")
	fields := [][2]string{
		{"Records", g.maybe(recs.String())},
		{"NextShardIterator", g.maybe(g.stringValue())},
		{"MillisBehindLatest", g.maybe(g.pick("0", "12", "-0", "9223372036854775807", "-5"))},
	}
	if g.r.IntN(10) == 0 {
		fields = append(fields, [2]string{"ChildShards", g.pick(`null`, `[]`, `[{"ShardId":"shardId-000000000002","ParentShards":["shardId-000000000000"],"HashKeyRange":{"StartingHashKey":"0","EndingHashKey":"9"}}]`)})
	}
	if g.r.IntN(8) == 0 {
		fields = append(fields, g.extra())
	}
	if g.odd() {
		fields = append(fields, [2]string{g.pick("MillisBehindLatest", "EncryptionType"), g.pick("1.0", "1e3", "9223372036854775808", `"5"`, "5", "{")})
	}
	body := []byte(g.ws() + g.object(fields) + g.ws())
	if !g.dirty {
		return body
	}
	switch g.r.IntN(6) {
	case 0:
		body = body[:g.r.IntN(len(body))] // truncated
	case 1:
		body[g.r.IntN(len(body))] = byte(g.r.Uint32()) // damaged
	case 2:
		body = append(body, g.pick("x", "{}", ",", "\x00")...)
	}
	return body
}

// TestFastGetRecordsMatchesSDKOnGeneratedPages: on thousands of generated
// answers, everything the fast decoder takes, the SDK's decoder takes too,
// with the same records; and it takes most valid answers (else the test
// would compare nothing).
func TestFastGetRecordsMatchesSDKOnGeneratedPages(t *testing.T) {
	g := &pageGen{r: rand.New(rand.NewPCG(11, 12))}
	pages, taken, valid := 4000, 0, 0
	for range pages {
		body := g.page()
		if decodeMatchesSDK(t, body) {
			taken++
		}
		if _, err := sdkDecode(body); err == nil {
			valid++
		}
	}
	t.Logf("%d pages: %d taken by the fast decoder, %d by the SDK's", pages, taken, valid)
	if taken < valid/4 {
		t.Fatalf("the fast decoder took only %d of the %d pages the SDK's decoder takes", taken, valid)
	}
}

// FuzzDecodeGetRecords: what the fast decoder takes, the SDK's decoder
// takes too, with the same records (decodeMatchesSDK). Seeded with
// generated answers; `go test -fuzz FuzzDecodeGetRecords ./runner`.
func FuzzDecodeGetRecords(f *testing.F) {
	g := &pageGen{r: rand.New(rand.NewPCG(13, 14))}
	for range 30 {
		f.Add(g.page())
	}
	f.Add(getRecordsBody(3, 10))
	f.Add([]byte(`{"Records":[{"Data":"aGk=","PartitionKey":"k\u00e9\"","SequenceNumber":"1","ApproximateArrivalTimestamp":1.700000000123E9}],"MillisBehindLatest":0,"NextShardIterator":"it"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		decodeMatchesSDK(t, body)
	})
}
