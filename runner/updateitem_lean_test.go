package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"

	"github.com/kcltool/kcltool/internal/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

// wireLog records every request a client sends, body and headers, and the
// answer's status, through the client's own HTTP client.
type wireLog struct {
	mu   sync.Mutex
	rt   http.RoundTripper
	reqs []sentRequest
}

type sentRequest struct {
	url    string
	header http.Header
	body   []byte
}

func (w *wireLog) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	w.mu.Lock()
	w.reqs = append(w.reqs, sentRequest{url: r.URL.String(), header: r.Header.Clone(), body: body})
	w.mu.Unlock()
	return w.rt.RoundTrip(r)
}

func (w *wireLog) last(t *testing.T) sentRequest {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.reqs) == 0 {
		t.Fatal("nothing sent")
	}
	return w.reqs[len(w.reqs)-1]
}

// logLines records what the SDK (or the lean path) logs to the client's
// logger.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Logf(c logging.Classification, format string, v ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, string(c)+" "+fmt.Sprintf(format, v...))
	l.mu.Unlock()
}

func (l *logLines) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lines
	l.lines = nil
	return out
}

// ddbThrough is a DynamoDB client for url whose requests and logs are
// recorded, with the SDK's standard retryer (three attempts) as the
// client's own setting.
func ddbThrough(url string) (*dynamodb.Client, *wireLog, *logLines) {
	w := &wireLog{rt: http.DefaultTransport.(*http.Transport).Clone()}
	logs := &logLines{}
	c := dynamodb.NewFromConfig(emulator.Config(), func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(url)
		o.HTTPClient = &http.Client{Transport: w}
		o.Logger = logs
		o.ClientLogMode = aws.LogRetries // as cmd's factory sets it at --log-level debug
	})
	return c, w, logs
}

// oneAttempt is how leasecore's meteredAPI calls (noSDKRetries).
func oneAttempt(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }

type updateResult struct {
	out  *dynamodb.UpdateItemOutput
	err  error
	sent sentRequest
	logs []string
}

// updateBoth makes the same UpdateItem call through the SDK's client and
// the lean path, each after reset (which puts the table back as it was),
// and fails the test unless the lean path sent the call itself.
func updateBoth(t *testing.T, c *dynamodb.Client, w *wireLog, logs *logLines, ctx func() (context.Context, context.CancelFunc), in *dynamodb.UpdateItemInput, reset func()) (sdk, lean updateResult) {
	t.Helper()
	l, ok := leanWrites(c).(*leanDynamoDB)
	if !ok {
		t.Fatal("no lean path for the emulator's client")
	}
	call := func(api DynamoDBAPI) updateResult {
		reset()
		logs.take()
		cx, cancel := ctx()
		defer cancel()
		out, err := api.UpdateItem(cx, in, oneAttempt)
		var sent sentRequest
		w.mu.Lock()
		if len(w.reqs) > 0 {
			sent = w.reqs[len(w.reqs)-1]
		}
		w.reqs = nil
		w.mu.Unlock()
		return updateResult{out: out, err: err, sent: sent, logs: logs.take()}
	}
	sdk = call(c)
	lean = call(l)
	// It sends when the SDK sends, and sends itself.
	if n, want := l.sent.Load(), len(sdk.sent.url) > 0; (n == 1) != want || (lean.sent.url != "") != want {
		t.Fatalf("the lean path sent %d calls (%q), the SDK %q", n, lean.sent.url, sdk.sent.url)
	}
	return sdk, lean
}

func background() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 5*time.Second)
}

// sameJSON compares two request bodies: the same length and the same JSON
// once object keys are sorted (the SDK's serializer writes map entries in
// Go's map order, which differs between any two calls).
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	canon := func(p []byte) []byte {
		d := json.NewDecoder(bytes.NewReader(p))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("body %q: %v", p, err)
		}
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	return len(a) == len(b) && len(a) > 0 && bytes.Equal(canon(a), canon(b))
}

