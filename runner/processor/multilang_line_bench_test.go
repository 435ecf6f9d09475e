package processor

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/kinesisrec"
)

// encodedPage is a 1000-record page of 100-byte records as the runner's
// fetcher hands it over for the MultiLang protocol: the data kept as its
// base64 text (kinesisrec.Record.SetEncoded), the shape of the GetRecords
// body of runner's pipeline benchmarks.
func encodedPage(b *testing.B) []kinesisrec.Record {
	data := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", 100)))
	records := make([]kinesisrec.Record, 1000)
	for i := range records {
		r := &records[i]
		r.PartitionKey = fmt.Sprint(i)
		r.SequenceNumber = fmt.Sprintf("4963838742611432%020d", i)
		r.ApproximateArrivalTimestamp = time.Unix(1764430000, int64(i%1000)*int64(time.Millisecond))
		r.ShardID = "shardId-000000000000"
		if !r.SetEncoded(data, 100) {
			b.Fatal("record data not kept encoded")
		}
	}
	return records
}

// BenchmarkMultiLangLine is the processRecords line alone, of a
// 1000-record page: into the previous page's buffer (reused), into a new
// one each page (fresh: a child's first page), and as the encoder before
// this one wrote it (before, reused buffer; mlLineBefore).
func BenchmarkMultiLangLine(b *testing.B) {
	msg := newMLProcessRecords(encodedPage(b), 0)
	b.Run("before", func(b *testing.B) {
		var line []byte
		b.ReportAllocs()
		for b.Loop() {
			line = mlLineBefore(line, msg)
		}
		b.SetBytes(int64(len(line)))
	})
	for _, reuse := range []bool{true, false} {
		name := map[bool]string{true: "reused", false: "fresh"}[reuse]
		b.Run(name, func(b *testing.B) {
			var line []byte
			b.ReportAllocs()
			for b.Loop() {
				if !reuse {
					line = nil
				}
				line = msg.appendLine(line)
			}
			b.SetBytes(int64(len(line)))
		})
	}
}
