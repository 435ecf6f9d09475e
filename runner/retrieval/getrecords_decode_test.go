package retrieval

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/internal/testenv/kpltest"
	"github.com/kcltool/kcltool/kinesisrec"
	"github.com/kcltool/kcltool/runner/metrics"
	"github.com/kcltool/kcltool/runner/processor"
)

// sameAnswer calls GetRecords with the SDK's decoder and with the fast one
// on the same iterator (iterators may be reused) and requires the same
// result: the same records as the fetcher makes them from the SDK's.
func sameAnswer(t *testing.T, kin *kinesis.Client, it *string) *kinesis.GetRecordsOutput {
	t.Helper()
	ctx := context.Background()
	sdk, err := kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it})
	if err != nil {
		t.Fatal(err)
	}
	// As the fetcher asks, and as it asks for the MultiLang protocol (the
	// data kept as its base64 text).
	encoded := fastPage{shardID: "shardId-000000000000", encoded: true}
	eout, err := kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it}, fastGetRecords(&encoded))
	if err != nil {
		t.Fatal(err)
	}
	sameRecords(t, encoded.shardID, sdk, eout, &encoded)
	fast := fastPage{shardID: "shardId-000000000000"}
	out, err := kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it}, fastGetRecords(&fast))
	if err != nil {
		t.Fatal(err)
	}
	sameRecords(t, fast.shardID, sdk, out, &fast)
	if !reflect.DeepEqual(sdk.ChildShards, out.ChildShards) || (sdk.NextShardIterator == nil) != (out.NextShardIterator == nil) ||
		(sdk.MillisBehindLatest == nil) != (out.MillisBehindLatest == nil) {
		t.Fatalf("answers differ:\nSDK  %+v\nfast %+v", sdk, out)
	}
	if fast.ok {
		out.Records = sdk.Records // for the caller, which counts them
	}
	return out
}

// sameRecords requires the records the fetcher takes from a fast-decoded
// answer (fast's, or out's when the SDK decoded it) to be those it makes
// from the SDK's answer, and each one's base64 text to be its data's.
func sameRecords(t *testing.T, shardID string, sdk, out *kinesis.GetRecordsOutput, fast *fastPage) {
	t.Helper()
	want := kinesisrec.FromKinesis(shardID, sdk.Records)
	got := kinesisrec.FromKinesis(shardID, out.Records)
	if fast.ok {
		if len(out.Records) != 0 {
			t.Fatalf("the fast decoder left %d SDK records", len(out.Records))
		}
		got = slices.Clone(fast.records)
		for i := range got {
			r := &got[i]
			if w := r.Wire64(); w != base64.StdEncoding.EncodeToString(r.Payload()) {
				t.Fatalf("record %d: wire text %q for data %q", i, w, r.Payload())
			}
			// Data is nil too when the answer had none (absent or null).
			// Text that begins as every aggregate's does ("84ma", the
			// first three magic bytes) is decoded (SetEncoded), aggregate
			// or not.
			if kept := r.Data == nil && r.Wire64() != ""; kept != (fast.encoded && r.DataLen() > 0 && !strings.HasPrefix(r.Wire64(), "84ma")) {
				t.Fatalf("record %d (data %q): kept encoded %v, in a page decoded with encoded %v", i, r.Payload(), kept, fast.encoded)
			}
			if r.DataLen() != len(r.Payload()) {
				t.Fatalf("record %d: DataLen %d for %d bytes", i, r.DataLen(), len(r.Payload()))
			}
			// As a record decoded at once is: Data set, no wire text.
			*r = kinesisrec.Record{Data: r.Payload(), PartitionKey: r.PartitionKey, SequenceNumber: r.SequenceNumber,
				SubSequenceNumber: r.SubSequenceNumber, ApproximateArrivalTimestamp: r.ApproximateArrivalTimestamp,
				ExplicitHashKey: r.ExplicitHashKey, ShardID: r.ShardID}
		}
	}
	if (len(want) > 0 || len(got) > 0) && !reflect.DeepEqual(want, got) {
		t.Fatalf("records differ:\nSDK  %+v\nfast %+v", want, got)
	}
}