// sameRequest compares what was sent: body, URL and every header but the
// per-request ones (signature, date, invocation id) and the user agent.
func sameRequest(t *testing.T, what string, sdk, lean sentRequest) {
	t.Helper()
	if !sameJSON(t, sdk.body, lean.body) {
		t.Errorf("%s: bodies differ:\nsdk  %s\nlean %s", what, sdk.body, lean.body)
	}
	if sdk.url != lean.url {
		t.Errorf("%s: sdk sent to %s, lean to %s", what, sdk.url, lean.url)
	}
	for _, h := range []string{"Content-Type", "Content-Length", "X-Amz-Target", "Accept-Encoding", "Amz-Sdk-Request", "X-Amz-Security-Token"} {
		if a, b := sdk.header.Get(h), lean.header.Get(h); a != b {
			t.Errorf("%s: header %s: sdk %q, lean %q", what, h, a, b)
		}
	}
	for _, h := range []string{"Authorization", "X-Amz-Date"} {
		if lean.header.Get(h) == "" {
			t.Errorf("%s: lean request without %s", what, h)
		}
	}
	if a, b := strings.Split(sdk.header.Get("Authorization"), "Signature=")[0], strings.Split(lean.header.Get("Authorization"), "Signature=")[0]; a != b {
		t.Errorf("%s: signed differently:\nsdk  %s\nlean %s", what, a, b)
	}
}

// sameOutput compares two answers as the caller sees them.
func sameOutput(t *testing.T, what string, sdk, lean *dynamodb.UpdateItemOutput) {
	t.Helper()
	if sdk == nil || lean == nil {
		t.Fatalf("%s: sdk %v, lean %v", what, sdk, lean)
	}
	if !reflect.DeepEqual(sdk.Attributes, lean.Attributes) || !reflect.DeepEqual(sdk.ConsumedCapacity, lean.ConsumedCapacity) ||
		!reflect.DeepEqual(sdk.ItemCollectionMetrics, lean.ItemCollectionMetrics) {
		t.Errorf("%s: answers differ:\nsdk  %+v %+v\nlean %+v %+v", what, sdk.Attributes, sdk.ConsumedCapacity, lean.Attributes, lean.ConsumedCapacity)
	}
}

// errShape is how an error is built: the chain of types under the
// OperationError, the HTTP status, whether a request ID came with it, the
// API error's code, message and fault, the item a failed condition
// returned, and kcltool's classification of it.
func errShape(err error) string {
	var chain []string
	for e := err; e != nil; e = errors.Unwrap(e) {
		chain = append(chain, fmt.Sprintf("%T", e))
	}
	s := strings.Join(chain, " > ")
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		s += fmt.Sprintf(" status=%d requestID=%v", re.HTTPStatusCode(), re.RequestID != "")
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		s += fmt.Sprintf(" api=%s/%q/%v", api.ErrorCode(), api.ErrorMessage(), api.ErrorFault())
	}
	var cf *ddbtypes.ConditionalCheckFailedException
	if errors.As(err, &cf) {
		s += fmt.Sprintf(" item=%d attributes", len(cf.Item))
	}
	return s + " " + classes(err)
}

