package retrieval

import (
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/runner/metrics"
	"github.com/kcltool/kcltool/runner/processor"
)

// getRecordsBody is a GetRecords answer as kinesis-local writes it: n
// records of size bytes each.
func getRecordsBody(n, size int) []byte {
	var b strings.Builder
	b.WriteString(`{"MillisBehindLatest":0,"NextShardIterator":"AAAAAAAAAAGmJcHkTTsDyN3UsqpbZgT7bJzA9nvPO2eyShcq8Qf3vQ5tXqAbUcN6cpJ9g6xP","Records":[`)
	data := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", size)))
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"ApproximateArrivalTimestamp":1764430000.%03d,"Data":"%s","EncryptionType":"NONE","PartitionKey":"%d","SequenceNumber":"4963838742611432%020d"}`,
			i%1000, data, i, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// benchPages runs step on a 1000-record page of 100-byte records.
// encoded decodes as the fetcher does for the MultiLang protocol (the data
// kept as its base64 text).
func benchPages(b *testing.B, encoded bool, step func(out *kinesis.GetRecordsOutput, fast *fastPage) error) {
	body := getRecordsBody(1000, 100)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var out kinesis.GetRecordsOutput
		fast := fastPage{shardID: "shardId-000000000000", encoded: encoded}
		if err := decodeGetRecords(body, &out, &fast); err != nil {
			b.Fatal(err)
		}
		if err := step(&out, &fast); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordPipeline is the per-record CPU of the consumer's own work
// between the socket and the handler's stdin: decode a 1000-record page,
// turn it into records as the fetcher does, write them as JSON Lines. The HTTP and handler
// processes are left out; `make bench` (TestBenchRun) measures the whole.
func BenchmarkRecordPipeline(b *testing.B) {
	f := &Fetcher{shardID: "shardId-000000000000", stats: &metrics.ShardStats{}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	benchPages(b, false, func(out *kinesis.GetRecordsOutput, fast *fastPage) error {
		return processor.WriteBatch(io.Discard, processor.FormatJSON, f.page(out, fast).Records)
	})
}

// BenchmarkDecodeGetRecords is the decoding alone.
func BenchmarkDecodeGetRecords(b *testing.B) {
	benchPages(b, false, func(*kinesis.GetRecordsOutput, *fastPage) error { return nil })
}

// BenchmarkDecodeGetRecordsEncoded is the decoding alone as the MultiLang
// protocol asks for it: each record's data checked and kept as its text.
func BenchmarkDecodeGetRecordsEncoded(b *testing.B) {
	benchPages(b, true, func(*kinesis.GetRecordsOutput, *fastPage) error { return nil })
}

// BenchmarkMultiLangPipeline is the same page on the MultiLang path:
// decoded, turned into records, written as the processRecords line a child
// reads (the pipe and the child left out), the data kept as its text as
// the fetcher keeps it for this protocol. The line goes into the previous
// page's buffer, as the children's lines do once a first line was written
// (mlLineBuffer).
func BenchmarkMultiLangPipeline(b *testing.B) {
	f := &Fetcher{shardID: "shardId-000000000000", stats: &metrics.ShardStats{}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	var line []byte
	benchPages(b, true, func(out *kinesis.GetRecordsOutput, fast *fastPage) error {
		line = processor.AppendProcessRecordsLine(line, f.page(out, fast).Records, 0)
		return nil
	})
}
