package runner

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
)

// hostLog is an HTTP client that answers Kinesis reads without a network
// and records the URL each request was sent to.
type hostLog struct {
	mu    sync.Mutex
	sent  map[string]string // operation -> host
	order []string
}

func (h *hostLog) Do(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.LastIndex(target, ".")+1:]
	h.mu.Lock()
	h.sent[op] = r.URL.Scheme + "://" + r.URL.Host
	h.order = append(h.order, op)
	h.mu.Unlock()
	body := `{}`
	switch op {
	case "GetShardIterator":
		body = `{"ShardIterator":"AAAAAAAAAAE="}`
	case "GetRecords":
		body = `{"Records":[],"NextShardIterator":"AAAAAAAAAAI=","MillisBehindLatest":0}`
	}
	return &http.Response{StatusCode: http.StatusOK, Request: r, ContentLength: int64(len(body)),
		Header: http.Header{"Content-Type": {"application/x-amz-json-1.1"}}, Body: io.NopCloser(bytes.NewReader([]byte(body)))}, nil
}

// A shard's reads, as the worker makes them (its client wrapped as
// NewWorker wraps it, the fetcher's calls and options), go to the host the
// SDK resolves for each call: GetShardIterator and GetRecords to the same
// one, with credentials that carry an account ID (assume-role, web
// identity, SSO, container credentials: the account's own endpoint) and
// with a FIPS pseudo-region. A read path that resolved its endpoint once,
// without the account ID or the pseudo-region mapping, sent GetRecords
// elsewhere, which a VPC endpoint policy admitting one host refuses
// (issue 23). With a stream ARN, both go to the stream's account's
// endpoint: GetRecords names the stream too, as GetShardIterator does.
// No request leaves the process.
func TestWorkerReadsResolveToOneHost(t *testing.T) {
	const arn = "arn:aws:kinesis:us-east-1:123456789012:stream/s"
	for _, c := range []struct {
		name, region, account, arn, want string
	}{
		{"account ID", "us-east-1", "123456789012", "", "https://123456789012.data-kinesis.us-east-1.amazonaws.com"},
		{"FIPS pseudo-region", "us-east-1-fips", "", "", "https://kinesis-fips.us-east-1.amazonaws.com"},
		{"FIPS pseudo-region and account ID", "fips-us-east-1", "123456789012", "", "https://123456789012.data-kinesis-fips.us-east-1.amazonaws.com"},
		{"no account ID", "eu-west-1", "", "", "https://kinesis.eu-west-1.amazonaws.com"},
		// The stream's account, from its ARN, whatever the credentials'.
		{"stream ARN", "us-east-1", "", arn, "https://123456789012.data-kinesis.us-east-1.amazonaws.com"},
		{"stream ARN of another account", "us-east-1", "210987654321", arn, "https://123456789012.data-kinesis.us-east-1.amazonaws.com"},
	} {
		t.Run(c.name, func(t *testing.T) {
			hosts := &hostLog{sent: map[string]string{}}
			creds := credentials.StaticCredentialsProvider{Value: aws.Credentials{
				AccessKeyID: "AKID", SecretAccessKey: "SECRET", AccountID: c.account, Source: "test"}}
			cfg := aws.Config{Region: c.region, Credentials: aws.NewCredentialsCache(creds), HTTPClient: hosts}
			stream := reshard.Stream{Name: "s"}
			if c.arn != "" {
				stream = reshard.Stream{ARN: c.arn}
			}
			wc := DefaultConfig()
			wc.App, wc.Stream, wc.WorkerID = "app", stream, "w1"
			wc.Handler, wc.Log = &Handler{Argv: []string{"true"}, Env: os.Environ()}, slog.New(slog.DiscardHandler)
			w, err := NewWorker(wc, dynamodb.NewFromConfig(cfg), kinesis.NewFromConfig(cfg))
			if err != nil {
				t.Fatal(err)
			}
			f := newFetcher(w.kin, stream, "shardId-000000000000",
				leasecore.SequenceNumber{SequenceNumber: leasecore.TRIM_HORIZON}, w.cfg, leasecore.HashRange{},
				NewMetrics().shard("shardId-000000000000"), slog.New(slog.DiscardHandler))
			for range 2 {
				if _, err := f.next(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if got := strings.Join(hosts.order, " "); got != "GetShardIterator GetRecords GetRecords" {
				t.Fatalf("calls %q, want GetShardIterator then two GetRecords", got)
			}
			if hosts.sent["GetShardIterator"] != c.want || hosts.sent["GetRecords"] != c.want {
				t.Fatalf("GetShardIterator went to %s, GetRecords to %s; want both at %s",
					hosts.sent["GetShardIterator"], hosts.sent["GetRecords"], c.want)
			}
		})
	}
}

// A worker given the stream by its ARN names it in every read, and the
// local server reads by it: the records are handled.
func TestWorkerReadsByStreamARN(t *testing.T) {
	s := newStack(t, 1)
	d, err := s.kin.DescribeStreamSummary(context.Background(), &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(s.stream)})
	if err != nil {
		t.Fatal(err)
	}
	out := outFile(t)
	cfg := s.config(t, "w1", out)
	cfg.Stream = reshard.Stream{ARN: aws.ToString(d.StreamDescriptionSummary.StreamARN)}
	s.put(t, func(k string) string { return k }, keys("k", 5)...)
	start(t, s, cfg)
	eventually(t, 20*time.Second, "5 records handled", func() bool { return len(readHandled(t, out)) >= 5 })
}
