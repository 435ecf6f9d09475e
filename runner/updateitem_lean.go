package runner

import (
	"context"
	cryptorand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/schemas"
	"github.com/aws/smithy-go"
	smithyauth "github.com/aws/smithy-go/auth"
	"github.com/aws/smithy-go/logging"
	"github.com/aws/smithy-go/metrics"
	smithyrand "github.com/aws/smithy-go/rand"
	"github.com/aws/smithy-go/tracing"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// leanDynamoDB sends the worker's UpdateItem calls (renewals, checkpoints,
// takes, releases: every lease-table update the coordinator makes) without
// the SDK's per-call middleware stack, which was 12-15% of kcltool's own
// CPU on the MultiLang benchmark (docs/benchmarks.md). Nothing that
// decides what reaches the table or what the caller sees is its own:
//
//   - the body is written by the client's protocol (Options.Protocol, the
//     SDK's schema serializer) from the SDK's UpdateItem operation schema,
//     so there is no second serializer of a lease-table write;
//   - the answer is decoded by the same protocol with dynamodb.TypeRegistry,
//     typed errors included (ConditionalCheckFailedException with its Item);
//   - it is signed by the client's v4 signer with the client's credentials,
//     sent through the client's HTTP client to the endpoint the client's
//     resolver gives for the same parameters the SDK binds per call (the
//     account ID of the credentials included), resolved again whenever the
//     account ID or table changes;
//   - errors are wrapped as the SDK wraps them (ResponseError with the
//     request ID, RequestSendError, CanceledError, MaxAttemptsError when the
//     client's retryer calls the error retryable, OperationError), and the
//     retryer's attempt token is taken and released as the SDK does;
//   - the X-Amz-Crc32 of the answer is checked as the SDK checks it: a
//     mismatch is logged to the client's logger at warn, and, as in the SDK,
//     does not fail the call.
//
// It never retries, so it only takes calls for which the SDK would make one
// attempt (leasecore's meteredAPI asks for no SDK retries). Any other call,
// input or client setup it does not know goes to the SDK unchanged: a
// legacy endpoint resolver, account-ID endpoints required, endpoint
// discovery on, gzip, middleware or interceptors added, request logging,
// metrics or tracing providers, a table ARN, per-call options that change
// the endpoint or signing. A server clock more than a minute off turns it
// off for good: the SDK corrects its signing time from the answers' Date
// and this path does not. TestLeanUpdateItemAgreesWithTheSDK holds it to the
// SDK's bytes, answers and errors.
type leanDynamoDB struct {
	*dynamodb.Client
	opts dynamodb.Options
	ep   atomic.Pointer[leanEndpoint]
	off  atomic.Bool // the SDK for good (clock skew)
	// sent counts the calls it sent itself, for tests.
	sent atomic.Int64
}

// leanEndpoint is the endpoint resolved for one account ID and table name
// (the per-call endpoint parameters).
type leanEndpoint struct {
	account, table string
	url            url.URL
}

// updateItemSchema is the operation schema the SDK's middleware passes its
// protocol for UpdateItem (addOperationUpdateItemMiddlewares).
var updateItemSchema = smithy.NewOperationSchema(schemas.UpdateItem, schemas.UpdateItemInput, schemas.UpdateItemOutput)

// skewLimit is the clock difference to the server beyond which the SDK's
// own skew correction is needed (SigV4 allows five minutes).
const skewLimit = time.Minute

// leanWrites returns ddb with the lean UpdateItem path when ddb is the
// SDK's client with a setup the path knows, and ddb as it is otherwise.
func leanWrites(ddb DynamoDBAPI) DynamoDBAPI {
	c, ok := ddb.(*dynamodb.Client)
	if !ok {
		return ddb
	}
	o := c.Options()
	if !leanSetup(&o) || os.Getenv("AWS_LAMBDA_FUNCTION_NAME") != "" { // Lambda: the SDK adds a trace header
		return ddb
	}
	if o.AccountIDEndpointMode == aws.AccountIDEndpointModeRequired ||
		o.EndpointDiscovery.EnableEndpointDiscovery == aws.EndpointDiscoveryEnabled {
		return ddb
	}
	// The SDK's default auth: SigV4 as dynamodb in the client's region.
	auth, err := o.AuthSchemeResolver.ResolveAuthSchemes(context.Background(), &dynamodb.AuthResolverParameters{Operation: "UpdateItem", Region: o.Region})
	// (The client's resolver adds the anonymous scheme after it, which
	// the SDK picks only without credentials.)
	if err != nil || len(auth) == 0 || auth[0].SchemeID != smithyauth.SchemeIDSigV4 || len(o.AuthSchemes) != 1 || len(o.AuthSchemePreference) > 0 ||
		o.AuthSchemes[0].SchemeID() != smithyauth.SchemeIDSigV4 || fmt.Sprintf("%T", o.AuthSchemes[0].Signer()) != "*smithy.V4SignerAdapter" {
		return ddb
	}
	props := auth[0].SignerProperties
	name, _ := smithyhttp.GetSigV4SigningName(&props)
	region, _ := smithyhttp.GetSigV4SigningRegion(&props)
	noEscape, _ := smithyhttp.GetDisableDoubleEncoding(&props)
	if name != "dynamodb" || region != o.Region || noEscape {
		return ddb
	}
	l := &leanDynamoDB{Client: c, opts: o}
	// The endpoint without an account ID must resolve now, as it did for
	// the SDK's first call.
	if l.endpoint(context.Background(), &o, "", "") == nil {
		return ddb
	}
	return l
}

// leanSetup reports options this path reproduces the SDK's behaviour for.
func leanSetup(o *dynamodb.Options) bool {
	_, nopMeter := o.MeterProvider.(metrics.NopMeterProvider)
	_, nopTracer := o.TracerProvider.(*tracing.NopTracerProvider)
	if _, ok := o.TracerProvider.(tracing.NopTracerProvider); ok {
		nopTracer = true
	}
	_, anonymous := o.Credentials.(aws.AnonymousCredentials)
	i := &o.Interceptors
	return o.EndpointResolver == nil && o.EndpointResolverV2 != nil && o.HTTPClient != nil && o.Logger != nil && o.Credentials != nil && !anonymous &&
		o.Region != "" && !strings.Contains(o.Region, "fips") && o.Protocol != nil && o.Retryer != nil && o.HTTPSignerV4 != nil &&
		o.AuthSchemeResolver != nil && len(o.APIOptions) == 0 && nopMeter && nopTracer &&
		// Retries are logged the SDK's way below; request, response and
		// signing logs are the SDK's.
		o.ClientLogMode&^(aws.LogRetries|aws.LogDeprecatedUsage) == 0 &&
		!o.EnableAcceptEncodingGzip && !o.EndpointOptions.DisableHTTPS && !o.DisableClockSkewCorrection &&
		len(i.BeforeExecution)+len(i.BeforeSerialization)+len(i.AfterSerialization)+len(i.BeforeRetryLoop)+len(i.BeforeAttempt)+
			len(i.BeforeSigning)+len(i.AfterSigning)+len(i.BeforeTransmit)+len(i.AfterTransmit)+len(i.BeforeDeserialization)+
			len(i.AfterDeserialization)+len(i.AfterAttempt)+len(i.AfterExecution) == 0
}

// sameEndpointSetup reports per-call options (after the call's option
// functions) that resolve, authenticate and sign as the client's do.
func (l *leanDynamoDB) sameEndpointSetup(o *dynamodb.Options) bool {
	c := &l.opts
	return o.Region == c.Region && aws.ToString(o.BaseEndpoint) == aws.ToString(c.BaseEndpoint) &&
		o.EndpointOptions.UseDualStackEndpoint == c.EndpointOptions.UseDualStackEndpoint &&
		o.EndpointOptions.UseFIPSEndpoint == c.EndpointOptions.UseFIPSEndpoint &&
		o.EndpointOptions.ResolvedRegion == c.EndpointOptions.ResolvedRegion &&
		o.AccountIDEndpointMode == c.AccountIDEndpointMode && o.EndpointDiscovery == c.EndpointDiscovery &&
		len(o.AuthSchemes) == 1 && len(o.AuthSchemePreference) == len(c.AuthSchemePreference) &&
		sameValue(o.EndpointResolverV2, c.EndpointResolverV2) && sameValue(o.AuthSchemeResolver, c.AuthSchemeResolver) &&
		sameValue(o.AuthSchemes[0], c.AuthSchemes[0]) && sameValue(o.HTTPSignerV4, c.HTTPSignerV4)
}

// sameValue compares two interface values without panicking on
// uncomparable dynamic types (those count as different).
func sameValue(a, b any) bool {
	t := reflect.TypeOf(a)
	if t != reflect.TypeOf(b) {
		return false
	}
	return t == nil || (t.Comparable() && a == b)
}

// endpoint is the URL the SDK's resolver gives for the call's endpoint
// parameters (bindEndpointParams: the client's region, dual-stack, FIPS,
// base endpoint and account-ID mode, the credentials' account ID, the
// table as ResourceArn), resolved once per account and table; nil when it
// does not resolve to a plain URL (the SDK then makes the call).
func (l *leanDynamoDB) endpoint(ctx context.Context, o *dynamodb.Options, account, table string) *leanEndpoint {
	if ep := l.ep.Load(); ep != nil && ep.account == account && ep.table == table {
		return ep
	}
	p := dynamodb.EndpointParameters{
		Region:                aws.String(o.Region),
		UseDualStack:          aws.Bool(o.EndpointOptions.UseDualStackEndpoint == aws.DualStackEndpointStateEnabled),
		UseFIPS:               aws.Bool(o.EndpointOptions.UseFIPSEndpoint == aws.FIPSEndpointStateEnabled),
		Endpoint:              o.BaseEndpoint,
		AccountIdEndpointMode: aws.String(string(o.AccountIDEndpointMode)),
	}
	if account != "" {
		p.AccountId = aws.String(account)
	}
	if table != "" {
		p.ResourceArn = aws.String(table)
	}
	res, err := o.EndpointResolverV2.ResolveEndpoint(ctx, p)
	if err != nil || len(res.Headers) > 0 || res.URI.Host == "" || smithyhttp.ValidateEndpointHost(res.URI.Host) != nil {
		return nil
	}
	if auth, _ := smithyauth.GetAuthOptions(&res.Properties); len(auth) > 0 {
		return nil // the endpoint overrides the signing: the SDK's business
	}
	ep := &leanEndpoint{account: account, table: table, url: res.URI}
	l.ep.Store(ep)
	return ep
}

// UpdateItem implements DynamoDBAPI.
func (l *leanDynamoDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	// The SDK's validation fails these without a request; a table ARN
	// binds an endpoint parameter of its own.
	if l.off.Load() || in == nil || in.TableName == nil || in.Key == nil || strings.HasPrefix(*in.TableName, "arn:") {
		return l.Client.UpdateItem(ctx, in, optFns...)
	}
	// As invokeOperation: a copy of the client's options, the call's
	// option functions applied to it.
	o := l.opts.Copy()
	for _, fn := range optFns {
		fn(&o)
	}
	if !l.oneAttempt(&o) || !leanSetup(&o) || !l.sameEndpointSetup(&o) {
		return l.Client.UpdateItem(ctx, in, optFns...)
	}
	// As the retry middleware's attempt: a cancelled context ends the call
	// before anything is sent.
	if err := ctx.Err(); err != nil {
		return nil, &smithy.OperationError{ServiceID: dynamodb.ServiceID, OperationName: "UpdateItem", Err: err}
	}
	// Nothing is sent before the request is signed: any failure up to there
	// leaves the call to the SDK, which fails (or not) its own way.
	creds, err := o.Credentials.Retrieve(ctx)
	if err != nil {
		return l.Client.UpdateItem(ctx, in, optFns...)
	}
	account := ""
	if o.AccountIDEndpointMode != aws.AccountIDEndpointModeDisabled {
		account = creds.AccountID
	}
	ep := l.endpoint(ctx, &o, account, *in.TableName)
	if ep == nil {
		return l.Client.UpdateItem(ctx, in, optFns...)
	}
	req, ok := l.request(ctx, &o, ep, in, creds)
	if !ok {
		return l.Client.UpdateItem(ctx, in, optFns...)
	}
	release, err := attemptToken(ctx, o.Retryer)
	if err != nil {
		return l.Client.UpdateItem(ctx, in, optFns...)
	}
	l.sent.Add(1)
	out, refused, err := l.send(ctx, &o, req)
	if refused {
		// A signature refused for the clock: nothing was written. The SDK
		// learns the server's time from this answer and signs with it.
		_ = release(err)
		return l.Client.UpdateItem(ctx, in, optFns...)
	}
	_ = release(err)
	if err != nil {
		if o.Retryer.IsErrorRetryable(err) {
			if o.ClientLogMode.IsRetries() {
				o.Logger.Logf(logging.Debug, "max retry attempts exhausted, max %d", 1)
			}
			err = &retry.MaxAttemptsError{Attempt: 1, Err: err}
		} else if o.ClientLogMode.IsRetries() {
			o.Logger.Logf(logging.Debug, "request failed with unretryable error %v", err)
		}
		return nil, &smithy.OperationError{ServiceID: dynamodb.ServiceID, OperationName: "UpdateItem", Err: err}
	}
	return out, nil
}

// oneAttempt reports a call the SDK would make once: the retryer the SDK
// would use for it (finalizeOperationRetryMaxAttempts) allows one attempt.
func (l *leanDynamoDB) oneAttempt(o *dynamodb.Options) bool {
	if n := o.RetryMaxAttempts; n != 0 && n != l.opts.RetryMaxAttempts {
		return n == 1
	}
	return o.Retryer.MaxAttempts() == 1
}

// attemptToken takes the retryer's token for a first attempt, as the retry
// middleware does (a success pays its refund to the retry quota).
func attemptToken(ctx context.Context, r aws.Retryer) (func(error) error, error) {
	if v2, ok := r.(aws.RetryerV2); ok {
		return v2.GetAttemptToken(ctx)
	}
	return r.GetInitialToken(), nil
}

// request builds and signs the request as the SDK's serialize and finalize
// steps do.
func (l *leanDynamoDB) request(ctx context.Context, o *dynamodb.Options, ep *leanEndpoint, in *dynamodb.UpdateItemInput, creds aws.Credentials) (*http.Request, bool) {
	sreq := smithyhttp.NewStackRequest().(*smithyhttp.Request)
	if err := o.Protocol.SerializeRequest(ctx, updateItemSchema, in, sreq); err != nil {
		return nil, false
	}
	// resolveEndpointV2Middleware
	u := sreq.URL
	u.Scheme, u.Host = ep.url.Scheme, ep.url.Host
	rawPath := ep.url.RawPath
	if rawPath == "" && u.RawPath != "" {
		rawPath = ep.url.Path
	}
	u.Path = smithyhttp.JoinPath(ep.url.Path, u.Path)
	u.RawPath = smithyhttp.JoinPath(rawPath, u.RawPath)
	// DisableAcceptEncodingGzip: the X-Amz-Crc32 is of the bytes sent.
	sreq.Header.Set("Accept-Encoding", "identity")
	sreq.Header.Set("User-Agent", "aws-sdk-go-v2 kcltool-updateitem")
	sreq.Header.Set("Amz-Sdk-Request", "attempt=1; max=1")
	if id, err := smithyrand.NewUUID(cryptorand.Reader).GetUUID(); err == nil { // ClientRequestID
		sreq.Header.Set("Amz-Sdk-Invocation-Id", id)
	}
	body, ok := sreq.GetStream().(io.ReadSeeker)
	if !ok {
		return nil, false
	}
	payload, err := io.ReadAll(body)
	if err != nil {
		return nil, false
	}
	if _, err := body.Seek(0, io.SeekStart); err != nil {
		return nil, false
	}
	sum := sha256.Sum256(payload)
	req := sreq.Build(ctx)
	if err := o.HTTPSignerV4.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "dynamodb", o.Region, time.Now()); err != nil {
		return nil, false
	}
	return req, true
}

