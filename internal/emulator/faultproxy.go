package emulator

import (
	"fmt"
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
// the requests the way AWS does under load. No emulator throttles by itself.
type FaultProxy struct {
	URL string

	mu       sync.Mutex
	rng      *rand.Rand
	rate     float64
	match    string
	fault    Fault
	delay    time.Duration
	requests map[string]int64 // by operation
	Injected atomic.Int64     // requests answered with a fault
	Passed   atomic.Int64     // requests forwarded to the server
	Conns    atomic.Int64     // client connections accepted
}

// Fault is what the proxy answers instead of forwarding.
type Fault int

const (
	// Throttle answers HTTP 400 ProvisionedThroughputExceededException.
	Throttle Fault = iota
	// ServerError answers HTTP 500 InternalServerError.
	ServerError
	// Drop closes the connection without an answer.
	Drop
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
		requests: map[string]int64{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d := p.getDelay(); d > 0 {
			time.Sleep(d)
		}
		if p.shouldFail(r) {
			p.Injected.Add(1)
			p.answer(w)
			return
		}
		p.Passed.Add(1)
		rp.ServeHTTP(w, r)
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			p.Conns.Add(1)
		}
	}
	srv.Start()
	tb.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// SetRate changes the failure rate while traffic flows.
func (p *FaultProxy) SetRate(rate float64) {
	p.mu.Lock()
	p.rate = rate
	p.mu.Unlock()
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

func (p *FaultProxy) shouldFail(r *http.Request) bool {
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.LastIndex(target, ".")+1:]
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests[op]++
	if p.match != "" && !strings.Contains(target, p.match) {
		return false
	}
	return p.rng.Float64() < p.rate
}

func (p *FaultProxy) answer(w http.ResponseWriter) {
	switch p.fault {
	case Drop:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		w.WriteHeader(http.StatusBadGateway)
	case ServerError:
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"injected by the test's fault proxy"}`)
	default:
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded (injected by the test's fault proxy)"}`)
	}
}
