package leasecore

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// scanPageBody is a Scan answer of about 1 MB of typical leases, as
// DynamoDB would send it, with or without ConsumedCapacity.
func scanPageBody(b testing.TB, consumed bool) []byte {
	var buf bytes.Buffer
	buf.WriteString(`{"Count":3000,"Items":[`)
	for i := range 3000 {
		if i > 0 {
			buf.WriteByte(',')
		}
		item, err := MarshalItemJSON(EncodeLease(Lease{
			LeaseKey: fmt.Sprintf("shardId-%012d", i), LeaseOwner: fmt.Sprintf("worker-%d", i%10), LeaseCounter: int64(1000 + i),
			Checkpoint:      SequenceNumber{SequenceNumber: fmt.Sprintf("4963%052d", i)},
			ParentShardIDs:  []string{fmt.Sprintf("shardId-%012d", i/2)},
			StartingHashKey: "0", EndingHashKey: "340282366920938463463374607431768211455",
		}))
		if err != nil {
			b.Fatal(err)
		}
		buf.Write(item)
	}
	buf.WriteString(`],"ScannedCount":3000`)
	if consumed {
		buf.WriteString(`,"ConsumedCapacity":{"CapacityUnits":128.5,"TableName":"t"}`)
	}
	buf.WriteString(`}`)
	return buf.Bytes()
}

// BenchmarkScanPage reads a 1 MB Scan page through the SDK client with the
// fast decoder, with and without ConsumedCapacity in the answer: asking
// for the capacity must not cost the fast path (docs/benchmarks.md).
func BenchmarkScanPage(b *testing.B) {
	for _, consumed := range []bool{false, true} {
		b.Run(fmt.Sprintf("consumedCapacity=%v", consumed), func(b *testing.B) {
			body := scanPageBody(b, consumed)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/x-amz-json-1.0")
				_, _ = w.Write(body)
			}))
			defer srv.Close()
			c := dynamodb.NewFromConfig(emulator.Config(), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(srv.URL) })
			in := &dynamodb.ScanInput{TableName: aws.String("t")}
			b.SetBytes(int64(len(body)))
			b.ResetTimer()
			for range b.N {
				out, err := c.Scan(context.Background(), in, fastScan)
				if err != nil || len(out.Items) != 3000 {
					b.Fatal(err)
				}
			}
		})
	}
}
