package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/schemas"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// benchGetRecords makes one GetRecords call per iteration, as the fetcher
// does (noSDKRetries, fastGetRecords), against a server that answers every
// call with the same 1000-record page (the page
// BenchmarkDecodeGetRecords decodes alone) of 100-byte records. The server's
// own CPU is in the figure too, the same for both paths.
func benchGetRecords(b *testing.B, path string) {
	body := getRecordsBody(1000, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	var kin KinesisAPI = kinesis.New(kinesis.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")),
	})
	switch path {
	case "http":
		// The floor: the same request and answer over the same
		// transport, the answer read into a buffer and not decoded.
		kin = rawHTTP{url: srv.URL}
	case "lean":
		kin = leanReads(kin)
		if _, ok := kin.(*leanKinesis); !ok {
			b.Fatal("no lean path")
		}
	}
	it := "AAAAAAAAAAGmJcHkTTsDyN3UsqpbZgT7bJzA9nvPO2eyShcq8Qf3vQ5tXqAbUcN6cpJ9g6xP"
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	self0, _ := rusage(b)
	for b.Loop() {
		fast := fastPage{shardID: "shardId-000000000000"}
		if _, err := kin.GetRecords(context.Background(), &kinesis.GetRecordsInput{ShardIterator: &it, Limit: aws.Int32(1000)},
			noSDKRetries, fastGetRecords(&fast)); err != nil {
			b.Fatal(err)
		}
		if path != "http" && (!fast.ok || len(fast.records) != 1000) {
			b.Fatal("not decoded")
		}
	}
	self1, _ := rusage(b)
	// The process's CPU, client and server: what wall time on a shared
	// machine does not show.
	b.ReportMetric(float64((self1-self0).Microseconds())/float64(b.N), "cpu-µs/op")
}

func BenchmarkGetRecordsCallSDK(b *testing.B)  { benchGetRecords(b, "sdk") }
func BenchmarkGetRecordsCallLean(b *testing.B) { benchGetRecords(b, "lean") }
func BenchmarkGetRecordsCallHTTP(b *testing.B) { benchGetRecords(b, "http") }

type rawHTTP struct {
	KinesisAPI
	url string
}

func (r rawHTTP) GetRecords(ctx context.Context, in *kinesis.GetRecordsInput, _ ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error) {
	resp, err := http.Post(r.url, "application/x-amz-json-1.1", bytes.NewReader(getRecordsRequest(in)))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	buf := bytes.NewBuffer(make([]byte, 0, resp.ContentLength+bytes.MinRead))
	_, err = buf.ReadFrom(resp.Body)
	return &kinesis.GetRecordsOutput{}, err
}

// leanKinesis is the benchmarks' comparator, not used by kcltool: a
// GetRecords call without the SDK's per-call middleware (endpoint rules,
// request building through the schema serializer, user agent, checksums,
// retry bookkeeping, metrics and tracing spans). The body is written by
// hand, signed by the SDK's own v4 signer with the client's credentials
// provider, sent to the endpoint the SDK's resolver gave once, through the
// client's own HTTP client, and decoded by the client's protocol with the
// call's options applied (so by the fast decoder, with its fallback); error
// answers are wrapped as the SDK wraps them. It spent about 6% less CPU
// per call than the SDK's call: too little for a second read path to maintain
// (docs/benchmarks.md, the MultiLang section). Its error mapping was not
// tested against the SDK's.
type leanKinesis struct {
	*kinesis.Client
	opts   kinesis.Options
	url    string
	region string
	signer *v4.Signer
}

// getRecordsSchema is the operation schema the SDK's middleware passes its
// protocol for GetRecords.
var getRecordsSchema = smithy.NewOperationSchema(schemas.GetRecords, schemas.GetRecordsInput, schemas.GetRecordsOutput)

