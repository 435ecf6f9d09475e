package emulator

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// kinesis-local answers SubscribeToShard with events only; the Go SDK
// expects an `initial-response` event first and fails without it
// (shared research, emulators.md, Gotchas 1). EFOProxy sits in front of
// kinesis-local and makes that event up: on a 200 answer to
// SubscribeToShard it writes the frame, then streams the server's events
// through as they come, flushing each read, so that the test harness (and
// never kcltool) covers the gap. Every other request passes unchanged.
type EFOProxy struct {
	URL string
	srv *http.Server

	mu sync.Mutex
	// ends holds ChildShards (JSON) to send on a shard's subscription, by
	// consumer ARN and shard id (EndShardWith).
	ends map[string]json.RawMessage
	// faults holds the error codes the next SubscribeToShard calls are
	// answered with (FailSubscriptions).
	faults []subscribeFault
}

type subscribeFault struct{ consumer, shard, code string }

// FailSubscriptions answers the next SubscribeToShard calls whose consumer
// ARN contains consumer (a stream's name will do) and whose shard is shard
// ("" for any) with codes, one call each, in order, without passing them
// to kinesis-local: HTTP 400 in the shape Kinesis's JSON protocol uses for
// errors (the x-amzn-ErrorType header, and __type and message in the
// body; the SDK reads the code from either). E.g. LimitExceededException
// or ResourceInUseException.
func (p *EFOProxy) FailSubscriptions(consumer, shard string, codes ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range codes {
		p.faults = append(p.faults, subscribeFault{consumer, shard, c})
	}
}

// SubscribeFaultsLeft counts the FailSubscriptions answers not given yet.
func (p *EFOProxy) SubscribeFaultsLeft() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.faults)
}

// faultFor takes the first fault queued for the subscription, if any.
func (p *EFOProxy) faultFor(consumerARN, shardID string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, f := range p.faults {
		if strings.Contains(consumerARN, f.consumer) && (f.shard == "" || f.shard == shardID) {
			p.faults = append(p.faults[:i:i], p.faults[i+1:]...)
			return f.code
		}
	}
	return ""
}

// writeError answers as Kinesis does when it refuses a call.
func writeError(w http.ResponseWriter, code, shardID string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(http.StatusBadRequest)
	b, _ := json.Marshal(map[string]string{"__type": code, "message": "injected by the test harness for shard " + shardID})
	_, _ = w.Write(b)
}

// EndShardWith makes the next event of a subscription of the consumer to
// the shard that brings no records carry children as its ChildShards, and
// ends that subscription there: the end of a closed shard as AWS sends it,
// which kinesis-local never does.
func (p *EFOProxy) EndShardWith(consumerARN, shardID string, children []types.ChildShard) {
	type hashRange struct{ StartingHashKey, EndingHashKey string }
	type child struct {
		ShardId      string
		ParentShards []string
		HashKeyRange hashRange
	}
	var cs []child
	for _, c := range children {
		cs = append(cs, child{ShardId: aws.ToString(c.ShardId), ParentShards: c.ParentShards,
			HashKeyRange: hashRange{aws.ToString(c.HashKeyRange.StartingHashKey), aws.ToString(c.HashKeyRange.EndingHashKey)}})
	}
	b, _ := json.Marshal(cs)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ends[consumerARN+"|"+shardID] = b
}

func (p *EFOProxy) endOf(consumerARN, shardID string) json.RawMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ends[consumerARN+"|"+shardID]
}

const subscribeTarget = "Kinesis_20131202.SubscribeToShard"

// NewEFOProxy starts a proxy forwarding to target.
func NewEFOProxy(target string) (*EFOProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	client := &http.Client{Transport: upstreamTransport()}
	target = strings.TrimSuffix(target, "/")
	p := &EFOProxy{URL: "http://" + l.Addr().String(), ends: map[string]json.RawMessage{}}
	p.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		if req.Header.Get("X-Amz-Target") == subscribeTarget {
			var named struct{ ConsumerARN, ShardId string }
			_ = json.Unmarshal(body, &named)
			if code := p.faultFor(named.ConsumerARN, named.ShardId); code != "" {
				writeError(w, code, named.ShardId)
				return
			}
		}
		out, err := http.NewRequestWithContext(req.Context(), req.Method, target+req.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out.Header = req.Header.Clone()
		out.Host = req.Host
		resp, err := client.Do(out)
		if err != nil {
			// Passed on as a dropped connection, as the other proxies do.
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
				}
			}
			return
		}
		defer resp.Body.Close()
		subscribe := req.Header.Get("X-Amz-Target") == subscribeTarget && resp.StatusCode == http.StatusOK
		for k, v := range resp.Header {
			if subscribe && strings.EqualFold(k, "Content-Length") {
				continue
			}
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		fl, _ := w.(http.Flusher)
		if subscribe {
			if err := writeInitialResponse(w); err != nil {
				return
			}
			var named struct{ ConsumerARN, ShardId string }
			_ = json.Unmarshal(body, &named)
			p.relayEvents(w, resp.Body, named.ConsumerARN, named.ShardId)
			return
		}
		buf := make([]byte, 64<<10)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return
				}
				if fl != nil && subscribe {
					fl.Flush()
				}
			}
			if err != nil {
				return
			}
		}
	})}
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

