package retrieval

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/internal/testenv/proctest"
)

// benchGetRecords makes one GetRecords call per iteration, as the fetcher
// does (noSDKRetries, fastGetRecords), against a server that answers every
// call with the same 1000-record page (the page
// BenchmarkDecodeGetRecords decodes alone) of 100-byte records. The server's
// own CPU is in the figure too, the same for both.
func benchGetRecords(b *testing.B, path string) {
	body := getRecordsBody(1000, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	var kin GetRecordsAPI = kinesis.New(kinesis.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")),
	})
	switch path {
	case "http":
		// The floor: the same request and answer over the same
		// transport, the answer read into a buffer and not decoded.
		kin = rawHTTP{url: srv.URL}
	}
	it := "AAAAAAAAAAGmJcHkTTsDyN3UsqpbZgT7bJzA9nvPO2eyShcq8Qf3vQ5tXqAbUcN6cpJ9g6xP"
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	self0, _ := proctest.Rusage(b)
	for b.Loop() {
		fast := fastPage{shardID: "shardId-000000000000"}
		if _, err := kin.GetRecords(context.Background(), &kinesis.GetRecordsInput{ShardIterator: &it, Limit: aws.Int32(1000)},
			NoSDKRetries, fastGetRecords(&fast)); err != nil {
			b.Fatal(err)
		}
		if path != "http" && (!fast.ok || len(fast.records) != 1000) {
			b.Fatal("not decoded")
		}
	}
	self1, _ := proctest.Rusage(b)
	// The process's CPU, client and server: what wall time on a shared
	// machine does not show.
	b.ReportMetric(float64((self1-self0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// BenchmarkGetRecordsCallSDK is the worker's call; ...HTTP is the floor
// it is measured against (docs/benchmarks.md): the same bytes over the same
// transport, unsigned and not decoded. It is a yardstick only: every AWS
// call of kcltool goes through the SDK.
func BenchmarkGetRecordsCallSDK(b *testing.B)  { benchGetRecords(b, "sdk") }
func BenchmarkGetRecordsCallHTTP(b *testing.B) { benchGetRecords(b, "http") }

type rawHTTP struct {
	GetRecordsAPI
	url string
}

func (r rawHTTP) GetRecords(ctx context.Context, in *kinesis.GetRecordsInput, _ ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error) {
	body := fmt.Appendf(nil, `{"Limit":%d,"ShardIterator":%q}`, aws.ToInt32(in.Limit), aws.ToString(in.ShardIterator))
	resp, err := http.Post(r.url, "application/x-amz-json-1.1", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	buf := bytes.NewBuffer(make([]byte, 0, resp.ContentLength+bytes.MinRead))
	_, err = buf.ReadFrom(resp.Body)
	return &kinesis.GetRecordsOutput{}, err
}