// send sends req once and decodes the answer as the SDK's deserialize step
// does. refused is a signature refused by a server whose clock is off by
// more than skewLimit: the path is then off for good.
func (l *leanDynamoDB) send(ctx context.Context, o *dynamodb.Options, req *http.Request) (_ *dynamodb.UpdateItemOutput, refused bool, _ error) {
	resp, err := o.HTTPClient.Do(req)
	if req.Body != nil {
		_ = req.Body.Close()
	}
	if err != nil {
		// smithyhttp.ClientHandler: an empty response goes with the error.
		resp = &http.Response{Header: http.Header{}, Body: http.NoBody}
		return nil, false, wrapResponseError(resp, sendError(ctx, err))
	}
	answered := time.Now()
	sresp := &smithyhttp.Response{Response: resp}
	var check *crcCheck
	if !o.DisableValidateResponseChecksum {
		// The SDK's DynamoDB:ResponseChecksumValidation, which checks when
		// the body is closed: a header that does not parse fails the call.
		expect, err := parseCRC32(resp.Header.Get("X-Amz-Crc32"))
		if err != nil {
			closeBody(o, resp.Body)
			return nil, false, wrapResponseError(resp, &smithy.DeserializationError{Err: err})
		}
		check = &crcCheck{r: resp.Body, expect: expect}
		resp.Body = check
	}
	out := &dynamodb.UpdateItemOutput{}
	err = o.Protocol.DeserializeResponse(ctx, updateItemSchema, dynamodb.TypeRegistry, sresp, out)
	closeBody(o, resp.Body)
	if skew, ok := serverSkew(resp, answered); ok && (skew > skewLimit || skew < -skewLimit) {
		l.off.Store(true)
		if err != nil && clockCode(err) {
			return nil, true, err
		}
	}
	if err != nil {
		return nil, false, wrapResponseError(resp, err)
	}
	if id := requestID(resp.Header); id != "" {
		awsmiddleware.SetRequestIDMetadata(&out.ResultMetadata, id)
	}
	return out, false, nil
}

