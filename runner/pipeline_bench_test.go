package runner

import (
	"encoding/base64"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
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
func benchPages(b *testing.B, step func(out *kinesis.GetRecordsOutput) error) {
	body := getRecordsBody(1000, 100)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var out kinesis.GetRecordsOutput
		if err := decodeGetRecords(body, &out); err != nil {
			b.Fatal(err)
		}
		if err := step(&out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordPipeline is the per-record CPU of the consumer's own work
// between the socket and the handler's stdin: decode a 1000-record page,
// convert and de-aggregate it, write it as JSON Lines. The HTTP and handler
// processes are left out; `make bench` (TestBenchRun) measures the whole.
func BenchmarkRecordPipeline(b *testing.B) {
	benchPages(b, func(out *kinesis.GetRecordsOutput) error {
		recs, _ := Deaggregate(FromKinesis("shardId-000000000000", out.Records), HashRange{})
		return writeBatch(io.Discard, FormatJSON, recs)
	})
}

// BenchmarkDecodeGetRecords is the decoding alone.
func BenchmarkDecodeGetRecords(b *testing.B) {
	benchPages(b, func(*kinesis.GetRecordsOutput) error { return nil })
}