// On kinesis-local's own answers the fast decoder gives exactly what the
// SDK's gives: binary data, keys that need escaping in JSON, arrival times,
// a KPL aggregate, and the ChildShards page at the end of a split shard.
func TestFastGetRecordsMatchesSDK(t *testing.T) {
	ctx := context.Background()
	kin := emulator.Kinesis(t)
	stream := emulator.Name(t, "fast")
	emulator.CreateStream(t, kin, stream, 1)
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	entries := []kintypes.PutRecordsRequestEntry{
		{PartitionKey: aws.String("plain"), Data: []byte("hello")},
		{PartitionKey: aws.String(`quote" back\ slash/ é ☃ \u0041`), Data: binary},
		{PartitionKey: aws.String("agg"), Data: kpltest.Aggregate(kpltest.Record{PartitionKey: "a", Data: []byte("a1")}, kpltest.Record{PartitionKey: "b", ExplicitHashKey: "7", Data: []byte("b1")})},
	}
	for i := range 40 {
		entries = append(entries, kintypes.PutRecordsRequestEntry{PartitionKey: aws.String(string(rune('a' + i%26))), Data: []byte{byte(i)}})
	}
	if _, err := kin.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String(stream), Records: entries}); err != nil {
		t.Fatal(err)
	}
	emulator.SplitShard(t, kin, stream, "shardId-000000000000", new(big.Int).Lsh(big.NewInt(1), 127))
	it, err := kin.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(stream),
		ShardId: aws.String("shardId-000000000000"), ShardIteratorType: kintypes.ShardIteratorTypeTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	before := sdkDecoded.Load()
	iter, records, children := it.ShardIterator, 0, 0
	for iter != nil && records+children < 1000 {
		out := sameAnswer(t, kin, iter)
		records += len(out.Records)
		children += len(out.ChildShards)
		iter = out.NextShardIterator
	}
	if records != len(entries) || children != 2 {
		t.Fatalf("read %d records and %d child shards, want %d and 2", records, children, len(entries))
	}
	if n := sdkDecoded.Load() - before; n != 2 {
		t.Fatalf("%d answers went to the SDK's decoder, want only the one with ChildShards (decoded both ways: 2)", n)
	}
}