// wrapResponseError wraps err as the SDK's ResponseErrorWrapper does: the
// status code and request ID go with the error.
func wrapResponseError(resp *http.Response, err error) error {
	return &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: resp}, Err: err},
		RequestID:     requestID(resp.Header),
	}
}

// requestID is the request ID as awsmiddleware.RequestIDRetriever reads it.
func requestID(h http.Header) string {
	if v := h.Get("X-Amzn-Requestid"); v != "" {
		return v
	}
	return h.Get("X-Amz-RequestId")
}

// closeBody drains and closes the body as smithyhttp.CloseResponseBody
// does, a failed checksum logged at warn, not returned.
func closeBody(o *dynamodb.Options, body io.ReadCloser) {
	if _, err := io.Copy(io.Discard, body); err != nil {
		o.Logger.Logf(logging.Warn, "failed to discard remaining HTTP response body, this may affect connection reuse: %v", err)
	}
	if err := body.Close(); err != nil {
		o.Logger.Logf(logging.Warn, "failed to close HTTP response body, this may affect connection reuse: %v", err)
	}
}

// parseCRC32 reads X-Amz-Crc32; the SDK expects 0 when there is none.
func parseCRC32(v string) (uint32, error) {
	if v == "" {
		return 0, nil
	}
	c, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("unable to parse checksum header %v, %w", v, err)
	}
	return uint32(c), nil
}

