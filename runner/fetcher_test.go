package runner

import (
	"context"
	"fmt"
	"github.com/kcltool/kcltool/internal/clock"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kcltool/kcltool/internal/testenv/clocktest"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
	"github.com/kcltool/kcltool/leasecore"
	"github.com/kcltool/kcltool/reshard"
	"github.com/kcltool/kcltool/runner/metrics"
	"github.com/kcltool/kcltool/runner/retrieval"
)

// callClock records, on the test's clock, when each GetRecords call went out.
type callClock struct {
	KinesisAPI
	clock clock.Clock
	mu    sync.Mutex
	at    []time.Time
}

func (c *callClock) GetRecords(ctx context.Context, in *kinesis.GetRecordsInput, opts ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error) {
	c.mu.Lock()
	c.at = append(c.at, c.clock.Now())
	c.mu.Unlock()
	return c.KinesisAPI.GetRecords(ctx, in, opts...)
}

// The reader reads again at once while it gets full pages, but never more
// than five times a second, and idles once it has caught up. Time is the
// step clock's: the calls go to kinesis-local for real, the waits cost
// nothing, and the spacing is exact.
func TestFetcherPacing(t *testing.T) {
	s := newStack(t, 1)
	for round := range 3 {
		s.put(t, func(k string) string { return fmt.Sprintf("%s:%d", k, round) }, keys("p", 15)...)
	}
	clk := clocktest.NewStep(time.Unix(1_700_000_000, 0))
	api := &callClock{KinesisAPI: s.kin, clock: clk}
	cfg := retrieval.PollingConfig{MaxRecords: 10, Clock: clk}
	f := retrieval.NewFetcher(api, reshard.Stream{Name: s.stream}, "shardId-000000000000", leasecore.SequenceNumber{SequenceNumber: leasecore.TRIM_HORIZON},
		cfg, leasecore.HashRange{}, metrics.New().Shard("shardId-000000000000"), slog.New(slog.DiscardHandler))
	ctx := context.Background()
	var sizes []int
	for range 8 {
		p, err := f.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(p.Records))
		if err := clock.Sleep(ctx, clk, f.Pause(p, time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(sizes) != "[10 10 10 10 5 0 0 0]" {
		t.Fatalf("page sizes %v, want four full pages of 10, the last 5, then empty reads at the tip", sizes)
	}
	var gaps []time.Duration
	for i := 1; i < len(api.at); i++ {
		gaps = append(gaps, api.at[i].Sub(api.at[i-1]))
	}
	want := []time.Duration{200 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond, time.Second, time.Second, time.Second}
	if fmt.Sprint(gaps) != fmt.Sprint(want) {
		t.Fatalf("gaps between GetRecords calls %v, want %v: at once (but 5/s at most) while pages are full, the idle time at the tip", gaps, want)
	}
}

// kinesisFaults sits in front of kinesis-local and answers some GetRecords
// calls with ExpiredIteratorException or a throttle instead of forwarding.
type kinesisFaults struct {
	URL       string
	n         atomic.Int64
	expired   atomic.Int64
	throttled atomic.Int64
}

func newKinesisFaults(t *testing.T, expireEvery, throttleEvery int64) *kinesisFaults {
	u, err := url.Parse(emulator.KinesisEndpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	f := &kinesisFaults{}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".GetRecords") {
			n := f.n.Add(1)
			code := ""
			switch {
			case n%expireEvery == expireEvery/2:
				code = "ExpiredIteratorException"
				f.expired.Add(1)
			case n%throttleEvery == 1:
				code = "ProvisionedThroughputExceededException"
				f.throttled.Add(1)
			}
			if code != "" {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/x-amz-json-1.1")
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"__type":"%s","message":"injected by the test"}`, code)
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// Expired iterators resume right after the last record received and
// throttled reads back off and retry: every record is handled exactly once,
// in order. A second worker then restarts from the numeric checkpoint
// (AT_SEQUENCE_NUMBER) and drops the checkpointed record itself, as KCL
// does: again nothing twice.
func TestWorkerSurvivesExpiredIteratorsAndThrottlingAndRestartsAtCheckpoint(t *testing.T) {
	s := newStack(t, 2)
	faults := newKinesisFaults(t, 5, 3)
	s.kin = kinesis.NewFromConfig(emulator.Config(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(faults.URL) })
	out := outFile(t)
	put := func(from, to int) {
		for round := from; round < to; round++ {
			s.put(t, func(k string) string { return fmt.Sprintf("%s:%d", k, round) }, keys("k", 20)...)
		}
	}
	put(0, 3)
	cfg := s.config(t, "w1", out)
	cfg.BatchSize = 7
	cfg.Metrics = metrics.New()
	r := start(t, s, cfg)
	put(3, 6)
	eventually(t, 30*time.Second, "120 records", func() bool { return len(readHandled(t, out)) >= 120 })
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnceInOrder(t, readHandled(t, out), 20, 6)
	if faults.expired.Load() == 0 || faults.throttled.Load() == 0 {
		t.Fatalf("the proxy injected %d expiries and %d throttles; the test needs both", faults.expired.Load(), faults.throttled.Load())
	}
	var throttled int64
	for _, sh := range []string{"shardId-000000000000", "shardId-000000000001"} {
		c, _ := cfg.Metrics.Counts(sh)
		throttled += c.Throttled
	}
	if throttled == 0 {
		t.Error("no throttled GetRecords counted in the metrics")
	}

	put(6, 8)
	cfg2 := s.config(t, "w2", out)
	r2 := start(t, s, cfg2)
	eventually(t, 30*time.Second, "160 records", func() bool { return len(readHandled(t, out)) >= 160 })
	if err := r2.stop(t); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnceInOrder(t, readHandled(t, out), 20, 8)
}

// checkExactlyOnceInOrder checks records "key:round" of keys×rounds: each
// once, and each key's rounds in order.
func checkExactlyOnceInOrder(t *testing.T, got []handled, nkeys, rounds int) {
	t.Helper()
	next := map[string]int{}
	for _, h := range got {
		key, round, ok := strings.Cut(h.text(), ":")
		if !ok {
			t.Fatalf("record %q", h.text())
		}
		if want := fmt.Sprint(next[key]); round != want {
			t.Fatalf("key %s: handled round %s, want %s (a record was lost, repeated or reordered)", key, round, want)
		}
		next[key]++
	}
	if len(got) != nkeys*rounds || len(next) != nkeys {
		t.Fatalf("handled %d records of %d keys, want %d of %d", len(got), len(next), nkeys*rounds, nkeys)
	}
}
