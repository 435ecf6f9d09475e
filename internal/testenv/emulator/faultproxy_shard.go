package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
)

// ShardFaultProxy sits in front of the local Kinesis server and fails
// single shards rather than a share of all requests: the stream edges that
// kinesis-local cannot produce by itself (a shard trimmed away, a shard
// listing that fails while a shard ends, a last page without ChildShards).
type ShardFaultProxy struct {
	URL string

	mu            sync.Mutex
	gone          map[string]bool   // shard ids answered with ResourceNotFoundException
	iterShard     map[string]string // shard iterator -> shard id, learned from answers
	listError     string
	stripChildren bool
	// Injected counts answers made up by the proxy, by operation.
	injected map[string]int64
	Stripped atomic.Int64 // GetRecords answers whose ChildShards were removed
}

// NewShardFaultProxy forwards to the Kinesis server at target.
func NewShardFaultProxy(tb interface {
	TB
	Cleanup(func())
}, target string) *ShardFaultProxy {
	p := &ShardFaultProxy{gone: map[string]bool{}, iterShard: map[string]string{}, injected: map[string]int64{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.serve(w, r, strings.TrimRight(target, "/"))
	}))
	tb.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// SetShardGone makes GetShardIterator and GetRecords of shardID answer
// ResourceNotFoundException, as Kinesis does once a closed shard has aged
// past the stream's retention.
func (p *ShardFaultProxy) SetShardGone(shardID string, gone bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gone[shardID] = gone
}

// SetListShardsError makes every ListShards answer the error code errType
// (HTTP 500 for InternalFailure, 400 otherwise); "" lets them through again.
func (p *ShardFaultProxy) SetListShardsError(errType string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.listError = errType
}

// SetStripChildShards removes ChildShards from GetRecords answers: a closed
// shard's last page then carries neither a next iterator nor its children.
func (p *ShardFaultProxy) SetStripChildShards(strip bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stripChildren = strip
}

// Injected is how many answers of operation op the proxy made up.
func (p *ShardFaultProxy) Injected(op string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.injected[op]
}

func (p *ShardFaultProxy) serve(w http.ResponseWriter, r *http.Request, target string) {
	amzTarget := r.Header.Get("X-Amz-Target")
	op := amzTarget[strings.LastIndex(amzTarget, ".")+1:]
	body, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var in struct{ ShardId, ShardIterator string }
	_ = json.Unmarshal(body, &in)

	p.mu.Lock()
	shard := in.ShardId
	if op == "GetRecords" {
		shard = p.iterShard[in.ShardIterator]
	}
	switch {
	case (op == "GetShardIterator" || op == "GetRecords") && shard != "" && p.gone[shard]:
		p.injected[op]++
		p.mu.Unlock()
		kinesisError(w, http.StatusBadRequest, "ResourceNotFoundException", fmt.Sprintf("Shard %s in stream does not exist (injected by the test's shard fault proxy)", shard))
		return
	case op == "ListShards" && p.listError != "":
		errType := p.listError
		p.injected[op]++
		p.mu.Unlock()
		status := http.StatusBadRequest
		if errType == "InternalFailure" {
			status = http.StatusInternalServerError
		}
		kinesisError(w, status, errType, "injected by the test's shard fault proxy")
		return
	}
	strip := p.stripChildren
	p.mu.Unlock()

	req, err := http.NewRequestWithContext(r.Context(), r.Method, target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	if resp.StatusCode == http.StatusOK && (op == "GetShardIterator" || op == "GetRecords") {
		out = p.learn(op, shard, out, strip)
	}
	for k, vs := range resp.Header {
		if strings.EqualFold(k, "Content-Length") || strings.EqualFold(k, "X-Amz-Crc32") {
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(out)
}

// learn remembers which shard the iterators in an answer belong to, and
// removes ChildShards when asked to.
func (p *ShardFaultProxy) learn(op, shard string, out []byte, strip bool) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(out, &m) != nil {
		return out
	}
	iter := func(name string) {
		var s string
		if raw, ok := m[name]; ok && json.Unmarshal(raw, &s) == nil && s != "" && shard != "" {
			p.mu.Lock()
			p.iterShard[s] = shard
			p.mu.Unlock()
		}
	}
	if op == "GetShardIterator" {
		iter("ShardIterator")
		return out
	}
	iter("NextShardIterator")
	if _, ok := m["ChildShards"]; !ok || !strip {
		return out
	}
	delete(m, "ChildShards")
	b, err := json.Marshal(m)
	if err != nil {
		return out
	}
	p.Stripped.Add(1)
	return b
}

func kinesisError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"__type": typ, "message": msg})
	_, _ = w.Write(b)
}
