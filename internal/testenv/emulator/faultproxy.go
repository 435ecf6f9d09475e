package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// FaultProxy sits between a client and a local server and fails a share of
// the requests the way AWS and the network between fail under load. No
// emulator does that by itself.
//
// What it does to a request, in this order:
//
//  1. Partition (Partition/Heal): every request is held unanswered, as a
//     network partition does. One worker is cut off from a server by giving
//     it its own proxy and partitioning that proxy; the other workers reach
//     the server directly or through proxies of their own.
//  2. Delay (SetDelay): every request waits that long first.
//  3. Clock (SetClockOffset): a request signed too far from the server's
//     shifted clock is refused, as AWS refuses it.
//  4. The fault (NewFaultProxy, SetFault, SetRate, SetMatch, MatchShard): a
//     share rate of the requests that match (by operation, and by shard when
//     MatchShard is set) get the fault instead of the server's answer.
//
// A request held by Hang or by a partition stays held after the fault heals
// (SetRate(0), Heal): it is answered never, only closed when the client
// gives up on it or the test ends. That is what a real request lost in the
// network looks like to its client: only its own deadline ends the wait.
type FaultProxy struct {
	URL string

	mu          sync.Mutex
	rng         *rand.Rand
	rate        float64
	match       string
	shard       string
	fault       Fault
	delay       time.Duration
	partitioned bool
	iterators   map[string]bool // shard iterators handed out for the matched shard
	requests    map[string]int64
	// clockOffset shifts the server's clock when clockSet
	// (faultproxy_skew.go); refused counts signatures refused for it.
	clockOffset time.Duration
	clockSet    bool
	refused     map[string]int64
	closed      chan struct{}
	Injected    atomic.Int64 // requests answered with a fault (or held, or their answer dropped)
	Passed      atomic.Int64 // requests forwarded to the server and answered
	Conns       atomic.Int64 // client connections accepted
	Held        atomic.Int64 // requests held unanswered (Hang or partition), in total
}

// Fault is what the proxy does instead of forwarding and answering.
type Fault int

const (
	// Throttle answers HTTP 400 ProvisionedThroughputExceededException.
	// Nothing reaches the server.
	Throttle Fault = iota
	// ServerError answers HTTP 500 InternalServerError. Nothing reaches the
	// server.
	ServerError
	// Drop closes the connection without an answer (a reset). Nothing
	// reaches the server.
	Drop
	// Hang never answers: the request is held open until the client gives
	// up on it, even after the fault heals. Nothing reaches the server.
	Hang
	// LoseResponse forwards the request, so the server applies it (a write
	// is written), then closes the connection instead of answering: the
	// client cannot tell whether its write happened.
	LoseResponse
	// NotFound answers HTTP 400 ResourceNotFoundException, as Kinesis does
	// for a shard whose data has expired or a stream that is gone. Use it
	// with MatchShard to make one shard's reads fail.
	NotFound
	// TrimmedPosition answers a GetShardIterator at or after a sequence
	// number (AT_SEQUENCE_NUMBER, AFTER_SEQUENCE_NUMBER) with HTTP 400
	// InvalidArgumentException naming the StartingSequenceNumber, as Kinesis
	// refuses a position older than the shard's trim horizon
	// (faultproxy_trim.go). Other requests pass. Use it with MatchShard.
	TrimmedPosition
)

// NewFaultProxy forwards to target and fails rate (0..1) of the requests
// whose X-Amz-Target contains match (all requests when match is ""). The
// choice is driven by a seeded PRNG, so a failing run can be replayed.
func NewFaultProxy(tb interface {
	TB
	Cleanup(func())
}, target string, fault Fault, rate float64, match string, seed uint64) *FaultProxy {
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatalf("fault proxy target %q: %v", target, err)
	}
	p := &FaultProxy{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), rate: rate, match: match, fault: fault,
		requests: map[string]int64{}, iterators: map[string]bool{}, refused: map[string]int64{}, closed: make(chan struct{})}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(resp *http.Response) error {
		p.stampDate(resp.Header)
		return nil
	}
	// A server (or a proxy chained behind this one) that hangs up is a
	// broken connection for the client too, not an HTTP 502: that keeps
	// chained proxies' faults what they are.
	rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { hangUp(w) }
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.serve(rp, w, r)
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			p.Conns.Add(1)
		}
	}
	srv.Start()
	tb.Cleanup(func() {
		close(p.closed) // ends the held requests, which Close waits for
		srv.Close()
	})
	p.URL = srv.URL
	return p
}

func (p *FaultProxy) serve(rp *httputil.ReverseProxy, w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if p.isPartitioned() {
		p.hold(w, r)
		return
	}
	if d := p.getDelay(); d > 0 {
		time.Sleep(d)
	}
	if p.refuseSignature(w, r) {
		return
	}
	fault, fail, tagged := p.decide(r, body)
	if !fail {
		p.forward(rp, w, r, tagged)
		return
	}
	p.Injected.Add(1)
	p.stampDate(w.Header())
	switch fault {
	case Hang:
		p.hold(w, r)
	case LoseResponse:
		p.forward(rp, httptest.NewRecorder(), r, tagged) // applied, answer discarded
		hangUp(w)
	case Drop:
		hangUp(w)
	case NotFound:
		answer(w, http.StatusBadRequest, "ResourceNotFoundException", "Requested resource not found (injected by the test's fault proxy)")
	case TrimmedPosition:
		answer(w, http.StatusBadRequest, "InvalidArgumentException", trimmedPositionMessage(body))
	case ServerError:
		answer(w, http.StatusInternalServerError, "com.amazonaws.dynamodb.v20120810#InternalServerError", "injected by the test's fault proxy")
	default:
		answer(w, http.StatusBadRequest, "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
			"The level of configured provisioned throughput for the table was exceeded (injected by the test's fault proxy)")
	}
}