// leanReads returns kin with the lean GetRecords path when kin is the SDK's
// client and its endpoint resolves now, and kin as it is otherwise.
func leanReads(kin KinesisAPI) KinesisAPI {
	c, ok := kin.(*kinesis.Client)
	if !ok {
		return kin
	}
	o := c.Options()
	// A legacy (v1) endpoint resolver or an unusual setup: leave it to the SDK.
	if o.EndpointResolver != nil || o.EndpointResolverV2 == nil || o.HTTPClient == nil ||
		o.Credentials == nil || o.Region == "" || o.Protocol == nil {
		return kin
	}
	ep, err := o.EndpointResolverV2.ResolveEndpoint(context.Background(), kinesis.EndpointParameters{
		Region:        aws.String(o.Region),
		UseDualStack:  aws.Bool(o.EndpointOptions.UseDualStackEndpoint == aws.DualStackEndpointStateEnabled),
		UseFIPS:       aws.Bool(o.EndpointOptions.UseFIPSEndpoint == aws.FIPSEndpointStateEnabled),
		Endpoint:      o.BaseEndpoint,
		OperationType: aws.String("data"),
	})
	if err != nil {
		return kin
	}
	return &leanKinesis{Client: c, opts: o, url: ep.URI.String(), region: o.Region, signer: v4.NewSigner()}
}

// GetRecords implements KinesisAPI.
func (l *leanKinesis) GetRecords(ctx context.Context, in *kinesis.GetRecordsInput, optFns ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error) {
	if in == nil || in.ShardIterator == nil || in.StreamARN != nil || in.StreamId != nil || in.DryRun != nil ||
		!plainASCII(*in.ShardIterator) {
		return l.Client.GetRecords(ctx, in, optFns...)
	}
	o := l.opts
	for _, fn := range optFns {
		fn(&o)
	}
	out := &kinesis.GetRecordsOutput{}
	if err := l.call(ctx, &o, in, out); err != nil {
		return nil, &smithy.OperationError{ServiceID: kinesis.ServiceID, OperationName: "GetRecords", Err: err}
	}
	return out, nil
}

func (l *leanKinesis) call(ctx context.Context, o *kinesis.Options, in *kinesis.GetRecordsInput, out *kinesis.GetRecordsOutput) error {
	body := getRecordsRequest(in)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.url, bytes.NewReader(body))
	if err != nil {
		return &smithy.SerializationError{Err: err}
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("X-Amz-Target", "Kinesis_20131202.GetRecords")
	req.Header.Set("User-Agent", "aws-sdk-go-v2 kcltool-getrecords")
	creds, err := o.Credentials.Retrieve(ctx)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	if err := l.signer.SignHTTP(ctx, creds, req, hash, "kinesis", l.region, time.Now().UTC()); err != nil {
		return err
	}
	resp, err := o.HTTPClient.Do(req)
	if err != nil {
		// As the SDK's transport handler (smithyhttp.ClientHandler).
		err = &smithyhttp.RequestSendError{Err: err}
		if ctx.Err() != nil {
			err = &smithy.CanceledError{Err: ctx.Err()}
		}
		return err
	}
	sresp := &smithyhttp.Response{Response: resp}
	defer func() {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}()
	if err := o.Protocol.DeserializeResponse(ctx, getRecordsSchema, kinesis.TypeRegistry, sresp, out); err != nil {
		// As the SDK's ResponseErrorWrapper: the status code and request ID
		// go with the error.
		return &awshttp.ResponseError{
			ResponseError: &smithyhttp.ResponseError{Response: sresp, Err: err},
			RequestID:     resp.Header.Get("X-Amzn-Requestid"),
		}
	}
	return nil
}

// plainASCII reports text that strconv.Quote writes as JSON does: printable
// ASCII. Shard iterators are base64; anything else goes through the SDK.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// getRecordsRequest is the JSON body of a GetRecords request (its iterator
// is plainASCII).
func getRecordsRequest(in *kinesis.GetRecordsInput) []byte {
	b := make([]byte, 0, len(*in.ShardIterator)+48)
	b = append(b, '{')
	if in.Limit != nil {
		b = append(b, `"Limit":`...)
		b = strconv.AppendInt(b, int64(*in.Limit), 10)
		b = append(b, ',')
	}
	b = append(b, `"ShardIterator":`...)
	b = strconv.AppendQuote(b, *in.ShardIterator)
	return append(b, '}')
}