// crcCheck is the SDK's crc32ChecksumValidate: the CRC-32 of the bytes
// read, compared on Close.
type crcCheck struct {
	r      io.ReadCloser
	expect uint32
	sum    uint32
}

func (c *crcCheck) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.sum = crc32.Update(c.sum, crc32.IEEETable, p[:n])
	return n, err
}

func (c *crcCheck) Close() error {
	if c.sum != c.expect {
		_ = c.r.Close()
		return fmt.Errorf("response did not match expected checksum, %d, %d", c.expect, c.sum)
	}
	return c.r.Close()
}

// serverSkew is the server's clock minus ours as the SDK's
// RecordResponseTiming computes it.
func serverSkew(resp *http.Response, answered time.Time) (time.Duration, bool) {
	d := resp.Header.Get("Date")
	if d == "" || resp.Header.Get("Age") != "" {
		return 0, false
	}
	t, err := smithyhttp.ParseTime(d)
	if err != nil {
		return 0, false
	}
	return t.Sub(answered), true
}

// clockCode reports the error codes the SDK's retryer looks at for clock
// skew (retry.wrapAsClockSkew).
func clockCode(err error) bool {
	var v interface{ ErrorCode() string }
	if !errors.As(err, &v) {
		return false
	}
	switch v.ErrorCode() {
	case "InvalidSignatureException", "SignatureDoesNotMatch", "AuthFailure", "RequestTimeTooSkewed", "AccessDeniedException":
		return true
	}
	return false
}
