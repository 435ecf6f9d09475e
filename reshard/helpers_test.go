package reshard

import (
	"bytes"
	"context"
	"github.com/kcltool/kcltool/internal/clock"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
)

func TestMain(m *testing.M) { os.Exit(emulator.Main(m)) }

// scenario is a stream resharded in kinesis-local the way the lineage tests
// need it: two root shards, the low root split in two, and the upper half of
// that split merged with the high root.
//
//	root0      root1
//	/    \       |
//	left right   |
//	       \    /
//	       merged
type scenario struct {
	kin                               *kinesis.Client
	ddb                               *dynamodb.Client
	stream                            string
	table                             string
	root0, root1, left, right, merged string
	// beforeSplit and afterMerge are instants for AT_TIMESTAMP (see
	// newTimedScenario): only the roots were open at the first, only left
	// and merged at the second.
	beforeSplit, afterMerge time.Time
}

func newScenario(t *testing.T) *scenario { return buildScenario(t, 0) }

// newTimedScenario leaves gaps of more than a second around beforeSplit:
// kinesis-local's AT_TIMESTAMP filter works at whole seconds, and returns
// every shard for a time before the stream was created.
func newTimedScenario(t *testing.T) *scenario { return buildScenario(t, 1100*time.Millisecond) }

func buildScenario(t *testing.T, gap time.Duration) *scenario {
	t.Helper()
	st := emulator.NewStreamAndTable(t, 2)
	s := &scenario{kin: st.Kinesis, ddb: st.DynamoDB, stream: st.Stream, table: st.Table}
	roots := s.list(t)
	if len(roots) != 2 {
		t.Fatalf("new stream has %d shards", len(roots))
	}
	s.root0, s.root1 = *roots[0].ShardId, *roots[1].ShardId

	time.Sleep(gap)
	s.beforeSplit = time.Now()
	time.Sleep(gap)
	emulator.SplitShard(t, s.kin, s.stream, s.root0, emulator.MidHashKey(roots[0].HashKeyRange))

	// Merge the adjacent open pair that spans two lineages: found by hash
	// ranges (one ends where the other starts), not by shard id.
	open := s.openShards(t)
	for i := 0; i+1 < len(open); i++ {
		a, b := open[i], open[i+1]
		end, _ := new(big.Int).SetString(*a.HashKeyRange.EndingHashKey, 10)
		start, _ := new(big.Int).SetString(*b.HashKeyRange.StartingHashKey, 10)
		if end.Add(end, big.NewInt(1)).Cmp(start) == 0 && aws.ToString(a.ParentShardId) != aws.ToString(b.ParentShardId) {
			s.right = *a.ShardId
			if *b.ShardId != s.root1 {
				t.Fatalf("adjacent pair %s,%s: expected the high root second", *a.ShardId, *b.ShardId)
			}
		}
	}
	for _, sh := range open {
		if aws.ToString(sh.ParentShardId) == s.root0 && *sh.ShardId != s.right {
			s.left = *sh.ShardId
		}
	}
	if s.left == "" || s.right == "" {
		t.Fatalf("split children not found among %v", ids(open))
	}
	emulator.MergeShards(t, s.kin, s.stream, s.right, s.root1)
	for _, sh := range s.openShards(t) {
		if aws.ToString(sh.ParentShardId) == s.right {
			s.merged = *sh.ShardId
		}
	}
	if s.merged == "" {
		t.Fatal("merge child not found")
	}
	time.Sleep(gap)
	s.afterMerge = time.Now()
	return s
}

// list returns the shards sorted by starting hash key.
func (s *scenario) list(t *testing.T) []types.Shard {
	t.Helper()
	out, err := s.kin.ListShards(context.Background(), &kinesis.ListShardsInput{StreamName: aws.String(s.stream)})
	if err != nil {
		t.Fatal(err)
	}
	sh := out.Shards
	sort.Slice(sh, func(i, j int) bool {
		a, _ := new(big.Int).SetString(*sh[i].HashKeyRange.StartingHashKey, 10)
		b, _ := new(big.Int).SetString(*sh[j].HashKeyRange.StartingHashKey, 10)
		return a.Cmp(b) < 0
	})
	return sh
}

func (s *scenario) openShards(t *testing.T) []types.Shard {
	var open []types.Shard
	for _, sh := range s.list(t) {
		if sh.SequenceNumberRange.EndingSequenceNumber == nil {
			open = append(open, sh)
		}
	}
	return open
}

func (s *scenario) tbl() Table { return Table{Name: s.table} }

