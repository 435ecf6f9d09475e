package leasecore

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kcltool/kcltool/internal/clock"
	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// A take that is always throttled is tried three times, each failure
// counted as a retry (the third too, before giving up), and nothing is
// taken. The SDK's own retries are off so that each try is one request.
func TestTakeOneTriesThreeTimes(t *testing.T) {
	ddb, table := newLeaseTable(t, 1)
	l, found, err := GetLease(context.Background(), ddb, table, "shardId-000000000000", true)
	if err != nil || !found {
		t.Fatalf("lease: found %v, %v", found, err)
	}
	proxy := newFaultProxy(t, 1, 7)
	api := dynamodb.NewFromConfig(emulator.Config(), func(o *dynamodb.Options) {
		o.BaseEndpoint, o.RetryMaxAttempts = aws.String(proxy.URL), 1
	})
	cfg := fastConfig
	cfg.WorkerID = "a"
	c, err := NewCoordinator(api, table, cfg, clock.RealClock(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	proxy.throttling(true)
	if c.takeOne(context.Background(), l, false) {
		t.Fatal("took a lease through a table that throttles every call")
	}
	if st, n := c.Stats(), proxy.Injected.Load(); st.Retries != 3 || n != 3 || st.Taken != 0 {
		t.Fatalf("retries %d, throttled requests %d, taken %d; want 3, 3, 0", st.Retries, n, st.Taken)
	}
}

// A release that is always throttled is tried nine times (eight retries
// counted), then its error is returned and the lease stays held.
func TestReleaseOneTriesNineTimes(t *testing.T) {
	ddb, table := newLeaseTable(t, 1)
	l, found, err := GetLease(context.Background(), ddb, table, "shardId-000000000000", true)
	if err != nil || !found {
		t.Fatalf("lease: found %v, %v", found, err)
	}
	proxy := newFaultProxy(t, 1, 7)
	api := dynamodb.NewFromConfig(emulator.Config(), func(o *dynamodb.Options) {
		o.BaseEndpoint, o.RetryMaxAttempts = aws.String(proxy.URL), 1
	})
	// A failover time far above the backoff's waits (about 6 s in all), so
	// that the lease does not expire locally while the release retries.
	cfg := Config{WorkerID: "a", FailoverTime: time.Minute}
	c, err := NewCoordinator(api, table, cfg, clock.RealClock(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !c.takeOne(context.Background(), l, false) {
		t.Fatal("could not take the lease")
	}
	hl := c.lookup(l.LeaseKey)
	retriesBefore := c.Stats().Retries
	proxy.throttling(true)
	if err := c.releaseOne(context.Background(), hl); err == nil {
		t.Fatal("released a lease through a table that throttles every call")
	}
	if r, n := c.Stats().Retries-retriesBefore, proxy.Injected.Load(); r != 8 || n != 9 || hl.dropped {
		t.Fatalf("retries %d, throttled requests %d, dropped %v; want 8, 9, false", r, n, hl.dropped)
	}
}