// relayEvents passes the server's event-stream messages on one by one,
// flushing each, and ends the shard when EndShardWith asks.
func (p *EFOProxy) relayEvents(w http.ResponseWriter, body io.Reader, consumerARN, shardID string) {
	fl, _ := w.(http.Flusher)
	dec, enc := eventstream.NewDecoder(), eventstream.NewEncoder()
	for {
		msg, err := dec.Decode(body, nil)
		if err != nil {
			return
		}
		end := false
		if children := p.endOf(consumerARN, shardID); children != nil {
			if t := msg.Headers.Get(":event-type"); t != nil && t.String() == "SubscribeToShardEvent" {
				var ev map[string]json.RawMessage
				if json.Unmarshal(msg.Payload, &ev) == nil && (len(ev["Records"]) == 0 || string(ev["Records"]) == "[]") {
					ev["ChildShards"] = children
					msg.Payload, _ = json.Marshal(ev)
					end = true
				}
			}
		}
		if enc.Encode(w, msg) != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
		if end {
			return
		}
	}
}

// Close stops the proxy and every stream through it.
func (p *EFOProxy) Close() { _ = p.srv.Close() }

// writeInitialResponse writes the event-stream frame the SDK reads first.
func writeInitialResponse(w http.ResponseWriter) error {
	var headers eventstream.Headers
	headers.Set(":message-type", eventstream.StringValue("event"))
	headers.Set(":event-type", eventstream.StringValue("initial-response"))
	headers.Set(":content-type", eventstream.StringValue("application/json"))
	if err := eventstream.NewEncoder().Encode(w, eventstream.Message{Headers: headers, Payload: []byte("{}")}); err != nil {
		return err
	}
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	return nil
}

var (
	efoMu    sync.Mutex
	efoProxy *EFOProxy
)

// KinesisEFOEndpoint returns the URL of this test binary's EFOProxy in
// front of kinesis-local, starting both when needed. It stops with the
// servers (StopAll).
func KinesisEFOEndpoint(tb TB) string {
	tb.Helper()
	target := KinesisEndpoint(tb)
	efoMu.Lock()
	defer efoMu.Unlock()
	if efoProxy == nil {
		p, err := NewEFOProxy(target)
		if err != nil {
			tb.Fatalf("emulator: EFO proxy: %v", err)
		}
		efoProxy = p
	}
	return efoProxy.URL
}

// EFOProxyOf returns this test binary's EFOProxy (KinesisEFOEndpoint's).
func EFOProxyOf(tb TB) *EFOProxy {
	tb.Helper()
	KinesisEFOEndpoint(tb)
	efoMu.Lock()
	defer efoMu.Unlock()
	return efoProxy
}

// KinesisEFO returns a client of kinesis-local through the EFOProxy:
// SubscribeToShard works with it.
func KinesisEFO(tb TB) *kinesis.Client {
	tb.Helper()
	ep := KinesisEFOEndpoint(tb)
	return kinesis.NewFromConfig(Config(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(ep) })
}

// EFOEnv is Env with Kinesis reached through the EFOProxy, for kcltool
// processes that read with enhanced fan-out. Later entries of an
// environment win, so it may be appended to Env's.
func EFOEnv(tb TB) []string {
	tb.Helper()
	env := Env(tb)
	for i, kv := range env {
		if strings.HasPrefix(kv, "AWS_ENDPOINT_URL_KINESIS=") {
			env[i] = "AWS_ENDPOINT_URL_KINESIS=" + KinesisEFOEndpoint(tb)
		}
	}
	return env
}

func stopEFOProxy() {
	efoMu.Lock()
	defer efoMu.Unlock()
	if efoProxy != nil {
		efoProxy.Close()
		efoProxy = nil
	}
}