// TestLeanUpdateItemAgreesWithTheSDK replays the lease-table writes the
// coordinator makes (take, renew, checkpoint, child shards, release, and
// the checkpoint with every ReturnValues) against dynalite through the
// SDK's client and the lean path: the same request body, URL and signed
// headers, the same answer (attributes, consumed capacity). Then it fails
// both ways alike for every answer leasecore and internal/awserr tell
// apart: a failed condition (with and without the item returned), a table
// that is not there, throttling, a server error, a dropped connection, a
// server that never answers, nothing listening, a cancelled context; and a
// bad X-Amz-Crc32, which the SDK logs and does not fail on.
func TestLeanUpdateItemAgreesWithTheSDK(t *testing.T) {
	ddbURL := emulator.DynamoDBEndpoint(t)
	c, w, logs := ddbThrough(ddbURL)
	table := emulator.Name(t, "lean")
	emulator.CreateLeaseTable(t, c, table)
	ctx := context.Background()

	// The writes, as leasecore makes them, each with the item before it.
	rec := &inputLog{api: c}
	key := "shardId-000000000000"
	l := leasecore.Lease{LeaseKey: key, Checkpoint: leasecore.SequenceNumber{SequenceNumber: "TRIM_HORIZON"},
		ParentShardIDs: []string{"shardId-000000000009"}, StartingHashKey: "0", EndingHashKey: "340282366920938463463374607431768211455"}
	if _, err := leasecore.CreateLease(ctx, c, table, l); err != nil {
		t.Fatal(err)
	}
	l, _, err := leasecore.TakeLease(ctx, rec, table, l, "worker-1")
	if err != nil {
		t.Fatal(err)
	}
	if l, err = leasecore.RenewLease(ctx, rec, table, l, "worker-1"); err != nil {
		t.Fatal(err)
	}
	if l, err = leasecore.CheckpointLease(ctx, rec, table, l, leasecore.SequenceNumber{SequenceNumber: "49638387426114320000000000000000000000000000000999", SubSequenceNumber: 3}); err != nil {
		t.Fatal(err)
	}
	if err := leasecore.SetChildShardIDs(ctx, rec, table, key, []string{"shardId-000000000010", "shardId-000000000011"}); err != nil {
		t.Fatal(err)
	}
	if _, err = leasecore.ReleaseLease(ctx, rec, table, l, "worker-1"); err != nil {
		t.Fatal(err)
	}
	if len(rec.calls) != 5 {
		t.Fatalf("%d writes recorded, want 5", len(rec.calls))
	}
	putBack := func(item map[string]ddbtypes.AttributeValue) func() {
		return func() {
			if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
				t.Fatal(err)
			}
		}
	}
	names := []string{"take", "renew", "checkpoint", "child shards", "release"}
	for i, call := range rec.calls {
		sdk, lean := updateBoth(t, c, w, logs, background, call.in, putBack(call.before))
		if sdk.err != nil || lean.err != nil {
			t.Fatalf("%s: sdk %v, lean %v", names[i], sdk.err, lean.err)
		}
		sameRequest(t, names[i], sdk.sent, lean.sent)
		sameOutput(t, names[i], sdk.out, lean.out)
		if lean.out.ConsumedCapacity == nil {
			t.Errorf("%s: no consumed capacity", names[i])
		}
		if fmt.Sprint(sdk.logs) != fmt.Sprint(lean.logs) {
			t.Errorf("%s: logged differently:\nsdk  %q\nlean %q", names[i], sdk.logs, lean.logs)
		}
	}
	checkpoint := rec.calls[2]
	for _, rv := range []ddbtypes.ReturnValue{ddbtypes.ReturnValueAllNew, ddbtypes.ReturnValueAllOld, ddbtypes.ReturnValueUpdatedNew, ddbtypes.ReturnValueUpdatedOld, ddbtypes.ReturnValueNone} {
		in := *checkpoint.in
		in.ReturnValues = rv
		sdk, lean := updateBoth(t, c, w, logs, background, &in, putBack(checkpoint.before))
		if sdk.err != nil || lean.err != nil {
			t.Fatalf("%s: sdk %v, lean %v", rv, sdk.err, lean.err)
		}
		if rv != ddbtypes.ReturnValueNone && len(lean.out.Attributes) == 0 {
			t.Errorf("%s: no attributes returned", rv)
		}
		sameRequest(t, string(rv), sdk.sent, lean.sent)
		sameOutput(t, string(rv), sdk.out, lean.out)
	}

	// Failures.
	moved := map[string]ddbtypes.AttributeValue{}
	for k, v := range checkpoint.before {
		moved[k] = v
	}
	moved["leaseCounter"] = &ddbtypes.AttributeValueMemberN{Value: "99"}
	withItem := *checkpoint.in
	withItem.ReturnValuesOnConditionCheckFailure = ddbtypes.ReturnValuesOnConditionCheckFailureAllOld
	noTable := *checkpoint.in
	noTable.TableName = aws.String(table + "-missing")
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := "http://" + closed.Addr().String()
	closed.Close()
	fault := func(f emulator.Fault) string {
		return emulator.NewFaultProxy(t, ddbURL, f, 1, "UpdateItem", 1).URL
	}
	cancelled := func() (context.Context, context.CancelFunc) {
		cx, cancel := context.WithCancel(context.Background())
		cancel()
		return cx, cancel
	}
	shortly := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 300*time.Millisecond)
	}
	cases := []struct {
		name  string
		url   string
		ctx   func() (context.Context, context.CancelFunc)
		in    *dynamodb.UpdateItemInput
		reset map[string]ddbtypes.AttributeValue
	}{
		{"condition failed", ddbURL, background, checkpoint.in, moved},
		{"condition failed, item returned", ddbURL, background, &withItem, moved},
		{"condition failed, item returned (DynamoDB's answer)", itemOnFailure(t), background, &withItem, checkpoint.before},
		{"no table", ddbURL, background, &noTable, checkpoint.before},
		{"throttled", fault(emulator.Throttle), background, checkpoint.in, checkpoint.before},
		{"server error", fault(emulator.ServerError), background, checkpoint.in, checkpoint.before},
		{"dropped", fault(emulator.Drop), background, checkpoint.in, checkpoint.before},
		{"answer lost", fault(emulator.LoseResponse), background, checkpoint.in, checkpoint.before},
		{"never answered", fault(emulator.Hang), shortly, checkpoint.in, checkpoint.before},
		{"nothing listening", nobody, background, checkpoint.in, checkpoint.before},
		{"cancelled", ddbURL, cancelled, checkpoint.in, checkpoint.before},
	}
	for _, tc := range cases {
		fc, fw, flogs := ddbThrough(tc.url)
		sdk, lean := updateBoth(t, fc, fw, flogs, tc.ctx, tc.in, putBack(tc.reset))
		if sdk.err == nil || lean.err == nil {
			t.Errorf("%s: sdk %v, lean %v: want both to fail", tc.name, sdk.err, lean.err)
			continue
		}
		if a, b := errShape(sdk.err), errShape(lean.err); a != b {
			t.Errorf("%s: failed apart:\nsdk  %s\n     %v\nlean %s\n     %v", tc.name, a, sdk.err, b, lean.err)
		}
		var sc, lc *ddbtypes.ConditionalCheckFailedException
		if errors.As(sdk.err, &sc) && errors.As(lean.err, &lc) && !reflect.DeepEqual(sc.Item, lc.Item) {
			t.Errorf("%s: items differ:\nsdk  %v\nlean %v", tc.name, sc.Item, lc.Item)
		}
		if strings.Contains(tc.name, "DynamoDB's answer") && (lc == nil || len(lc.Item) != 4) {
			t.Errorf("%s: no item in %v", tc.name, lean.err)
		}
		if sdk.sent.body != nil && !sameJSON(t, sdk.sent.body, lean.sent.body) {
			t.Errorf("%s: bodies differ:\nsdk  %s\nlean %s", tc.name, sdk.sent.body, lean.sent.body)
		}
		if a, b := prefix(sdk.logs), prefix(lean.logs); a != b {
			t.Errorf("%s: logged apart:\nsdk  %q\nlean %q", tc.name, sdk.logs, lean.logs)
		}
		t.Logf("%s: %s; logged %q", tc.name, errShape(lean.err), prefix(lean.logs))
	}

	// A bad checksum: dynalite's answer with its X-Amz-Crc32 changed.
	for _, crc := range []string{"12345", "not-a-number"} {
		proxy, real := crcProxy(t, ddbURL, crc)
		fc, fw, flogs := ddbThrough(proxy)
		sdk, lean := updateBoth(t, fc, fw, flogs, background, checkpoint.in, putBack(checkpoint.before))
		if (sdk.err == nil) != (lean.err == nil) || (sdk.err != nil && errShape(sdk.err) != errShape(lean.err)) {
			t.Errorf("crc %s: sdk %v, lean %v", crc, sdk.err, lean.err)
		}
		if sdk.err == nil {
			sameOutput(t, "crc "+crc, sdk.out, lean.out)
		}
		// The warning ends with the CRC-32 computed of the answer, which
		// differs between the two answers; each must be the server's own.
		if crc == "12345" {
			for i, r := range []updateResult{sdk, lean} {
				if want := fmt.Sprintf("WARN failed to close HTTP response body, this may affect connection reuse: response did not match expected checksum, 12345, %s", (*real)[i]); fmt.Sprint(r.logs) != "["+want+"]" {
					t.Errorf("crc %s: path %d logged %q, want %q", crc, i, r.logs, want)
				}
			}
		} else if a, b := prefix(sdk.logs), prefix(lean.logs); a != b {
			t.Errorf("crc %s: logged apart:\nsdk  %q\nlean %q", crc, sdk.logs, lean.logs)
		}
		t.Logf("crc %s: err %v, logs %q", crc, lean.err, lean.logs)
	}
}