// Answers shaped other than kinesis-local shapes them: white space, other
// field orders, nulls, unknown fields, escapes, and garbage, which must give
// the SDK's result (or its error).
func TestFastGetRecordsMatchesSDKOnOddAnswers(t *testing.T) {
	bodies := []string{
		`{"Records":[],"MillisBehindLatest":0,"NextShardIterator":"it"}`,
		` { "NextShardIterator" : "it\/x" , "Records" : [ { "SequenceNumber" : "1" , "Data" : "aGk=" , "PartitionKey" : "k\u00e9\"" , "ApproximateArrivalTimestamp" : 1.700000000123E9 , "Extra" : {"a":[1,true,null]} } ] , "MillisBehindLatest" : 12 } `,
		`{"Records":[{"Data":"","PartitionKey":"k","SequenceNumber":"2","ApproximateArrivalTimestamp":1700000000.9999,"EncryptionType":"KMS"}],"NextShardIterator":null,"ChildShards":[{"ShardId":"shardId-000000000002","ParentShards":["shardId-000000000000"],"HashKeyRange":{"StartingHashKey":"0","EndingHashKey":"9"}}]}`,
		`{"Records":null,"MillisBehindLatest":5}`,
		`{"Records":[{"Data":"not base64!","SequenceNumber":"3"}]}`,
		`{"Records":[{"Data":"aGk=","SequenceNumber":"3"}],}`,
		`{"Records":[{"Data":"aGk=","SequenceNumber":"3"}]} trailing`,
		`{"MillisBehindLatest":1.5}`,
		// Escapes in data are valid JSON but no base64: the SDK decodes them.
		`{"Records":[{"Data":"aGk\u003d","PartitionKey":"k","SequenceNumber":"4"}]}`,
		"{\"Records\":[{\"Data\":\"aGk=\",\"PartitionKey\":\"k\x01\",\"SequenceNumber\":\"5\"}]}",
	}
	for i, body := range bodies {
		if fast := i == 0 || i == 1 || i == 3; fast != (decodeGetRecords([]byte(body), &kinesis.GetRecordsOutput{}, &fastPage{}) == nil) {
			t.Errorf("body %d: fast path taken %v, want %v", i, !fast, fast)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/x-amz-json-1.1")
			_, _ = w.Write([]byte(body))
		}))
		kin := kinesis.NewFromConfig(emulator.Config(), func(o *kinesis.Options) {
			o.BaseEndpoint = aws.String(srv.URL)
			o.RetryMaxAttempts = 1
		})
		ctx := context.Background()
		sdk, sdkErr := kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: aws.String("x")})
		page := fastPage{shardID: "shardId-000000000000"}
		fast, fastErr := kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: aws.String("x")}, fastGetRecords(&page))
		srv.Close()
		if (sdkErr == nil) != (fastErr == nil) {
			t.Fatalf("body %s: SDK error %v, fast error %v", body, sdkErr, fastErr)
		}
		if sdkErr != nil {
			continue
		}
		sdk.ResultMetadata, fast.ResultMetadata = fast.ResultMetadata, sdk.ResultMetadata
		sameRecords(t, "shardId-000000000000", sdk, fast, &page)
		if !reflect.DeepEqual(sdk.ChildShards, fast.ChildShards) ||
			!reflect.DeepEqual(sdk.NextShardIterator, fast.NextShardIterator) || !reflect.DeepEqual(sdk.MillisBehindLatest, fast.MillisBehindLatest) {
			t.Fatalf("body %s:\nSDK  %+v\nfast %+v", body, sdk, fast)
		}
	}
}