// forward passes the request on. For a request about the matched shard it
// remembers the shard iterators in the answer, so that the GetRecords calls
// made with them match too (their body names no shard).
func (p *FaultProxy) forward(rp *httputil.ReverseProxy, w http.ResponseWriter, r *http.Request, tagged bool) {
	if !tagged {
		rp.ServeHTTP(w, r)
		p.Passed.Add(1)
		return
	}
	rec := httptest.NewRecorder()
	rp.ServeHTTP(rec, r)
	var out struct{ ShardIterator, NextShardIterator string }
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	p.mu.Lock()
	for _, it := range []string{out.ShardIterator, out.NextShardIterator} {
		if it != "" {
			p.iterators[it] = true
		}
	}
	p.mu.Unlock()
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
	p.Passed.Add(1)
}

// hold keeps a request unanswered until its client goes away or the proxy
// closes.
func (p *FaultProxy) hold(w http.ResponseWriter, r *http.Request) {
	p.Held.Add(1)
	select {
	case <-r.Context().Done():
	case <-p.closed:
	}
	hangUp(w)
}

func hangUp(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			conn.Close()
			return
		}
	}
	w.WriteHeader(http.StatusBadGateway)
}

func answer(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"__type":%q,"message":%q}`, typ, msg)
}

// SetRate changes the failure rate while traffic flows. SetRate(0) heals
// the fault for new requests; requests already held stay held.
func (p *FaultProxy) SetRate(rate float64) {
	p.mu.Lock()
	p.rate = rate
	p.mu.Unlock()
}

// SetFault changes what a failed request gets.
func (p *FaultProxy) SetFault(f Fault) {
	p.mu.Lock()
	p.fault = f
	p.mu.Unlock()
}

// SetMatch changes which operations can fail: those whose X-Amz-Target
// contains match ("GetRecords", "Scan", "UpdateItem"), or all when "".
func (p *FaultProxy) SetMatch(match string) {
	p.mu.Lock()
	p.match = match
	p.mu.Unlock()
}

// MatchShard narrows the faults to requests about one shard: those whose
// body names it (GetShardIterator, ListShards from it) and GetRecords calls
// with an iterator the proxy saw handed out for it. "" removes the filter.
// Iterators are only recognised if MatchShard was set before they were
// handed out.
func (p *FaultProxy) MatchShard(shardID string) {
	p.mu.Lock()
	p.shard = shardID
	p.mu.Unlock()
}

// Partition cuts the proxy's clients off from the server: from now on every
// request is held unanswered, whatever the rate, as in a network partition.
func (p *FaultProxy) Partition() {
	p.mu.Lock()
	p.partitioned = true
	p.mu.Unlock()
}

// Heal ends a partition for new requests. Requests held during it stay
// unanswered.
func (p *FaultProxy) Heal() {
	p.mu.Lock()
	p.partitioned = false
	p.mu.Unlock()
}

func (p *FaultProxy) isPartitioned() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.partitioned
}

// SetDelay holds every request this long before answering it: a model of
// the network round trip to a real AWS region, which local servers lack.
func (p *FaultProxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

func (p *FaultProxy) getDelay() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.delay
}

// Requests returns how many requests of each operation (the part of
// X-Amz-Target after the dot) reached the proxy, failed or not.
func (p *FaultProxy) Requests() map[string]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int64, len(p.requests))
	for k, v := range p.requests {
		out[k] = v
	}
	return out
}

// Total is the number of requests that reached the proxy.
func (p *FaultProxy) Total() int64 {
	var n int64
	for _, v := range p.Requests() {
		n += v
	}
	return n
}

// decide counts the request and says whether it fails, with which fault,
// and whether it concerns the matched shard.
func (p *FaultProxy) decide(r *http.Request, body []byte) (f Fault, fail, tagged bool) {
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.LastIndex(target, ".")+1:]
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests[op]++
	if p.shard != "" {
		var in struct{ ShardId, ShardIterator, ExclusiveStartShardId string }
		_ = json.Unmarshal(body, &in)
		tagged = in.ShardId == p.shard || in.ExclusiveStartShardId == p.shard || (in.ShardIterator != "" && p.iterators[in.ShardIterator])
		if !tagged {
			return p.fault, false, false
		}
	}
	if p.match != "" && !strings.Contains(target, p.match) {
		return p.fault, false, tagged
	}
	if p.fault == TrimmedPosition && !atPosition(op, body) {
		return p.fault, false, tagged
	}
	return p.fault, p.rng.Float64() < p.rate, tagged
}
