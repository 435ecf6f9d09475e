package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/schemas"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// leanKinesis sends the worker's GetRecords calls, its hottest path,
// without the SDK's per-call middleware (endpoint rules, request building
// through the schema serializer, user agent, checksums, retry bookkeeping,
// metrics and tracing spans): about a tenth of kcltool's own CPU on the
// MultiLang benchmark (docs/benchmarks.md). What it keeps of the SDK: the
// body is written by hand but signed by the SDK's own v4 signer with the
// client's credentials provider, sent to the endpoint the SDK's resolver
// gave at start, through the client's own HTTP client, and decoded by the
// client's protocol with the call's options applied (so by the fast
// decoder, with its fallback to the SDK's); errors are wrapped as the SDK
// wraps them, and TestLeanGetRecordsAgreesWithTheSDK holds every failure
// the fetcher tells apart to the SDK's classification. It never retries:
// the fetcher asks for no SDK retries anyway (noSDKRetries). Any input or
// client setup it does not know goes to the SDK (leanReads, GetRecords).
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
		return sendError(ctx, err)
	}
	sresp := &smithyhttp.Response{Response: resp}
	defer func() {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}()
	if err := o.Protocol.DeserializeResponse(ctx, getRecordsSchema, kinesis.TypeRegistry, sresp, out); err != nil {
		return wrapResponseError(resp, err)
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

// sendError wraps a failure to send a request (or to read its answer's
// head) as the SDK's transport handler (smithyhttp.ClientHandler) does.
func sendError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return &smithy.CanceledError{Err: ctx.Err()}
	}
	return &smithyhttp.RequestSendError{Err: err}
}