// The base64 text kept from the wire gives the handler exactly the input
// that encoding the decoded data gives, and a KPL aggregate's sub-records
// never carry their aggregate's text.
func TestWireBase64GivesTheSameHandlerInput(t *testing.T) {
	agg := kpltest.Aggregate(kpltest.Record{PartitionKey: "a", Data: []byte("sub one")}, kpltest.Record{PartitionKey: "b", Data: []byte("sub two")})
	var b strings.Builder
	b.WriteString(`{"MillisBehindLatest":0,"NextShardIterator":"it","Records":[`)
	for i, data := range [][]byte{[]byte("hello"), {0, 1, 2, 250, 255}, {}, agg, []byte(strings.Repeat("x", 1000))} {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"ApproximateArrivalTimestamp":1764430000.%03d,"Data":"%s","PartitionKey":"k%d","SequenceNumber":"%d"}`,
			i, base64.StdEncoding.EncodeToString(data), i, 100+i)
	}
	b.WriteString(`]}`)
	var out kinesis.GetRecordsOutput
	decoded := fastPage{shardID: "shardId-000000000000"}
	if err := decodeGetRecords([]byte(b.String()), &out, &decoded); err != nil {
		t.Fatal(err)
	}
	if len(decoded.records) != 5 || decoded.records[0].Wire64() != "aGVsbG8=" {
		t.Fatalf("records %+v", decoded.records)
	}
	f := &Fetcher{shardID: "shardId-000000000000", stats: &metrics.ShardStats{}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	p := f.page(&out, &decoded)
	if len(p.Records) != 6 {
		t.Fatalf("%d records after de-aggregation, want 6", len(p.Records))
	}
	plain := slices.Clone(p.Records)
	for i := range plain {
		plain[i].SetWire64("")
	}
	var fast, slow bytes.Buffer
	if err := processor.WriteBatch(&fast, processor.FormatJSON, p.Records); err != nil {
		t.Fatal(err)
	}
	if err := processor.WriteBatch(&slow, processor.FormatJSON, plain); err != nil {
		t.Fatal(err)
	}
	if fast.String() != slow.String() {
		t.Fatalf("handler input differs:\nwire    %s\nencoded %s", fast.String(), slow.String())
	}
	if !strings.Contains(fast.String(), `"data":"`+base64.StdEncoding.EncodeToString([]byte("sub two"))+`"`) {
		t.Fatalf("sub-record data missing:\n%s", fast.String())
	}
	// Decoded for the MultiLang protocol, the data kept as its text: the
	// same processRecords line, and the same handler input.
	var eout kinesis.GetRecordsOutput
	encoded := fastPage{shardID: "shardId-000000000000", encoded: true}
	if err := decodeGetRecords([]byte(b.String()), &eout, &encoded); err != nil {
		t.Fatal(err)
	}
	ep := f.page(&eout, &encoded)
	if kept := ep.Records[0].Data == nil; !kept || ep.Bytes != p.Bytes || len(ep.Records) != len(p.Records) {
		t.Fatalf("encoded page: first record kept encoded %v, %d bytes in %d records, want true, %d in %d", kept, ep.Bytes, len(ep.Records), p.Bytes, len(p.Records))
	}
	if got, want := processor.AppendProcessRecordsLine(nil, ep.Records, 7), processor.AppendProcessRecordsLine(nil, plain, 7); !bytes.Equal(got, want) {
		t.Fatalf("processRecords differs:\nencoded %s\ndecoded %s", got, want)
	}
	var exec bytes.Buffer
	if err := processor.WriteBatch(&exec, processor.FormatJSON, ep.Records); err != nil {
		t.Fatal(err)
	}
	var raw, rawPlain bytes.Buffer
	if err := processor.WriteBatch(&raw, processor.FormatRaw, ep.Records); err != nil {
		t.Fatal(err)
	}
	if err := processor.WriteBatch(&rawPlain, processor.FormatRaw, plain); err != nil {
		t.Fatal(err)
	}
	if exec.String() != slow.String() || raw.String() != rawPlain.String() {
		t.Fatalf("handler input of an encoded page differs:\n%s\n%s", exec.String(), raw.String())
	}
}

// Records of every size, in any order, decode to their data whatever
// buffers the decoder cuts it from (dataChunk): small records before large
// ones, empty ones, and one larger than all the others together.
func TestFastGetRecordsDataOfMixedSizes(t *testing.T) {
	sizes := []int{0, 1, 0, 3, 500, 2, 2, 70000, 0, 5, 1000, 1, 1, 1}
	var b strings.Builder
	b.WriteString(`{"NextShardIterator":"it","Records":[`)
	var want [][]byte
	for i, n := range sizes {
		data := make([]byte, n)
		for j := range data {
			data[j] = byte(i*31 + j)
		}
		want = append(want, data)
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"Data":"%s","PartitionKey":"k{%d}","SequenceNumber":"%d"}`, base64.StdEncoding.EncodeToString(data), i, 100+i)
	}
	b.WriteString(`]}`)
	var out kinesis.GetRecordsOutput
	var fast fastPage
	if err := decodeGetRecords([]byte(b.String()), &out, &fast); err != nil {
		t.Fatal(err)
	}
	if len(fast.records) != len(sizes) {
		t.Fatalf("%d records, want %d", len(fast.records), len(sizes))
	}
	for i, r := range fast.records {
		if !bytes.Equal(r.Data, want[i]) || cap(r.Data) != len(r.Data) || r.Data == nil {
			t.Fatalf("record %d: %d bytes (cap %d, nil %v), want %d", i, len(r.Data), cap(r.Data), r.Data == nil, len(want[i]))
		}
		if r.Wire64() != base64.StdEncoding.EncodeToString(want[i]) {
			t.Fatalf("record %d: wire text %q", i, r.Wire64())
		}
	}
	// The data of a page of equal records takes one buffer of their size.
	if got := dataChunk(100, 1000, 1<<20); got != 100*1000 {
		t.Errorf("dataChunk(100, 1000, 1 MiB) = %d, want 100000", got)
	}
	if got := dataChunk(100, 1000, 400); got != 100+300 {
		t.Errorf("dataChunk(100, 1000, 400) = %d, want the body's bound 400", got)
	}
}