func (s *scenario) graph(t *testing.T) *Graph {
	t.Helper()
	shards, err := ListShards(context.Background(), s.kin, Stream{Name: s.stream}, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGraph(shards)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// childShardsAtEnd reads a closed shard to its end with GetRecords and
// returns the ChildShards Kinesis reports there, as a worker sees them.
func (s *scenario) childShardsAtEnd(t *testing.T, shardID string) []types.ChildShard {
	t.Helper()
	ctx := context.Background()
	it, err := s.kin.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(s.stream),
		ShardId: aws.String(shardID), ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	iter := it.ShardIterator
	for range 20 {
		out, err := s.kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter})
		if err != nil {
			t.Fatal(err)
		}
		if out.NextShardIterator == nil {
			return out.ChildShards
		}
		iter = out.NextShardIterator
	}
	t.Fatalf("shard %s did not end", shardID)
	return nil
}

// putLease writes a lease item as another worker (or KCL) would have.
func (s *scenario) putLease(t *testing.T, l leasecore.Lease) {
	t.Helper()
	if _, err := s.ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(s.table),
		Item: leasecore.EncodeLease(l)}); err != nil {
		t.Fatal(err)
	}
}

func (s *scenario) deleteLease(t *testing.T, key string) {
	t.Helper()
	if _, err := s.ddb.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(s.table),
		Key: map[string]ddbtypes.AttributeValue{leasecore.AttrLeaseKey: &ddbtypes.AttributeValueMemberS{Value: key}}}); err != nil {
		t.Fatal(err)
	}
}

// leases reads the whole table back, keyed by lease key.
func (s *scenario) leases(t *testing.T) map[string]leasecore.Lease {
	t.Helper()
	res, err := leasecore.ScanTable(context.Background(), s.ddb, s.table, leasecore.ScanOptions{ConsistentRead: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Malformed) > 0 || len(res.NonLeases) > 0 {
		t.Fatalf("table holds malformed %v / non-lease %v items", res.Malformed, res.NonLeases)
	}
	return ByKey(res.Leases)
}

func ids(shards []types.Shard) []string {
	var out []string
	for _, s := range shards {
		out = append(out, aws.ToString(s.ShardId))
	}
	return out
}

func keys(m map[string]leasecore.Lease) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// faultProxy sits between a client and a local server and answers the first
// n calls of one operation with an AWS error, the way a throttled service
// does. It also records the bodies of that operation's forwarded calls.
type faultProxy struct {
	URL    string
	mu     sync.Mutex
	op     string
	code   string
	left   int
	failed int
	bodies []string
	// rewrite, if set, edits the server's answers to op; rewriteRequest
	// edits the calls before they are forwarded.
	rewrite        func([]byte) []byte
	rewriteRequest func([]byte) []byte
}

func newFaultProxy(t *testing.T, upstream, op, code string, n int) *faultProxy {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{op: op, code: code, left: n}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(resp *http.Response) error {
		if p.rewrite == nil || !strings.HasSuffix(resp.Request.Header.Get("X-Amz-Target"), "."+p.op) {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		body = p.rewrite(body)
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		resp.Header.Del("X-Amz-Crc32") // the checksum covers the original body
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.Header.Get("X-Amz-Target"), "."+p.op) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			p.mu.Lock()
			fail := p.left > 0
			if fail {
				p.left--
				p.failed++
			} else {
				p.bodies = append(p.bodies, string(body))
			}
			p.mu.Unlock()
			if p.rewriteRequest != nil {
				body = p.rewriteRequest(body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				r.ContentLength = int64(len(body))
				r.Header.Set("Content-Length", strconv.Itoa(len(body)))
			}
			if fail {
				w.Header().Set("Content-Type", "application/x-amz-json-1.1")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = io.WriteString(w, `{"__type":"`+p.code+`","message":"Rate exceeded for stream"}`)
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// Bodies returns the recorded bodies and forgets them.
func (p *faultProxy) Bodies() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.bodies
	p.bodies = nil
	return b
}

// failAgain arms n more failures.
func (p *faultProxy) failAgain(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.left = n
}

// noRetryConfig disables the SDK's own retries so that the package's retry
// layer is what the test sees.
func noRetryConfig() aws.Config {
	cfg := emulator.Config()
	cfg.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
	return cfg
}

// instantClock is a clock.Clock whose timers fire at once; it records
// the waits asked of it, so retry tests check the backoff without sleeping.
type instantClock struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (c *instantClock) Now() time.Time { return time.Unix(0, 0) }

func (c *instantClock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- time.Unix(0, 0)
	return firedTimer(ch)
}

func (c *instantClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

type firedTimer chan time.Time

func (f firedTimer) C() <-chan time.Time { return f }
func (f firedTimer) Stop() bool          { return false }
