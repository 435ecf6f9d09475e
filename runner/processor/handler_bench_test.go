package processor

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/proctest"
	"github.com/kcltool/kcltool/kinesisrec"
)

// BenchmarkHandlerRun is the per-batch cost of the handler contract: one
// `sh -c 'cat >/dev/null'` process fed a 1000-record batch of 100-byte
// records (the page of runner/retrieval's pipeline benchmarks). It reports
// the CPU this process spent (parent-µs/op) apart from the handler
// processes' (children-µs/op).
func BenchmarkHandlerRun(b *testing.B) {
	batch := Batch{App: "a", Stream: "s", ShardID: "shardId-000000000000", WorkerID: "w"}
	data := []byte(strings.Repeat("x", 100))
	for i := range 1000 {
		batch.Records = append(batch.Records, kinesisrec.Record{
			Data: data, PartitionKey: fmt.Sprint(i), SequenceNumber: fmt.Sprintf("4963838742611432%020d", i),
			ApproximateArrivalTimestamp: time.Unix(1764430000, int64(i%1000)*int64(time.Millisecond)), ShardID: batch.ShardID,
		})
	}
	h := &Handler{Argv: ShellCommand("cat >/dev/null"), Env: os.Environ()}
	self0, children0 := proctest.Rusage(b)
	for b.Loop() {
		if res := h.Run(context.Background(), batch); res.Outcome != Succeeded {
			b.Fatalf("handler: %+v", res)
		}
	}
	self1, children1 := proctest.Rusage(b)
	b.ReportMetric(float64((self1-self0).Microseconds())/float64(b.N), "parent-µs/op")
	b.ReportMetric(float64((children1-children0).Microseconds())/float64(b.N), "children-µs/op")
}