// itemOnFailure answers every call as DynamoDB answers a failed condition
// with ReturnValuesOnConditionCheckFailure ALL_OLD, which dynalite does not
// implement (it leaves the item out).
func itemOnFailure(t *testing.T) string {
	body := `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed",` +
		`"Item":{"leaseKey":{"S":"shardId-000000000000"},"leaseCounter":{"N":"99"},"leaseOwner":{"S":"worker-2"},"parentShardId":{"SS":["shardId-000000000009"]}}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amzn-Requestid", "REQ1")
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10))
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// prefix is what was logged, each line up to the error in it (whose text
// holds the request ID or the client's port): the retryer's debug lines.
func prefix(lines []string) string {
	out := ""
	for _, l := range lines {
		if i := strings.Index(l, " error "); i > 0 {
			l = l[:i]
		}
		out += l + "|"
	}
	return out
}

// inputLog records the UpdateItem inputs leasecore makes, with the item
// each found.
type inputLog struct {
	api   *dynamodb.Client
	calls []recordedWrite
}

type recordedWrite struct {
	in     *dynamodb.UpdateItemInput
	before map[string]ddbtypes.AttributeValue
}

func (r *inputLog) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	got, err := r.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: in.TableName, Key: in.Key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	r.calls = append(r.calls, recordedWrite{in: in, before: got.Item})
	return r.api.UpdateItem(ctx, in, opts...)
}

func (r *inputLog) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return r.api.GetItem(ctx, in, opts...)
}

// crcProxy forwards to target and replaces the X-Amz-Crc32 of every
// answer; real gets the server's own values (of the UpdateItem answers).
func crcProxy(t *testing.T, target, crc string) (string, *[]string) {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	real := &[]string{}
	var mu sync.Mutex
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(r *http.Response) error {
		v := r.Header.Get("X-Amz-Crc32")
		if v == "" {
			return errors.New("no X-Amz-Crc32 to replace")
		}
		mu.Lock()
		*real = append(*real, v)
		mu.Unlock()
		r.Header.Set("X-Amz-Crc32", crc)
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL, real
}

// TestLeanUpdateItemLeavesTheRestToTheSDK: setups and calls the lean path
// does not reproduce go to the SDK.
func TestLeanUpdateItemLeavesTheRestToTheSDK(t *testing.T) {
	base := dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:1"),
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")}
	if _, ok := leanWrites(dynamodb.New(base)).(*leanDynamoDB); !ok {
		t.Fatal("no lean path for a plain client")
	}
	for name, fn := range map[string]func(*dynamodb.Options){
		"legacy resolver":          func(o *dynamodb.Options) { o.EndpointResolver = dynamodb.EndpointResolverFromURL("http://127.0.0.1:1") },
		"account id required":      func(o *dynamodb.Options) { o.AccountIDEndpointMode = aws.AccountIDEndpointModeRequired },
		"endpoint discovery":       func(o *dynamodb.Options) { o.EndpointDiscovery.EnableEndpointDiscovery = aws.EndpointDiscoveryEnabled },
		"middleware added":         func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, nil) },
		"gzip":                     func(o *dynamodb.Options) { o.EnableAcceptEncodingGzip = true },
		"request logging":          func(o *dynamodb.Options) { o.ClientLogMode = aws.LogRequest },
		"anonymous":                func(o *dynamodb.Options) { o.Credentials = aws.AnonymousCredentials{} },
		"fips region":              func(o *dynamodb.Options) { o.Region = "fips-us-east-1" },
		"no clock skew correction": func(o *dynamodb.Options) { o.DisableClockSkewCorrection = true },
	} {
		if _, ok := leanWrites(dynamodb.New(base, fn)).(*leanDynamoDB); ok {
			t.Errorf("%s: lean path taken", name)
		}
	}

	// Per call: retries asked for, another region, a table ARN.
	c, w, _ := ddbThrough(emulator.DynamoDBEndpoint(t))
	l := leanWrites(c).(*leanDynamoDB)
	in := &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: map[string]ddbtypes.AttributeValue{"leaseKey": &ddbtypes.AttributeValueMemberS{Value: "k"}}}
	arn := *in
	arn.TableName = aws.String("arn:aws:dynamodb:us-east-1:123456789012:table/t")
	for name, call := range map[string]func() error{
		"sdk retries": func() error { _, err := l.UpdateItem(context.Background(), in); return err },
		"other region": func() error {
			_, err := l.UpdateItem(context.Background(), in, oneAttempt, func(o *dynamodb.Options) { o.Region = "eu-west-1" })
			return err
		},
		"table arn": func() error { _, err := l.UpdateItem(context.Background(), &arn, oneAttempt); return err },
	} {
		_ = call()
		if n := l.sent.Load(); n != 0 {
			t.Errorf("%s: sent by the lean path", name)
		}
		if len(w.reqs) == 0 {
			t.Errorf("%s: not sent at all", name)
		}
		w.reqs = nil
	}
}

// TestLeanUpdateItemAccountEndpoint: credentials that carry an account ID
// get the account's endpoint, as the SDK resolves it per call (no local
// server has it: the transport records where each request goes and
// refuses it).
func TestLeanUpdateItemAccountEndpoint(t *testing.T) {
	for _, mode := range []aws.AccountIDEndpointMode{aws.AccountIDEndpointModeUnset, aws.AccountIDEndpointModePreferred, aws.AccountIDEndpointModeDisabled} {
		var hosts []string
		c := dynamodb.New(dynamodb.Options{Region: "us-east-1", AccountIDEndpointMode: mode,
			Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "SECRET", AccountID: "123456789012"}, nil
			}),
			HTTPClient: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				hosts = append(hosts, r.URL.Host)
				return nil, errors.New("refused by the test")
			}),
		})
		l, ok := leanWrites(c).(*leanDynamoDB)
		if !ok {
			t.Fatalf("%q: no lean path", mode)
		}
		in := &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: map[string]ddbtypes.AttributeValue{"leaseKey": &ddbtypes.AttributeValueMemberS{Value: "k"}}}
		_, sdkErr := c.UpdateItem(context.Background(), in, oneAttempt)
		_, leanErr := l.UpdateItem(context.Background(), in, oneAttempt)
		if l.sent.Load() != 1 || len(hosts) != 2 || hosts[0] != hosts[1] {
			t.Errorf("%q: sdk and lean sent to %v (lean sent %d)", mode, hosts, l.sent.Load())
		}
		if a, b := errShape(sdkErr), errShape(leanErr); a != b {
			t.Errorf("%q: failed apart:\nsdk  %s\nlean %s", mode, a, b)
		}
		t.Logf("%q: %v", mode, hosts)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }

// TestLeanUpdateItemClockSkew: a server whose clock is ten minutes off
// turns the lean path off for good (the SDK corrects its signing time from
// the answers' Date, the lean path does not), and a signature it refuses
// for the clock is sent again by the SDK, which fails as it would alone.
func TestLeanUpdateItemClockSkew(t *testing.T) {
	ddbURL := emulator.DynamoDBEndpoint(t)
	ahead := func() string { return time.Now().Add(10 * time.Minute).UTC().Format(http.TimeFormat) }
	u, _ := url.Parse(ddbURL)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(r *http.Response) error { r.Header.Set("Date", ahead()); return nil }
	skewed := httptest.NewServer(rp)
	t.Cleanup(skewed.Close)
	c, w, _ := ddbThrough(skewed.URL)
	table := emulator.Name(t, "skew")
	emulator.CreateLeaseTable(t, c, table)
	w.reqs = nil
	l := leanWrites(c).(*leanDynamoDB)
	in := &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: map[string]ddbtypes.AttributeValue{"leaseKey": &ddbtypes.AttributeValueMemberS{Value: "k"}},
		UpdateExpression: aws.String("SET leaseCounter = :one"), ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":one": &ddbtypes.AttributeValueMemberN{Value: "1"}}}
	for i := 0; i < 2; i++ {
		if _, err := l.UpdateItem(context.Background(), in, oneAttempt); err != nil {
			t.Fatal(err)
		}
	}
	if l.sent.Load() != 1 || !l.off.Load() || len(w.reqs) != 2 {
		t.Fatalf("lean sent %d, off %v, %d requests: want the second call through the SDK", l.sent.Load(), l.off.Load(), len(w.reqs))
	}

	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		body := `{"__type":"com.amazon.coral.service#InvalidSignatureException","message":"Signature expired"}`
		w.Header().Set("Date", ahead())
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10))
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(refusing.Close)
	sdkC, _, _ := ddbThrough(refusing.URL)
	_, sdkErr := sdkC.UpdateItem(context.Background(), in, oneAttempt)
	leanC, lw, _ := ddbThrough(refusing.URL)
	ll := leanWrites(leanC).(*leanDynamoDB)
	_, leanErr := ll.UpdateItem(context.Background(), in, oneAttempt)
	if ll.sent.Load() != 1 || len(lw.reqs) != 2 {
		t.Errorf("lean sent %d, %d requests: want one by each path", ll.sent.Load(), len(lw.reqs))
	}
	if a, b := errShape(sdkErr), errShape(leanErr); a != b {
		t.Errorf("failed apart:\nsdk  %s\nlean %s", a, b)
	}
	t.Logf("refused: %s", errShape(leanErr))
}
